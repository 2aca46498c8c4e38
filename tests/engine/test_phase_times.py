"""The persistent step's phase timeline on the CPU: the instrumented build (-DAUTOSCHED_PHASE_TIMES)
compiles for sm_90a without spills, with one more argument; the plain spec is what it was; and the
reduction of a made-up timestamp buffer to the per-phase table (spans, slots, barrier waits,
shares, per-kind sums) against the same figures worked out block by block here."""

import statistics

import numpy as np
import pytest

from autosched.engine.phase_times import format_table, reduce
from autosched.models.llama2c import LlamaConfig
from autosched.templates import persistent as pt

ONE_B = LlamaConfig(2048, 8192, 16, 32, 8, 128256, 2048)


def test_phase_names_follow_the_kernel():
    names = pt.phase_names(2)
    assert names == ["embed", "l0.qkv", "l0.attn", "l0.o", "l0.gate_up", "l0.down",
                     "l1.qkv", "l1.attn", "l1.o", "l1.gate_up", "l1.down", "cls", "argmax"]
    assert len(pt.phase_names(16)) == 5 * 16 + 3        # the per-kernel step's 83 launches
    # the kernel's indices: 1 + 5 l + j for the layer's phases, 5 L + 1 cls, 5 L + 2 argmax
    from autosched.templates.base import kernel_source
    src = kernel_source(pt.HEADER)
    for j in range(1, 5):
        assert f"AUTOSCHED_MARK(ph + {j}, 0)" in src and f"AUTOSCHED_MARK_END(ph + {j})" in src
    assert "const int ph = 1 + 5 * l;" in src
    assert "AUTOSCHED_MARK(5 * n_layers + 1, 0)" in src and "AUTOSCHED_MARK(5 * n_layers + 2, 1)" in src


def test_plain_spec_unchanged_by_the_switch():
    plain = pt.persistent_step_spec(ONE_B, "sm_90a")
    off = pt.persistent_step_spec(ONE_B, "sm_90a", phase_times=False)
    on = pt.persistent_step_spec(ONE_B, "sm_90a", phase_times=True)
    assert plain == off
    assert plain.options == () and plain.args == ()
    assert plain.name_expression == on.name_expression == "persistent_step<256, 2, 256, 4, 4, 1>"
    assert on.options == ("-DAUTOSCHED_PHASE_TIMES",)
    assert on.source_hash != plain.source_hash            # a separate cache entry
    assert (on.grid, on.block, on.smem_bytes) == (plain.grid, plain.block, plain.smem_bytes)


def test_instrumented_build_compiles_without_spills_one_more_argument():
    from autosched.build import compile_spec
    plain = compile_spec(pt.persistent_step_spec(ONE_B, "sm_90a"))
    on = compile_spec(pt.persistent_step_spec(ONE_B, "sm_90a", phase_times=True))
    assert plain.ok, plain.error
    assert on.ok, on.error
    for b in (plain, on):
        r = b.resources
        assert r.spills == 0 and r.stack_bytes == 0, r
        assert pt.blocks_per_sm(r.registers, pt.THREADS, 0, r.smem_static) >= pt.MIN_BLOCKS
    assert on.resources.smem_static == plain.resources.smem_static
    # the mangled entry carries the parameter types: the plain one ends with float eps ("f"), the
    # instrumented one with a pointer to unsigned long long ("Py") after it
    assert plain.symbol.endswith("S2_S2_iiiiiiiiif"), plain.symbol
    assert on.symbol == plain.symbol + "Py", (plain.symbol, on.symbol)


# -- the reduction, on made-up timestamps ------------------------------------------------------------

L, G, STEPS = 2, 4, 5
P = 5 * L + 3


def synthetic(seed=0):
    """A timeline as the kernel writes it: phases back to back, block b starting at the previous
    barrier's exit (+ b ns of skew), working dur[p, b], arriving; the barrier opens r ns after the
    last arrival and block b leaves it b ns later.  cls has no barrier, argmax only on block G - 1,
    which starts after every block's ticket."""
    rng = np.random.default_rng(seed)
    t = np.zeros((STEPS, P, G, 3), dtype=np.uint64)
    for s in range(STEPS):
        now = 10_000_000 * (s + 1) + int(rng.integers(0, 1000))
        for p in range(P):
            if p == P - 1:                       # argmax: the last block, after all tickets
                t[s, p, G - 1, 0] = now + 50
                t[s, p, G - 1, 1] = now + 50 + int(rng.integers(100, 400))
                break
            ends = []
            for b in range(G):
                start = now + b
                end = start + int(rng.integers(1000, 20000))
                t[s, p, b, 0], t[s, p, b, 1] = start, end
                ends.append(end)
            if p == P - 2:                       # cls: no barrier
                now = max(ends)
                continue
            release = max(ends) + int(rng.integers(200, 800))
            for b in range(G):
                t[s, p, b, 2] = release + b
            now = release                        # block b starts at its exit, release + b
    return t


def expected(t):
    """The table's figures, block by block with plain Python."""
    t = t.astype(np.int64)
    out = {"span": [], "slot": [], "wmed": [], "wmax": [], "step": [], "busy": []}
    for s in range(STEPS):
        def written(p, k):
            return [int(t[s, p, b, k]) for b in range(G) if t[s, p, b, k] > 0]
        firsts = [min(written(p, 0)) for p in range(P)]
        last = max(int(x) for x in t[s].ravel() if x > 0)
        out["step"].append(last - firsts[0])
        out["span"].append([max(written(p, 1)) - firsts[p] for p in range(P)])
        out["slot"].append([(firsts[p + 1] if p + 1 < P else last) - firsts[p] for p in range(P)])
        wm, wx, busy = [], [], []
        for p in range(P):
            waits = [int(t[s, p, b, 2] - t[s, p, b, 1]) for b in range(G) if t[s, p, b, 2] > 0]
            wm.append(statistics.median(waits) if waits else None)
            wx.append(max(waits) if waits else None)
            own = [int(t[s, p, b, 1] - t[s, p, b, 0]) for b in range(G) if t[s, p, b, 0] > 0]
            busy.append(sum(own) / len(own) / out["span"][-1][p])
        out["wmed"].append(wm)
        out["wmax"].append(wx)
        out["busy"].append(busy)
    return out


def test_reduce_matches_block_by_block():
    t = synthetic()
    res = reduce(t, L)
    ex = expected(t)
    step_us = statistics.median(ex["step"]) / 1e3
    assert res["steps"] == STEPS and res["blocks"] == G
    assert res["step_us"] == pytest.approx(step_us)
    assert [r["phase"] for r in res["phases"]] == pt.phase_names(L)
    for p, r in enumerate(res["phases"]):
        span = statistics.median(ex["span"][s][p] for s in range(STEPS)) / 1e3
        slot = statistics.median(ex["slot"][s][p] for s in range(STEPS)) / 1e3
        assert r["span_us"] == pytest.approx(span), r
        assert r["slot_us"] == pytest.approx(slot), r
        assert r["share_pct"] == pytest.approx(100 * span / step_us)
        assert r["busy_pct"] == pytest.approx(100 * statistics.median(ex["busy"][s][p] for s in range(STEPS)))
        if p >= P - 2:                                    # cls and argmax: no barrier after them
            assert r["wait_med_us"] is None and r["wait_max_us"] is None
        else:
            assert r["wait_med_us"] == pytest.approx(statistics.median(ex["wmed"][s][p] for s in range(STEPS)) / 1e3)
            assert r["wait_max_us"] == pytest.approx(statistics.median(ex["wmax"][s][p] for s in range(STEPS)) / 1e3)
            assert r["wait_max_us"] >= r["wait_med_us"] > 0
        assert r["blocks"] == (1 if r["phase"] == "argmax" else G)
    # the slots tile each step: per step they add up to it exactly
    for s in range(STEPS):
        assert sum(ex["slot"][s]) == ex["step"][s]
    # per-kind sums across layers
    kinds = {k["kind"]: k for k in res["kinds"]}
    assert list(kinds) == ["embed", "qkv", "attn", "o", "gate_up", "down", "cls", "argmax"]
    for kind in ("qkv", "attn", "o", "gate_up", "down"):
        rows = [r for r in res["phases"] if r["kind"] == kind]
        assert kinds[kind]["phases"] == L
        assert kinds[kind]["span_us"] == pytest.approx(sum(r["span_us"] for r in rows))
        assert kinds[kind]["wait_med_us"] == pytest.approx(sum(r["wait_med_us"] for r in rows))
    assert kinds["cls"]["wait_med_us"] is None
    lines = format_table(res)
    assert len(lines) == 2 + 8 + 1 + P and "l1.gate_up" in lines[-4]


def test_reduce_hand_worked():
    # one layer, 2 blocks, 1 step; numbers small enough to check by eye
    n = 5 * 1 + 3
    t = np.zeros((1, n, 2, 3), dtype=np.uint64)
    start = 1000
    for p in range(n - 2):                 # embed .. down: block 0 works 100 ns, block 1 300 ns
        t[0, p, 0] = (start, start + 100, start + 340)
        t[0, p, 1] = (start + 10, start + 310, start + 350)
        start += 350
    t[0, n - 2, 0, :2] = (start, start + 500)            # cls
    t[0, n - 2, 1, :2] = (start + 10, start + 400)
    t[0, n - 1, 1, :2] = (start + 520, start + 600)      # argmax on block 1
    res = reduce(t, 1)
    embed = res["phases"][0]
    assert embed["span_us"] == pytest.approx(0.310)       # 1310 - 1000
    assert embed["slot_us"] == pytest.approx(0.350)
    assert embed["wait_med_us"] == pytest.approx(0.140)   # median of 240 and 40
    assert embed["wait_max_us"] == pytest.approx(0.240)
    assert embed["busy_pct"] == pytest.approx(100 * 200 / 310)
    assert res["step_us"] == pytest.approx((6 * 350 + 600) / 1e3)
    cls, am = res["phases"][-2:]
    assert cls["span_us"] == pytest.approx(0.5) and cls["slot_us"] == pytest.approx(0.52)
    assert am["span_us"] == pytest.approx(0.08) and am["blocks"] == 1
    assert sum(r["slot_pct"] for r in res["phases"]) == pytest.approx(100)


def test_reduce_refuses_a_buffer_of_the_wrong_shape():
    with pytest.raises(ValueError, match="want"):
        reduce(np.zeros((1, 12, 4, 3), dtype=np.uint64) + 1, 2)
