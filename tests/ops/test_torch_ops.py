"""autosched's ops as torch custom ops and autosched.patch, on the CPU (their reference path): the
ops pass torch.library.opcheck, trace under torch.compile(fullgraph=True), and a patched Llama-shaped
model (HF names: model.layers[i].self_attn.q_proj, ...) computes what the unpatched one computes
with the same weights.  The GPU path (the tuned GEMV and DietCode's dispatcher) is
tests/gpu/test_torch_ops_gpu.py."""

import pytest

torch = pytest.importorskip("torch")

from autosched.engine.weights import quantize_q4f16_1  # noqa: E402
from autosched.models.quantize import dequantize_q4f16_1  # noqa: E402
from autosched.ops import torch_ops  # noqa: E402
from autosched.ops.patching import AutoschedLinear, patch  # noqa: E402


def _q4(n=64, k=256, seed=0):
    g = torch.Generator().manual_seed(seed)
    return quantize_q4f16_1(torch.randn(n, k, generator=g))


def test_dequantize_is_the_numpy_reference():
    words, scales = _q4()
    ref = dequantize_q4f16_1(words.numpy().view("uint32"), scales.numpy())
    assert (torch_ops.dequantize(words, scales).numpy() == ref).all()


def test_both_ops_pass_opcheck():
    words, scales = _q4()
    empty = torch.empty(0, dtype=torch.int32)
    for x in (torch.randn(1, 256).half(), torch.randn(2, 3, 256).half()):
        torch.library.opcheck(torch.ops.autosched.q4f16_linear.default, (x, words, scales, empty, empty, -1))
        torch.library.opcheck(torch.ops.autosched.linear.default, (x, torch.randn(64, 256).half()))


def test_q4_op_computes_x_times_the_dequantized_weights():
    words, scales = _q4()
    x = torch.randn(5, 256).half()
    empty = torch.empty(0, dtype=torch.int32)
    y = torch.ops.autosched.q4f16_linear(x, words, scales, empty, empty, -1)
    ref = x.double() @ torch_ops.dequantize(words, scales).double().T
    assert y.shape == (5, 64) and y.dtype == torch.float16
    assert float((y.double() - ref).abs().max() / ref.abs().max()) < 2e-3


def test_ops_trace_under_compile_fullgraph():
    words, scales = _q4()
    w = torch.randn(64, 256).half()
    empty = torch.empty(0, dtype=torch.int32)

    def f(x):
        return torch.ops.autosched.linear(torch.ops.autosched.q4f16_linear(x, words, scales, empty, empty, -1)
                                          .repeat(1, 4), w)
    x = torch.randn(2, 256).half()
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(x), f(x))


class _Attn(torch.nn.Module):
    def __init__(self, d, kv):
        super().__init__()
        self.q_proj, self.k_proj = torch.nn.Linear(d, d, bias=False), torch.nn.Linear(d, kv, bias=False)
        self.v_proj, self.o_proj = torch.nn.Linear(d, kv, bias=False), torch.nn.Linear(d, d, bias=False)


class _Mlp(torch.nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.gate_proj, self.up_proj = torch.nn.Linear(d, h, bias=False), torch.nn.Linear(d, h, bias=False)
        self.down_proj = torch.nn.Linear(h, d, bias=False)


class _Layer(torch.nn.Module):
    def __init__(self, d, kv, h):
        super().__init__()
        self.self_attn, self.mlp = _Attn(d, kv), _Mlp(d, h)

    def forward(self, x):      # not a transformer: every projection on the path, in HF's names
        a = self.self_attn
        x = x + a.o_proj(a.q_proj(x) + a.k_proj(x).repeat(1, 2) * a.v_proj(x).repeat(1, 2))
        m = self.mlp
        return x + m.down_proj(torch.nn.functional.silu(m.gate_proj(x)) * m.up_proj(x))


class _Model(torch.nn.Module):
    def __init__(self, d=128, kv=64, h=256, layers=2, vocab=96):
        super().__init__()
        self.layers = torch.nn.ModuleList(_Layer(d, kv, h) for _ in range(layers))
        self.lm_head = torch.nn.Linear(d, vocab, bias=False)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(x)


def _model():
    torch.manual_seed(0)
    return _Model().half()


def test_patch_fp16_replaces_every_projection_and_keeps_the_outputs():
    ref, model = _model(), _model()
    report = patch(model, "fp16")
    assert len(report.layers) == 2 * 7 and isinstance(model.layers[1].mlp.down_proj, AutoschedLinear)
    assert isinstance(model.lm_head, torch.nn.Linear) and not isinstance(model.lm_head, AutoschedLinear)
    assert set(report.shapes) == {(128, 128), (64, 128), (256, 128), (128, 256)}
    x = torch.randn(3, 128).half()
    with torch.no_grad():
        a, b = ref(x).double(), model(x).double()
    assert float((a - b).abs().max() / a.abs().max()) < 1e-2
    assert "tune-dynamic" in str(report)


def test_patch_q4_matches_the_dequantized_model_and_compiles():
    model, deq = _model(), _model()
    for layer in deq.layers:                 # the same model with each projection's weights dequantized
        for mod in (*layer.self_attn.children(), *layer.mlp.children()):
            mod.weight.data = torch_ops.dequantize(*quantize_q4f16_1(mod.weight.data)).half()
    report = patch(model, "q4f16_1", lm_head=True)
    assert isinstance(model.lm_head, AutoschedLinear) and len(report.layers) == 15
    assert report.untuned == []           # on the CPU nothing is served a config, so nothing is untuned
    assert report.command.split(" && ") == [f"autosched tune gemv-q4f16 --shape {n}x{k}" for n, k in report.shapes]
    x = torch.randn(2, 128).half()
    a = deq.lm_head.weight.data.double()
    ref = (deq.layers[1](deq.layers[0](x)).double() @ torch_ops.dequantize(
        *quantize_q4f16_1(a.float())).double().T)
    with torch.no_grad():
        got = model(x).double()
    assert float((got - ref).abs().max() / ref.abs().max()) < 2e-2
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(x), model(x))


def test_patch_refuses_what_it_cannot_serve():
    with pytest.raises(ValueError, match="no nn.Linear named"):
        patch(torch.nn.Sequential(torch.nn.Linear(8, 8)))
    with pytest.raises(ValueError, match="quant="):
        patch(_model(), "int3")
    odd = torch.nn.Module()
    odd.q_proj = torch.nn.Linear(48, 16)
    with pytest.raises(ValueError, match="q_proj: q4f16_1 needs in_features to be a multiple of 32"):
        patch(odd, "q4f16_1")
