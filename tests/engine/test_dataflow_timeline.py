"""The dataflow step's timeline on the CPU: the instrumented build (-DAUTOSCHED_TIMELINE) compiles
for sm_90a without spills and differs from the plain spec only by its macro; the reduction of a
made-up stamp buffer to per-kind waits, work and ring waits against figures worked out by hand."""

import numpy as np

from autosched.engine.dataflow_timeline import KINDS, format_table, reduce
from autosched.models.llama2c import LlamaConfig
from autosched.templates import dataflow as df

SMALL = LlamaConfig(256, 768, 2, 4, 2, 1000, 96)


def test_instrumented_build_compiles_without_spills():
    from autosched.build import compile_spec
    knobs = df.choices(SMALL, "q4f16_1")[0]
    plain = df.dataflow_step_spec(SMALL, "q4f16_1", "sm_90a", knobs)
    timed = df.dataflow_step_spec(SMALL, "q4f16_1", "sm_90a", knobs, timeline=True)
    assert timed.options == (df.TIMELINE_MACRO,) and plain.options == ()
    assert timed.name_expression == plain.name_expression and timed.source == plain.source
    b = compile_spec(timed)
    assert b.ok, b.error
    assert b.resources.spills == 0


def test_reduce_hand_worked():
    n_layers, grid = 2, 3
    names = df.phase_names(n_layers)
    assert len(names) == 5 * n_layers + 2 and names[0] == "embed" and names[-1] == "cls"
    st = np.zeros((len(names), grid, 4), dtype=np.int64)
    base = 1_000_000
    # every block works every phase: wait 1 us, work (2 + block) us, ring 0.5 us; block 0 alone embeds
    for p in range(len(names)):
        for b in range(grid):
            if p == 0 and b:
                continue
            t = base + p * 100_000
            st[p, b] = (t, t + 1000, t + 1000 + (2 + b) * 1000, 500)
    r = reduce(st, n_layers)
    k = r["kinds"]
    assert set(k) == set(KINDS)
    # qkv: two layers, median block works 3 us, waits 1 us, ring 0.5 us
    assert k["qkv"]["work_us"] == 6.0 and k["qkv"]["wait_us"] == 2.0 and k["qkv"]["ring_us"] == 1.0
    assert k["embed"]["work_us"] == 2.0 and k["embed"]["blocks"] == 1
    assert k["cls"]["work_us"] == 3.0 and k["cls"]["blocks"] == grid
    last = len(names) - 1
    assert r["span_us"] == (last * 100_000 + 1000 + 4000) / 1e3
    lines = format_table({"knobs": "4x48K r32", "grid": grid, "steps": 1, "span_us": r["span_us"], "kinds":
                          {kk: {f: v[f] for f in ("wait_us", "work_us", "ring_us")} for kk, v in k.items()}})
    assert len(lines) == 2 + len(KINDS) and lines[2].startswith("embed")
