"""The engine's torch quantizers and GPU-side packing give the same bits as the numpy ones the
GEMV workload and the quality experiments use (runs on the CPU where torch is installed)."""

import numpy as np
import pytest

from autosched import layouts
from autosched.models.quantize import quantize_int8, quantize_q4f16_1

torch = pytest.importorskip("torch")
from autosched.engine import weights as ew  # noqa: E402


def test_torch_quantizers_match_numpy():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((48, 256)).astype(np.float32)
    w[5] = 0.0                                # a zero row: scale 0, every value the bias
    q_np, s_np = quantize_q4f16_1(w)
    q_t, s_t = ew.quantize_q4f16_1(torch.from_numpy(w))
    assert np.array_equal(q_t.numpy().view(np.uint32), q_np) and np.array_equal(s_t.numpy(), s_np)
    i_np, si_np = quantize_int8(w)
    i_t, si_t = ew.quantize_int8(torch.from_numpy(w))
    assert np.array_equal(i_t.numpy(), i_np) and np.array_equal(si_t.numpy(), si_np)


@pytest.mark.parametrize("nibbles, n, k", [("k", 8, 4), ("rows", 2, 1), ("natural", 1, 1), ("k", 64, 1)])
def test_torch_layouts_match_numpy(nibbles, n, k):
    rng = np.random.default_rng(4)
    words = rng.integers(0, 2**32, size=(128, 64), dtype=np.uint64).astype(np.uint32)
    params = {"nibbles": nibbles, "n": n, "k": k}
    want = layouts.apply("q4_words", params, words)
    got = layouts.apply("q4_words", params, torch.from_numpy(words.view(np.int32)))
    assert np.array_equal(got.numpy().view(np.uint32), want)


def test_fused_matrices_and_random_weights():
    from autosched.models.llama2c import LlamaConfig
    cfg = LlamaConfig(64, 96, 2, 4, 2, 50, 16, shared_classifier=False)
    w = ew.random_weights_torch(cfg, 1, "cpu")
    assert {k: tuple(v.shape) for k, v in w.items()} == cfg.shapes()
    f = ew.fused(lambda name: w[name][1])
    assert f["qkv"].shape == (64 + 2 * 32, 64) and torch.equal(f["qkv"][64:96], w["wk"][1])
    assert f["gate_up"].shape == (192, 64) and torch.equal(f["gate_up"][96:], w["w3"][1])
    assert ew.classifier(w) is w["wcls"]
    # the fused step's layout: norm weights folded into the columns, gate and up rows interleaved
    g = ew.fused(lambda name: w[name][1], w["rms_att"][1], w["rms_ffn"][1])
    assert torch.equal(g["qkv"], f["qkv"] * w["rms_att"][1][None, :]) and torch.equal(g["o"], f["o"])
    assert torch.equal(g["gate_up"][0::2], w["w1"][1] * w["rms_ffn"][1][None, :])
    assert torch.equal(g["gate_up"][1::2], w["w3"][1] * w["rms_ffn"][1][None, :])
    with pytest.raises(ValueError, match="unknown weight format"):
        ew.check_format("q3")


def test_add_layer_copies_packs_once_and_clones(h100):
    """Timing runs' layers: the matrix packed once, the other layers equal copies in their own memory."""
    from autosched.engine.matmul import Matmul
    m = Matmul("o", "fp16", 8, 16, "half", "half", h100)
    w = torch.randn(8, 16)
    m.add_layer_copies(w, 3)
    assert len(m.layers) == 3
    for layer in m.layers:
        assert torch.equal(layer["w"], w.to(torch.float16))
    assert len({layer["w"].data_ptr() for layer in m.layers}) == 3


def test_step_matrices_walk_the_layers_in_the_engines_layout():
    """The one walk over a model's matmuls the per-kernel step and the dataflow step both pack from:
    fused per layer, the classifier (times the final norm) last, only the names asked for."""
    from autosched.engine.weights import as_torch, classifier, fused, step_matrices
    from autosched.models.llama2c import LlamaConfig, random_weights
    cfg = LlamaConfig(64, 128, 3, 4, 2, 50, 16, shared_classifier=False)
    w = random_weights(cfg, 1)
    got = list(step_matrices(w, cfg, "cpu"))
    assert [layer for layer, _ in got] == [0, 1, 2, None]
    for layer, mats in got[:3]:
        ref = fused(lambda n: as_torch(w[n][layer], "cpu"), as_torch(w["rms_att"], "cpu")[layer],
                    as_torch(w["rms_ffn"], "cpu")[layer])
        assert list(mats) == ["qkv", "o", "gate_up", "down"] and all(torch.equal(mats[k], ref[k]) for k in mats)
    assert torch.equal(got[3][1]["cls"], as_torch(classifier(w), "cpu") * as_torch(w["rms_final"], "cpu")[None, :])
    assert [list(m) for _, m in step_matrices(w, cfg, "cpu", ["o"])] == [["o"]] * 3
    only_cls = list(step_matrices(w, cfg, "cpu", ["cls"]))
    assert [m for _, m in only_cls[:3]] == [{}, {}, {}] and list(only_cls[3][1]) == ["cls"]
