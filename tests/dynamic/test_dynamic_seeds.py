"""The dynamic search seeded with the rule-based ladders (sketch.seed_kernels), on the CPU (synthetic
runner): the seeds are what ops.hgemm serves by default, they are probed in the run, and selection
never predicts an instance slower than its ladder's kernel; the occupancy rules of the wave model."""

import json

import numpy as np
import pytest

from autosched.dynamic import sketch
from autosched.dynamic.cost_model import MicroKernelCostModel
from autosched.dynamic.measurer import compile_report, measure_micro_kernels
from autosched.dynamic.synthetic import SyntheticRunner
from autosched.dynamic.tune import select, tune_dynamic
from autosched.dynamic.workload import DynamicWorkload
from autosched.ops.hgemm import HgemmDispatch
from autosched.templates.hgemm_dyn import HgemmDynTemplate, blocks_per_sm, launch_bounds_registers
from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate

BOTH = (HgemmDynTemplate(), HgemmWgmmaDynTemplate())


def _dw(shape="Mx4096x4096_bt", rng=(1, 4096), step=1):
    return DynamicWorkload.parse("hgemm", shape, rng, step=step)


class Recording(SyntheticRunner):
    """Keeps (family, config) of everything measured."""
    def __init__(self, device):
        super().__init__(device)
        self.seen = set()

    def measure(self, spec, binary=None):
        self.seen.add((spec.family, json.dumps(dict(spec.config), sort_keys=True)))
        return super().measure(spec, binary)


@pytest.mark.parametrize("shape, rng, step", [("Mx4096x4096_bt", (1, 4096), 1), ("Mx768x768_bt", (16, 2048), 16),
                                              ("Mx96x288_bt", (1, 300), 1)])
def test_seeds_are_what_ops_serves_over_the_range(h100, monkeypatch, shape, rng, step):
    dw = _dw(shape, rng, step)
    seeds = sketch.seed_kernels(dw, BOTH, h100)
    keys = [(f, json.dumps(c, sort_keys=True)) for f, c, _ in seeds]
    assert len(keys) == len(set(keys))                                   # deduplicated
    for fam, backend in (("hgemm_dyn", "mma"), ("hgemm_wgmma", "wgmma")):
        monkeypatch.delenv("AUTOSCHED_WGMMA_IN_AUTO", raising=False)
        g = HgemmDispatch(dw.N, dw.K, h100, m_max=dw.hi, backend=backend)
        mine = {json.dumps(c, sort_keys=True): spans for f, c, spans in seeds if f == fam}
        served = {json.dumps(g.config(M), sort_keys=True) for M in dw.ms()}
        assert set(mine) == served
        for M in dw.ms()[:: max(1, len(dw.ms()) // 50)]:
            at = [k for k, spans in mine.items() if any(a <= M <= b for a, b in spans)]
            assert at == [json.dumps(g.config(M), sort_keys=True)]       # the rung serving M, only it
    space = HgemmWgmmaDynTemplate().space(dw.largest, h100)
    assert all(space.contains(c) for f, c, _ in seeds if f == "hgemm_wgmma")
    # only the run's templates
    assert {f for f, _, _ in sketch.seed_kernels(dw, BOTH[:1], h100)} == {"hgemm_dyn"}


def _ladder_us(dw, h100, seeds, runner):
    """Per instance, the predicted time (uncorrected cost model, probes re-measured) of the ladder's
    kernel serving it, the best over templates."""
    model = MicroKernelCostModel(dw, h100)
    t = {x.family: x for x in BOTH}
    out = np.full(len(dw.instances), np.inf)
    for fam, cfg, spans in seeds:
        mk, = measure_micro_kernels(t[fam], [cfg], dw, runner, row_probe=True)    # as the run probes it
        if not mk.ok:
            continue
        us = model.predict_us([mk], dw.instances)[0]
        for j, M in enumerate(dw.instances):
            if any(a <= M <= b for a, b in spans):
                out[j] = min(out[j], us[j])
    return out


@pytest.mark.parametrize("shape, rng, step, cap", [("Mx4096x4096_bt", (1, 4096), 1, 6), ("Mx4096x4096_bt", (1, 4096), 1, 1),
                                                   ("Mx768x768_bt", (16, 2048), 16, 6), ("Mx768x768_bt", (16, 2048), 16, 1)])
def test_seeded_run_probes_the_seeds_and_never_loses_to_the_ladder(h100, shape, rng, step, cap):
    """cap 1: the greedy stops at one kernel, so the ladder's floor must add the rest."""
    dw = _dw(shape, rng, step)
    seeds = sketch.seed_kernels(dw, BOTH, h100)
    runner = Recording(h100)
    res = tune_dynamic(dw, list(BOTH), runner, None, rounds=2, per_round=8, seed=0, max_kernels=cap)
    assert res.seeds == len(seeds) == res.history[0]["seeds"] and res.measured == 16 + len(seeds)
    assert {(f, json.dumps(c, sort_keys=True)) for f, c, _ in seeds} <= runner.seen
    ladder = _ladder_us(dw, h100, seeds, SyntheticRunner(h100))
    pred = np.array([v["predicted_us"] for v in res.verification])
    assert np.all(np.isfinite(ladder))
    assert np.all(pred <= ladder * (1 + 1e-9)), list(zip(dw.instances, pred, ladder))
    # without the seeds the search alone misses the ladder on some instance (what the seeds fix)
    if cap > 1:
        assert len(res.kernels) <= cap
        return
    assert len(res.kernels) > 1
    bare = tune_dynamic(dw, list(BOTH), SyntheticRunner(h100), None, rounds=2, per_round=8, seed=0, seeds=False)
    assert bare.seeds == 0 and bare.measured == 16
    if shape.startswith("Mx4096"):
        assert np.any(np.array([v["predicted_us"] for v in bare.verification]) > ladder * 1.05)


def test_select_floor_adds_kernels_past_the_cap():
    P = np.array([[10.0, 10.0, 1.0], [1.0, 1.0, 2.0], [9.0, 9.0, 1.5]])
    w = [0.45, 0.45, 0.1]
    assert select(P, w, 1) == [0]
    assert select(P, w, 1, floor=[0, 0, 1.5]) == [0, 2]        # row 2 lifts instance 2 to its floor
    assert select(P, w, 1, floor=[0, 0, 2.0]) == [0, 1]
    assert select(P, w, 1, floor=[0, 0, 99.0]) == [0, 1]       # above every row: the best row's is the floor
    assert select(P, w, 6, floor=None) == select(P, w, 6, floor=[0, 0, 0])


def test_occupancy_follows_the_cuda_rules(h100):
    # registers: a warp's allocation in units of 256 (84 a thread take 88); 768 threads x 88 > 65536
    assert blocks_per_sm(768, 84, 1000, h100) == 0
    assert blocks_per_sm(256, 84, 1000, h100) == 2                 # 3 by 84 x 256 alone
    assert blocks_per_sm(256, 80, 1000, h100) == 3
    # shared memory: each block also takes the runtime's 1 KB (228 KB an SM: 3 x 76 KB do not fit)
    assert blocks_per_sm(128, 32, 76 * 1024, h100) == 2
    assert blocks_per_sm(128, 32, 75 * 1024, h100) == 3
    assert blocks_per_sm(64, 32, 0, h100) == 32                      # the block cap
    # __launch_bounds__ caps what ptxas gives a thread so that one block fits (the rest spills)
    assert launch_bounds_registers(768, h100) == 80 and launch_bounds_registers(128, h100) == 255
    c = {"bm": 192, "bn": 128, "wm": 64, "wn": 16, "bk": 48, "stages": 3, "pad": 8, "local_pad": 1}
    rep = compile_report(HgemmDynTemplate(), c, _dw().largest, h100)
    assert rep.threads == 768 and rep.registers == 80 and rep.spills > 0 and rep.blocks_per_sm == 1


def test_wave_model_of_a_small_m_counts_one_partial_wave(h100):
    """M = 10 on a 128-row tile: ceil(N / BN) tiles of one row, a partial wave of one block an SM: the
    prediction is the #SMs probe (t1), not a full wave's; the same at M = 128, twice it at two waves."""
    dw = _dw()
    t = HgemmDynTemplate()
    c = {"bm": 128, "bn": 128, "wm": 64, "wn": 64, "bk": 32, "stages": 3, "pad": 8, "local_pad": 1}
    mk, = measure_micro_kernels(t, [c], dw, SyntheticRunner(h100))
    g1, g2 = mk.grids
    assert g1 == h100.sm_count and g2 == mk.report.blocks_per_sm * h100.sm_count
    model = MicroKernelCostModel(dw, h100)
    us = model.predict_us([mk], [10, 128, 129])[0]
    assert us[0] == us[1] == mk.probes[g1]                        # 32 tiles: one block an SM at most
    per_wave = g2                                                  # tiles in one full wave
    M_two = 128 * (-(-(per_wave + 1) // 32))                       # just past one full wave
    two = model.predict_us([mk], [M_two])[0, 0]
    assert two == pytest.approx(mk.probes[g2] + mk.probes[g1])


def test_first_round_ranks_small_m_tiles_too(h100):
    """With nothing measured (no seeds), round 0 ranks by each instance's share of its best guess:
    raw TFLOP/s would rank by the large Ms alone and probe only large tiles (what the H100 run of
    2026-11-23 did: no tile under 128 rows, 61 us at M = 10 against 30 for a 64-row one)."""
    dw = _dw()

    class FirstBatch(SyntheticRunner):
        def __init__(self, device):
            super().__init__(device)
            self.batches = []

        def measure_stream(self, items):
            items = list(items)
            self.batches.append([dict(spec.config)["bm"] for _, spec, _ in items])
            yield from super().measure_stream(items)

    for seed in range(4):
        r = FirstBatch(h100)
        tune_dynamic(dw, list(BOTH), r, None, rounds=1, per_round=8, seed=seed, seeds=False)
        first = [bm for batch in r.batches[:-1] for bm in batch]       # round 0's probes (the last: verification)
        assert min(first) <= 64, (seed, first)
