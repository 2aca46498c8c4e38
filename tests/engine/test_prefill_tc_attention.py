"""The tensor-core prefill attention on the CPU: every served (head size, query tile) compiles for sm_90a
without spills, the Python rule (templates/prefill.py) refuses exactly what the kernel's static_asserts
refuse, and the switch (engine/prefill.py TC_ATTENTION_VERIFIED, AUTOSCHED_PREFILL_TC_ATTN): off, the
batched prefill's kernels and describe() are the CUDA-core ones; on, the tensor-core kernel serves the
head sizes it can and the CUDA-core one the rest."""

import dataclasses

import pytest

from autosched.build import BuildCache, Builder
from autosched.engine import prefill as ep
from autosched.engine.prefill import BatchedPrefill
from autosched.models.llama2c import LlamaConfig
from autosched.templates import prefill as pk

SWITCH = "AUTOSCHED_PREFILL_TC_ATTN"
GQA = LlamaConfig(dim=128, hidden_dim=352, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=512, seq_len=512)
STORIES15M = LlamaConfig(dim=288, hidden_dim=768, n_layers=6, n_heads=6, n_kv_heads=6, vocab_size=32000, seq_len=256)
LLAMA7B = LlamaConfig(dim=4096, hidden_dim=11008, n_layers=32, n_heads=32, n_kv_heads=32, vocab_size=32000,
                      seq_len=4096)
HS80 = LlamaConfig(dim=320, hidden_dim=352, n_layers=1, n_heads=4, n_kv_heads=2, vocab_size=512, seq_len=256)


@pytest.fixture(scope="module")
def builder(tmp_path_factory):
    with Builder(workers=2, cache=BuildCache(tmp_path_factory.mktemp("cache"))) as b:
        yield b


def test_every_served_kernel_compiles_for_sm90a_without_spills(builder, h100):
    specs = [pk.tc_attention_spec(hs, "sm_90a", bq) for hs in pk.TC_HEAD_SIZES for bq in pk.TC_BQS]
    for spec, binary in zip(specs, builder.build_many(specs)):
        assert binary.ok, (spec.name_expression, binary.error)
        assert binary.resources.spills == 0, (spec.name_expression, binary.resources)
        assert spec.smem_bytes <= h100.smem_per_block_optin and spec.threads == spec.block[0]
    # 7B's kernel: Q + two K and two V tiles of 136-half rows; 8 warps at BQ 128
    assert pk.tc_attention_smem_bytes(128, 128) == 2 * 136 * (128 + 4 * 64) == 104448
    assert pk.tc_attention_threads(128) == 256 and pk.tc_attention_threads(64) == 128


def test_the_python_rule_agrees_with_the_static_asserts(builder):
    """Head sizes 16..160 and tiles 32, 64, 128 compiled behind the rule's back (the spec made by hand):
    NVRTC accepts exactly what tc_attention_refuses accepts."""
    cases = [(hs, bq) for hs in range(16, 161, 16) for bq in (32, 64, 128)] + [(40, 64), (72, 128)]
    specs = [pk._spec("prefill_attention_tc", f"prefill_attention_tc<{hs}, {bq}>", "sm_90a",
                      pk.tc_attention_threads(bq), pk.tc_attention_smem_bytes(hs, bq), header=pk.TC_HEADER)
             for hs, bq in cases]
    for (hs, bq), binary in zip(cases, builder.build_many(specs)):
        refused = pk.tc_attention_refuses(hs, bq)
        assert binary.ok == (refused is None), (hs, bq, refused, binary.error[-400:] if binary.error else "")
        if refused:
            assert "static assert" in binary.error or "static_assert" in binary.error, binary.error[-400:]
            with pytest.raises(ValueError, match="tensor-core attention"):
                pk.tc_attention_spec(hs, "sm_90a", bq)


def test_query_tile_rule():
    # 7B (32 heads) on 132 SMs: 512 tokens -> 4 x 32 = 128 blocks of 128 rows, too few: 64; 2048 -> 128
    assert pk.tc_attention_bq(512, 32, 132) == 64 and pk.tc_attention_bq(2048, 32, 132) == 128
    assert pk.tc_attention_bq(1, 4, 132) == 64
    assert pk.attention_grid(300, 6, 128) == (3, 6, 1) and pk.attention_grid(300, 6, 64) == (5, 6, 1)


@pytest.mark.parametrize("cfg", [GQA, STORIES15M, LLAMA7B, HS80], ids=["gqa", "stories15M", "llama7b", "hs80"])
def test_switch_off_leaves_the_kernels_and_describe_as_they_were(h100, cfg, tmp_path, monkeypatch):
    db = tmp_path / "none.db"
    monkeypatch.delenv(SWITCH, raising=False)
    monkeypatch.setattr(ep, "TC_ATTENTION_VERIFIED", False)
    off = BatchedPrefill(cfg, "fp16", h100, db_path=db)
    monkeypatch.setenv(SWITCH, "0")
    monkeypatch.setattr(ep, "TC_ATTENTION_VERIFIED", True)      # the environment wins over the constant
    off_env = BatchedPrefill(cfg, "fp16", h100, db_path=db)
    for p in (off, off_env):
        assert list(p.specs) == ["embed", "add_norm", "swiglu", "rope_kv", "attn"]
        assert p.specs["attn"].name_expression == f"prefill_attention<{cfg.head_size}, 64, 32, 256>"
        assert not p.tc_attention and p.attention_kernel(2048) == ("attn", pk.ATTENTION_BQ)
        assert [s.source_hash for s in p.all_specs()] == [s.source_hash for s in off.all_specs()]
        assert p.describe() == off.describe()
        assert len(p.describe()) == 1 + 5 and not any("attention" in line for line in p.describe())


@pytest.mark.parametrize("cfg", [GQA, STORIES15M, LLAMA7B], ids=["gqa", "stories15M", "llama7b"])
def test_switch_on_picks_the_tensor_core_kernel_where_it_serves(h100, cfg, tmp_path, monkeypatch):
    monkeypatch.setenv(SWITCH, "1")
    p = BatchedPrefill(cfg, "fp16", h100, db_path=tmp_path / "none.db")
    assert p.tc_attention and "attn" not in p.specs
    assert [p.specs[f"attn_tc{bq}"].name_expression for bq in pk.TC_BQS] == \
        [f"prefill_attention_tc<{cfg.head_size}, {bq}>" for bq in pk.TC_BQS]
    assert p.describe()[-1].startswith(f"  attention prefill_attention_tc<{cfg.head_size}, BQ> (tensor cores")
    assert p.attention_kernel(1) == ("attn_tc64", 64)
    p.tc_bq = 128
    assert p.attention_kernel(1) == ("attn_tc128", 128)
    if cfg is LLAMA7B:
        p.tc_bq = None
        assert p.attention_kernel(512) == ("attn_tc64", 64) and p.attention_kernel(2048) == ("attn_tc128", 128)
    # the constant alone switches it on too (what flipping TC_ATTENTION_VERIFIED does)
    monkeypatch.delenv(SWITCH)
    monkeypatch.setattr(ep, "TC_ATTENTION_VERIFIED", True)
    assert BatchedPrefill(cfg, "fp16", h100, db_path=tmp_path / "none.db").tc_attention


def test_switch_on_keeps_the_cuda_core_kernel_where_the_new_one_refuses(h100, tmp_path, monkeypatch):
    monkeypatch.setenv(SWITCH, "1")
    p = BatchedPrefill(HS80, "fp16", h100, db_path=tmp_path / "none.db")
    assert not p.tc_attention and p.specs["attn"].name_expression == "prefill_attention<80, 64, 32, 256>"
    assert p.describe()[-1].startswith("  attention prefill_attention<80> (CUDA cores; the tensor-core kernel refuses: "
                                       "head size 80")
    old = dataclasses.replace(h100, cc=(7, 5))                  # no m16n8k16 with fp32 accumulation there
    p = BatchedPrefill(GQA, "fp16", old, db_path=tmp_path / "none.db")
    assert not p.tc_attention and "sm_75" in p.describe()[-1] and p.attention_kernel(64) == ("attn", 64)


def test_switch_on_kernels_compile_without_spills_at_the_test_models(h100, tmp_path, monkeypatch, builder):
    monkeypatch.setenv(SWITCH, "1")
    specs = [s for cfg in (GQA, STORIES15M, LLAMA7B) for s in BatchedPrefill(cfg, "fp16", h100).specs.values()]
    specs = list({s.source_hash: s for s in specs}.values())
    for spec, binary in zip(specs, builder.build_many(specs)):
        assert binary.ok, (spec.name_expression, binary.error)
        assert binary.resources.spills == 0, (spec.name_expression, binary.resources)
