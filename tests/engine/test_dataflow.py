"""The dataflow decode step on the CPU: it compiles for sm_90 without spills at the shapes it
serves (fp16 and q4f16_1), its chunk plan (the Python model of the kernel's mat_of) covers every row
of every matmul exactly once for any grid, gate/up pairs stay whole, and the refusals."""

import pytest

from autosched.models.llama2c import SEED_CONFIGS, LlamaConfig
from autosched.templates import dataflow as df

ONE_B = LlamaConfig(2048, 8192, 16, 32, 8, 128256, 2048)
SHAPES = {"1b": ONE_B, "7b": SEED_CONFIGS["llama2-7b"], "tinyllama": SEED_CONFIGS["tinyllama-1.1b"]}


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("fmt", ["fp16", "q4f16_1"])
def test_default_knobs_compile_without_spills(name, fmt):
    from autosched.build import compile_spec
    cfg = SHAPES[name]
    knobs = df.choices(cfg, fmt)
    assert knobs, df.refusal(cfg, fmt)
    spec = df.dataflow_step_spec(cfg, fmt, "sm_90a", knobs[0])
    b = compile_spec(spec)
    assert b.ok, b.error
    r = b.resources
    assert r.spills == 0 and r.stack_bytes == 0, r
    assert spec.smem_bytes + r.smem_static <= df.SMEM_LIMIT


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("fmt", ["fp16", "q4f16_1"])
@pytest.mark.parametrize("grid", [1, 3, 132])
def test_chunks_cover_every_row_once(name, fmt, grid):
    cfg = SHAPES[name]
    for knobs in df.choices(cfg, fmt):
        plan = df.chunk_plan(cfg, fmt, knobs)
        assert len(plan) == 4 * cfg.n_layers + 1 and plan[-1]["kind"] == "cls"
        per_block = df.block_rows(cfg, fmt, knobs, grid)
        for m, mat in enumerate(plan):
            assert mat["rows"] * df.row_bytes(fmt, mat["k"]) <= knobs.stage_bytes     # a chunk fits a slot
            rows = sorted(r for b in per_block for rng in b.get(m, []) for r in rng)
            assert rows == list(range(mat["n"])), (m, mat)
            if mat["kind"] == "gate_up":
                assert all(rng.start % 2 == 0 and len(rng) % 2 == 0 for b in per_block for rng in b.get(m, []))
        # chunks rotate: no block holds more than one chunk above another's share of the step
        counts = [sum(len(v) for v in b.values()) for b in per_block]
        assert max(counts) - min(counts) <= 1


def test_refusals_name_the_problem():
    assert "int8" in df.refusal(ONE_B, "int8")
    odd = LlamaConfig(288, 768, 2, 6, 6, 32000, 256)        # stories15M: 288 is no multiple of 256
    assert "288" in df.refusal(odd, "q4f16_1")
    assert df.refusal(odd, "fp16") is None
    wide = LlamaConfig(4096, 11008, 2, 32, 32, 32000, 512)
    assert "down" in df.refusal(wide, "fp16", df.Knobs(6, 16 * 1024, 32))    # a 22 KB row, 16 KB slots
    assert "3 slots" in df.refusal(wide, "fp16", df.Knobs(2, 96 * 1024, 32))
    with pytest.raises(ValueError, match="shared memory"):
        df.dataflow_step_spec(wide, "fp16", "sm_90a", df.Knobs(3, 96 * 1024, 32))


def test_blocks_an_sm_must_share_its_shared_memory():
    seven = SEED_CONFIGS["llama2-7b"]
    assert df.refusal(seven, "q4f16_1", df.Knobs(3, 64 * 1024, 32)) is None     # ran once bulk copies fed the ring
    assert df.refusal(ONE_B, "fp16", df.Knobs(3, 32 * 1024, 16, per_sm=2)) is None
    assert "do not fit an SM" in df.refusal(ONE_B, "fp16", df.Knobs(3, 48 * 1024, 32, per_sm=2))
    assert "do not fit an SM" in df.refusal(ONE_B, "fp16", df.Knobs(3, 32 * 1024, 32, per_sm=0))
    two = df.dataflow_step_spec(ONE_B, "fp16", "sm_90a", df.Knobs(3, 32 * 1024, 16, per_sm=2))
    assert two.name_expression.startswith("dataflow_step<0, 256, 2, 3, 32768,")
    assert df.Knobs(3, 32 * 1024, 16, per_sm=2).label() == "3x32K r16 2/SM"


def test_attention_slices():
    assert df.splits(ONE_B, 132) == 4 and df.splits(ONE_B, 16) == 1
    assert df.splits(LlamaConfig(256, 768, 2, 4, 2, 1000, 64), 132) == 2      # slices of >= 32 positions


def test_q4_words_give_the_kernels_pairs():
    """The dataflow step's q4f16_1 words (layouts.interleave_k) hold pair p = (x_2p, x_2p+1) at
    nibbles p and p + 4: the kernel's LOP3 masks on the word and on the word shifted by 8 take
    pairs 0 and 2 as (q_lo, q_hi), pairs 1 and 3 as 16 x (q_lo, q_hi) (chunk_partials)."""
    import numpy as np
    from autosched.layouts import interleave_k, pack_nibbles
    rng = np.random.default_rng(0)
    q = rng.integers(0, 16, size=(64, 8)).astype(np.uint32)
    w = interleave_k(pack_nibbles(q)).astype(np.uint64)
    for p in range(4):
        word = w >> (8 * (p // 2))
        mask = 0x000F000F << (4 * (p % 2))
        lo, hi = (word & mask) & 0xFFFF, ((word & mask) >> 16) & 0xFFFF
        scale = 16 if p % 2 else 1
        assert (lo == q[:, 2 * p] * scale).all() and (hi == q[:, 2 * p + 1] * scale).all()
