"""The batched prefill's host side on the CPU: the dequant kernel's index arithmetic (its numpy twin)
inverts every q4f16_1 layout the GEMV configs pack, the scratch plan, the kernels compiling for
sm_90 without spills at the test models' and Llama-2-7B's head sizes, and describe's text."""

import numpy as np
import pytest

from autosched import layouts
from autosched.build import BuildCache, Builder
from autosched.engine.prefill import (PREFILL_FORMATS, STEPWISE_UP_TO, BatchedPrefill, dequant_q4_host,
                                      scratch_bytes, scratch_shapes)
from autosched.models.llama2c import LlamaConfig
from autosched.templates import prefill as pk
from autosched.workloads import GemvQ4F16

GQA = LlamaConfig(dim=128, hidden_dim=352, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=512, seq_len=512)
STORIES15M = LlamaConfig(dim=288, hidden_dim=768, n_layers=6, n_heads=6, n_kv_heads=6, vocab_size=32000, seq_len=256)
LLAMA7B = LlamaConfig(dim=4096, hidden_dim=11008, n_layers=32, n_heads=32, n_kv_heads=32, vocab_size=32000,
                      seq_len=4096)


@pytest.mark.parametrize("nibbles", ["natural", "k", "rows"])
@pytest.mark.parametrize("ln, lk", [(1, 1), (2, 4), (8, 2), (4, 8)])
def test_dequant_index_arithmetic_inverts_every_layout(nibbles, ln, lk):
    w = GemvQ4F16(16, 256)
    x = w.inputs(seed=3)
    a_q = layouts.apply("q4_words", {"n": ln, "k": lk, "nibbles": nibbles}, x["A_q"])
    a_s = layouts.apply("q4_scales", {"n": ln}, x["A_scale"])
    got = dequant_q4_host(a_q, a_s, 16, 256, pk.NIBBLE_CODES[nibbles], ln, lk)
    want = w.dequantize(x["A_q"], x["A_scale"])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * np.abs(want).max())


def test_q4_layout_is_read_from_the_served_gemv_spec(h100):
    from autosched.engine.matmul import Matmul
    m = Matmul("gate_up", "q4f16_1", 22016, 4096, "half", "half", h100, epilogue="norm_swiglu")
    nib, ln, lk = pk.q4_layout(m.spec)
    a = next(a for a in m.spec.args if a.name == "A_q").params()
    assert (nib, ln, lk) == (pk.NIBBLE_CODES[a["nibbles"]], a["n"], a["k"])


def test_scratch_plan_for_a_7b_prompt_of_2048():
    sh = scratch_shapes(LLAMA7B, 2048, "q4f16_1")
    assert sh["qkv"] == ((2048, 12288), "float16") and sh["gu"] == ((2048, 22016), "float16")
    assert sh["logits"] == ((1, 32000), "float16") and sh["x"] == ((2048, 4096), "float32")
    assert sh["w16"] == ((32000 * 4096,), "float16")             # the largest matrix: the classifier
    assert "w16" not in scratch_shapes(LLAMA7B, 2048, "fp16")
    mb = scratch_bytes(LLAMA7B, 2048, "q4f16_1") / 2 ** 20
    assert 500 < mb < 700                                           # fits beside a 7B model on any 80 GB GPU
    assert scratch_bytes(LLAMA7B, 2048, "fp16", all_logits=True) - scratch_bytes(LLAMA7B, 2048, "fp16") \
        == 2 * 32000 * 2047


def test_attention_smem_and_refusals(h100):
    assert pk.attention_smem_bytes(128) == 4 * (96 * 132 + 32 * 128 + 64 * 36) <= h100.smem_per_block_optin
    assert pk.attention_grid(300, 6) == (5, 6, 1) and pk.attention_grid(1, 4) == (1, 4, 1)
    with pytest.raises(ValueError, match="multiple of 16"):
        pk.attention_spec(40, "sm_90")
    with pytest.raises(ValueError, match="serves fp16, int8, q4f16_1, not fp32"):
        BatchedPrefill(GQA, "fp32", h100)
    assert pk.elementwise_grid(10, 132) == (1, 1, 1) and pk.elementwise_grid(10 ** 9, 132) == (16 * 8 * 132, 1, 1)


@pytest.mark.parametrize("cfg", [GQA, STORIES15M, LLAMA7B], ids=["gqa", "stories15M", "llama7b"])
def test_prefill_kernels_compile_without_spills(h100, cfg, tmp_path):
    specs = [s for fmt in ("q4f16_1", "int8") for s in BatchedPrefill(cfg, fmt, h100).specs.values()]
    every = BatchedPrefill(cfg, "fp16", h100).all_specs()
    assert len({s.source_hash for s in every}) == len(every)          # each kernel built once
    specs = list({s.source_hash: s for s in specs + every}.values())
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        for spec, binary in zip(specs, b.build_many(specs)):
            assert binary.ok, (spec.name_expression, binary.error)
            assert binary.resources.spills == 0, (spec.name_expression, binary.resources)


def test_describe_says_how_each_matmul_is_served(h100, tmp_path, monkeypatch):
    p = BatchedPrefill(STORIES15M, "q4f16_1", h100, db_path=tmp_path / "none.db")
    text = p.describe()
    assert text[0] == "prefill (batched, q4f16_1 dequantized per layer into an fp16 scratch; stepwise up to 4 tokens):"
    assert [t.split()[0] for t in text[1:]] == ["qkv", "o", "gate_up", "down", "cls"]
    assert "qkv 864x288 fp16 GEMM: default hgemm_wgmma (wgmma) configs by M (M<=256 wgmma 64x64" in text[1]
    # wgmma off (the environment's switch): hgemm_dyn, whose ladder's first two rungs cover a 256-token context
    monkeypatch.setenv("AUTOSCHED_WGMMA_IN_AUTO", "0")
    p = BatchedPrefill(STORIES15M, "q4f16_1", h100, db_path=tmp_path / "none.db")
    assert "qkv 864x288 fp16 GEMM: default hgemm_dyn (mma) configs by M" in p.describe()[1]
    assert all(len(g.configs) == 2 for g in p.gemm.values())
    assert set(STEPWISE_UP_TO) == set(PREFILL_FORMATS)
