"""On a GPU: torch.ops.autosched.* on CUDA tensors (the GEMV selection.rank serves at one row, the
dequantized weights through DietCode's dispatcher at more, the fp16 linear) against their CPU
reference; opcheck on CUDA; a CUDA graph of the q4 op; and autosched.patch of a transformers
LlamaForCausalLM: the fp16-patched model's greedy tokens equal the unpatched model's."""

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


def _q4(n, k, seed=0):
    from autosched.engine.weights import quantize_q4f16_1
    g = torch.Generator().manual_seed(seed)
    return quantize_q4f16_1(torch.randn(n, k, generator=g).cuda())


def _rel(a, b):
    a, b = a.double().cpu(), b.double().cpu()
    return float((a - b).abs().max() / a.abs().max())


@pytest.mark.parametrize("rows", [1, 4])
def test_q4_op_on_cuda_matches_the_reference(rows):
    from autosched.ops import torch_ops
    n, k = 2048, 4096
    words, scales = _q4(n, k)
    kid, kernel = torch_ops.q4_kernel(0, n, k)
    pq, ps = kernel.pack(words, scales)
    x = torch.randn(rows, k, device="cuda").half()
    y = torch.ops.autosched.q4f16_linear(x, words, scales, pq, ps, kid)
    ref = x.double() @ torch_ops.dequantize(words, scales).double().T
    assert _rel(ref, y) < 2e-2
    torch.library.opcheck(torch.ops.autosched.q4f16_linear.default, (x, words, scales, pq, ps, kid))


def test_fp16_linear_op_on_cuda():
    x = torch.randn(64, 4096, device="cuda").half()
    w = torch.randn(1024, 4096, device="cuda").half()
    y = torch.ops.autosched.linear(x, w)
    assert _rel(x.double() @ w.double().T, y) < 5e-3
    torch.library.opcheck(torch.ops.autosched.linear.default, (x, w))


def test_q4_op_in_a_cuda_graph():
    from autosched.ops import torch_ops
    words, scales = _q4(4096, 4096, 1)
    kid, kernel = torch_ops.q4_kernel(0, 4096, 4096)
    pq, ps = kernel.pack(words, scales)
    x = torch.randn(1, 4096, device="cuda").half()
    eager = torch.ops.autosched.q4f16_linear(x, words, scales, pq, ps, kid)
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.ops.autosched.q4f16_linear(x, words, scales, pq, ps, kid)     # warm on the side stream
        with torch.cuda.graph(g, stream=s):
            y = torch.ops.autosched.q4f16_linear(x, words, scales, pq, ps, kid)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, eager)


def test_patched_llama_greedy_tokens_equal_the_unpatched():
    transformers = pytest.importorskip("transformers")
    import autosched
    cfg = transformers.LlamaConfig(hidden_size=512, intermediate_size=1536, num_hidden_layers=2,
                                   num_attention_heads=8, num_key_value_heads=2, vocab_size=1000)
    torch.manual_seed(0)
    ref = transformers.LlamaForCausalLM(cfg).half().cuda().eval()
    model = transformers.LlamaForCausalLM(cfg).half().cuda().eval()
    model.load_state_dict(ref.state_dict())
    report = autosched.patch(model, "fp16")
    assert len(report.layers) == 2 * 7
    ids = torch.tensor([[1, 5, 9]], device="cuda")
    with torch.no_grad():
        a = ref.generate(ids, max_new_tokens=32, do_sample=False)
        b = model.generate(ids, max_new_tokens=32, do_sample=False)
    assert torch.equal(a, b)
