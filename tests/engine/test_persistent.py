"""The persistent decode step on the CPU: it compiles for sm_90 without spills at the shapes it
serves, its work partition (the Python model of the kernel's) covers every row and head exactly
once, the occupancy model and grid, and the refusals."""

import pytest

from autosched.models.llama2c import SEED_CONFIGS, LlamaConfig
from autosched.templates import persistent as pt

ONE_B = LlamaConfig(2048, 8192, 16, 32, 8, 128256, 2048)
SHAPES = {"stories15M": SEED_CONFIGS["stories15M"], "1b": ONE_B, "7b": SEED_CONFIGS["llama2-7b"]}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_compiles_without_spills_two_blocks_an_sm(name):
    from autosched.build import compile_spec
    cfg = SHAPES[name]
    spec = pt.persistent_step_spec(cfg, "sm_90")
    b = compile_spec(spec)
    assert b.ok, b.error
    r = b.resources
    assert r.spills == 0 and r.stack_bytes == 0, r
    assert r.registers <= 65536 // (pt.MIN_BLOCKS * pt.THREADS)
    assert pt.blocks_per_sm(r.registers, pt.THREADS, spec.smem_bytes, r.smem_static) >= pt.MIN_BLOCKS


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("grid", [1, 7, 132, 264, 1000])
def test_partition_covers_every_row_and_head_once(name, grid):
    cfg = SHAPES[name]
    nsplit = pt.persistent_splits(cfg, grid)
    part = pt.partition(cfg, grid, nsplit)
    q_dim = cfg.n_heads * cfg.head_size
    want = {"qkv": q_dim + 2 * cfg.kv_dim, "o": cfg.dim, "gate_up": 2 * cfg.hidden_dim, "down": cfg.dim,
            "cls": cfg.vocab_size}
    for phase, n in want.items():
        blocks = part[phase]
        assert len(blocks) == grid
        flat = [r for rows in blocks for r in rows]
        assert sorted(flat) == list(range(n)), phase           # each row exactly once
        sizes = [len(rows) for rows in blocks]
        unit = 2 if phase == "gate_up" else 1
        assert max(sizes) - min(sizes) <= unit                 # balanced to one unit
        for rows in blocks:                                    # contiguous; gate/up pairs whole
            assert rows == list(range(rows[0], rows[0] + len(rows))) if rows else True
            if unit == 2 and rows:
                assert rows[0] % 2 == 0 and len(rows) % 2 == 0
    items = sorted(i for b in part["attention"] for i in b)
    assert items == sorted((h, s) for h in range(cfg.n_heads) for s in range(nsplit))


def test_attention_slices_and_shared_memory():
    assert pt.persistent_splits(ONE_B, 264) == 8                   # 32 heads x 8 slices = 256 items <= 264
    assert pt.persistent_splits(SHAPES["stories15M"], 264) == 8    # seq_len 256: slices of >= 32 positions
    assert pt.persistent_splits(ONE_B, 16) == 1
    # the scores stay in registers: a long context needs no more shared memory, and no more slices
    long = LlamaConfig(4096, 11008, 2, 32, 32, 32000, 32768)
    assert pt.smem_bytes() == 4 * pt.CHUNK and pt.persistent_step_spec(long, "sm_90").smem_bytes == pt.smem_bytes()
    assert pt.persistent_splits(long, 32) == 1 and pt.persistent_splits(long, 264) == 8


def test_occupancy_model_and_grid():
    assert pt.blocks_per_sm(128, 256, 9000, 10256) == 2
    assert pt.blocks_per_sm(64, 256, 0) == 4                       # registers
    assert pt.blocks_per_sm(24, 128, 0) == 16                      # threads: 2048 an SM
    assert pt.blocks_per_sm(255, 256, 0) == 1
    assert pt.blocks_per_sm(32, 256, 100 * 1024) == 2              # shared memory
    assert pt.blocks_per_sm(32, 256, 120 * 1024) == 1
    assert pt.blocks_per_sm(32, 256, 300 * 1024) == 0
    assert pt.grid_blocks(2, 132) == 264
    with pytest.raises(ValueError, match="does not fit"):
        pt.grid_blocks(0, 132)


def test_kernel_spans_match_the_model():
    # the kernel's span_lo is units * b / G in 64-bit, as span() here
    from autosched.templates.base import kernel_source
    src = kernel_source(pt.HEADER)
    assert "return (int)((long long)units * b / G);" in src
    assert "it % n_heads, it / n_heads" in src


@pytest.mark.parametrize("fmt", ["q4f16_1", "int8", "fp32"])
def test_refuses_other_formats(fmt):
    assert "fp16 weights only" in pt.refusal(ONE_B, fmt)
    pytest.importorskip("torch")
    from autosched.engine.engine import Engine
    with pytest.raises(ValueError, match="persistent decode step serves fp16 weights only"):
        Engine(ONE_B, {}, fmt, persistent=True)


def test_refuses_shapes_it_cannot_read():
    assert pt.refusal(LlamaConfig(2048, 8192, 2, 16, 8, 512, 64), "fp16") is None
    assert "head size" in pt.refusal(LlamaConfig(300, 768, 2, 6, 6, 512, 64), "fp16")      # head size 50
    assert "hidden_dim" in pt.refusal(LlamaConfig(256, 770, 2, 4, 4, 512, 64), "fp16")
    with pytest.raises(ValueError, match="head size"):
        pt.persistent_step_spec(LlamaConfig(300, 768, 2, 6, 6, 512, 64), "sm_90")
