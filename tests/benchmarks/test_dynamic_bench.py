"""The DietCode benchmark's logic on the CPU: the synthetic runner for every measurement, a random
search of hgemm_dyn configs as the per-instance tuning, a modelled cuBLAS; the summary keys the
issue names come out, and the untuned Ms are never tuning instances."""

import random

from autosched.benchmarks import dynamic as bench
from autosched.dynamic import sketch
from autosched.dynamic.synthetic import SyntheticRunner
from autosched.dynamic.tune import tune_dynamic
from autosched.dynamic.workload import DynamicWorkload
from autosched.templates.hgemm_dyn import HgemmDynTemplate, micro_kernel_space


def test_benchmark_logic_on_synthetic_runner(h100):
    runner, t = SyntheticRunner(h100), HgemmDynTemplate()

    def inst(w, budget):
        space = micro_kernel_space(w.N, w.b_col, h100)
        rng = random.Random(w.M)
        cfgs = [sketch.sample(space, (w.M, w.N), rng) for _ in range(budget)]
        us, cfg = min((runner.measure(t.render(w, c, h100)).median_us, c) for c in cfgs)
        return t.family, cfg, us

    h = bench.Harness(h100, lambda dw: tune_dynamic(dw, t, runner, None, rounds=2, per_round=8),
                      inst, lambda dw, res, M: runner.measure(res.dispatcher.spec(dw.at(M), t, h100)).median_us,
                      lambda w: 2.0 * w.M * w.N * w.K / 500e12 * 1e6 + 5.0)
    dws = [DynamicWorkload.parse("hgemm", "Mx4096x4096_bt", (1, 4096)),
           DynamicWorkload.parse("hgemm", "Mx768x768_bt", (16, 2048), step=16)]
    rows, summary = bench.run(h, dws, log=lambda *a: None, sampled=4)
    assert set(summary) >= {"tuning_time_speedup", "untuned_geomean_vs_per_instance",
                            "geomean_vs_cublas_m_le_256", "prefill_2048_speedup_vs_stepwise"}
    for r, dw in zip(rows, dws):
        assert len(r["untuned"]) == 4 and not {p["M"] for p in r["untuned"]} & set(dw.instances)
        assert all(p["M"] % dw.step == 0 for p in r["untuned"])
        assert r["dispatcher_overhead_ns"] < 50_000
    assert summary["untuned_geomean_vs_per_instance"] > 0.5


def test_workload_list_covers_the_issue():
    keys = [dw.key for dw in bench.workloads()]
    assert len(keys) == 7 and "hgemm:M=16..2048/16,N=3072,K=768,b_col=1" in keys
    assert "hgemm:M=1..4096,N=22016,K=4096,b_col=1" in keys
