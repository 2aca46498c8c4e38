"""Weight quantization: error bounds per format, the q4 layout the GEMV kernel reads, and the
quality ordering on a reference model (KL of logits vs fp32 grows as bits shrink)."""

import numpy as np
import pytest

from autosched.models.llama2c import LlamaConfig, random_weights
from autosched.models.quantize import FORMATS, quantize_int8, quantize_q4f16_1, quantized_model, roundtrip
from autosched.models.reference import ReferenceDecoder
from autosched.workloads import GemvQ4F16


def test_q4f16_1_is_the_gemv_workload_format_and_within_half_a_step():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 256)).astype(np.float32)
    a_q, scale = quantize_q4f16_1(w)
    assert a_q.dtype == np.uint32 and a_q.shape == (64, 32) and scale.dtype == np.float16 and scale.shape == (64, 8)
    deq = roundtrip(w, "q4f16_1")
    step = np.repeat(scale.astype(np.float32), 32, axis=1)
    assert np.all(np.abs(deq - w) <= step * 0.5 + 1e-3 * np.abs(w))     # fp16 scale rounding aside
    # the GEMV workload's reference over these buffers is exactly the dequantized matrix times V
    g = GemvQ4F16(64, 256)
    v = rng.standard_normal(256).astype(np.float16)
    ref = g.reference({"A_q": a_q, "A_scale": scale, "V": v})
    np.testing.assert_allclose(ref, deq.astype(np.float64) @ v.astype(np.float64), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="multiple of 32"):
        quantize_q4f16_1(w[:, :40])


def test_int8_and_zero_rows():
    w = np.zeros((3, 64), dtype=np.float32)
    w[1] = np.linspace(-2, 2, 64)
    q, s = quantize_int8(w)
    assert q.dtype == np.int8 and np.all(q[0] == 0) and np.abs(q[1]).max() == 127
    assert np.all(np.isfinite(roundtrip(w, "q4f16_1"))) and np.all(roundtrip(w, "q4f16_1")[0] == 0)
    with pytest.raises(ValueError, match="unknown weight format"):
        roundtrip(w, "q3")


def test_quality_falls_with_bits():
    cfg = LlamaConfig(dim=64, hidden_dim=128, n_layers=2, n_heads=4, n_kv_heads=4, vocab_size=96, seq_len=24)
    w = random_weights(cfg, 1)
    tokens = list(np.random.default_rng(2).integers(0, 96, 20))

    def logprobs(weights):
        dec = ReferenceDecoder(cfg, weights)
        out = np.stack([dec.step(int(t)) for t in tokens])
        m = out.max(-1, keepdims=True)
        return out - m - np.log(np.exp(out - m).sum(-1, keepdims=True))      # log softmax

    base = logprobs(w)
    kl = {}
    for fmt in FORMATS:
        lp = logprobs(quantized_model(w, fmt))
        kl[fmt] = float(np.mean(np.sum(np.exp(base) * (base - lp), axis=-1)))
    assert kl["fp32"] < 1e-12
    assert kl["fp32"] < kl["fp16"] < kl["int8"] < kl["q4f16_1"], kl
