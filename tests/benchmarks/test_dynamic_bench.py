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
from autosched.templates import hgemm_dyn as t_dyn


def test_benchmark_logic_on_synthetic_runner(h100):
    runner, t = SyntheticRunner(h100), HgemmDynTemplate()

    def inst(w, budget):
        space = micro_kernel_space(w.N, w.b_col, h100)
        rng = random.Random(w.M)
        cfgs = [t_dyn.sample(space, (w.M, w.N), rng) for _ in range(budget)]
        us, cfg = min((runner.measure(t.render(w, c, h100)).median_us, c) for c in cfgs)
        return t.family, cfg, us, len(cfgs)

    calls = {"n": 0}

    def counted(f):
        def g(*a):
            calls["n"] += 1
            return f(*a)
        return g

    h = bench.Harness(h100, lambda dw: tune_dynamic(dw, t, runner, None, rounds=2, per_round=8),
                      counted(inst), lambda dw, res, M: runner.measure(res.dispatcher.spec(dw.at(M), t, h100)).median_us,
                      lambda w: 2.0 * w.M * w.N * w.K / 500e12 * 1e6 + 5.0, spent=lambda: {"tunings": calls["n"]})
    dws = [DynamicWorkload.parse("hgemm", "Mx4096x4096_bt", (1, 4096)),
           DynamicWorkload.parse("hgemm", "Mx768x768_bt", (16, 2048), step=16)]
    rows, summary = bench.run(h, dws, log=lambda *a: None, sampled=4)
    assert set(summary) >= {"tuning_time_speedup", "untuned_geomean_vs_per_instance",
                            "geomean_vs_cublas_m_le_256", "prefill_2048_speedup_vs_stepwise"}
    for r, dw in zip(rows, dws):
        assert len(r["untuned"]) == 4 and not {p["M"] for p in r["untuned"]} & set(dw.instances)
        assert all(p["M"] % dw.step == 0 for p in r["untuned"])
        assert r["dispatcher_overhead_ns"] < 50_000
        # equal effort, on the record: each per-instance tuning had the dynamic run's measurements
        assert r["dynamic_seeds"] == 3 and r["dynamic_micro_kernels_probed"] == 16 + 3
        assert all(p["per_instance_trials"] == r["dynamic_measurements"] == r["per_instance_budget"]
                   for p in r["untuned"])
        # what each tuning spent is the difference of the harness's counters around it alone
        assert r["dynamic_spent"] == {"tunings": 0} and all(p["spent"] == {"tunings": 1} for p in r["untuned"])
    assert summary["untuned_geomean_vs_per_instance"] > 0.5


def test_workload_list_covers_the_issue():
    keys = [dw.key for dw in bench.workloads()]
    assert len(keys) == 7 and "hgemm:M=16..2048/16,N=3072,K=768,b_col=1" in keys
    assert "hgemm:M=1..4096,N=22016,K=4096,b_col=1" in keys


def test_gpu_harness_starts_every_tuning_cold(h100, monkeypatch, tmp_path):
    """Each dynamic and each per-instance tuning gets its own new database and a Builder on a new,
    empty compile cache (never the default one) and workers that forgot their inputs, and the
    scratch folder goes at the end."""
    from types import SimpleNamespace

    import autosched.dynamic.tune as dyn_tune
    import autosched.measure.gpu as gpu
    import autosched.tuner as tuner
    from autosched.build import default_cache_dir
    seen = []

    def record(kind, db, builder):
        order.append(kind)
        root = builder.cache.root
        seen.append((kind, str(db.path), str(root), root.exists() and any(root.iterdir())))
        root.mkdir(parents=True, exist_ok=True)
        (root / "a-binary").write_text("built")            # what a compile would leave for the next one

    order = []

    class Forgetting(SyntheticRunner):
        def forget_inputs(self):
            order.append("forget")

    monkeypatch.setattr(gpu, "GpuRunner", lambda: Forgetting(h100))

    def fake_dynamic(dw, templates, runner, db, builder=None, **kw):
        record("dynamic", db, builder)
        return tune_dynamic(dw, HgemmDynTemplate(), runner, None, rounds=1, per_round=4)
    monkeypatch.setattr(dyn_tune, "tune_dynamic", fake_dynamic)

    def fake_tune(w, templates, runner, db, builder=None, trials=None, **kw):
        record("instance", db, builder)
        return SimpleNamespace(best_template="hgemm_dyn", best_knobs={}, best=SimpleNamespace(median_us=1.0),
                               trials=trials)
    monkeypatch.setattr(tuner, "tune", fake_tune)
    h, closers = bench.gpu_harness(db_path=tmp_path / "dynamic.db", wgmma=False)
    try:
        for dw in (DynamicWorkload.parse("hgemm", "Mx768x768_bt", (16, 256), step=16),
                   DynamicWorkload.parse("hgemm", "Mx3072x768_bt", (16, 256), step=16)):
            res = h.tune_dynamic(dw)
            assert h.tune_instance(dw.at(32), 7)[3] == 7
            assert h.tune_instance(dw.at(48), 7)[3] == 7
            assert res.seeds == 2                       # the mma ladder's rungs up to M = 256
    finally:
        for c in reversed(closers):
            c.close()
    assert [k for k, *_ in seen] == ["dynamic", "instance", "instance"] * 2
    # the workers forget their inputs and references first: each tuning pays for its own
    assert order == ["forget", "dynamic", "forget", "instance", "forget", "instance"] * 2
    assert len({db for _, db, _, _ in seen}) == len({root for _, _, root, _ in seen}) == 6
    assert not any(warm for *_, warm in seen)                  # every cache empty when its tuning starts
    assert all(not root.startswith(str(default_cache_dir())) for _, _, root, _ in seen)
    assert [db for k, db, _, _ in seen if k == "dynamic"] == [str(tmp_path / "dynamic-Mx768x768_bt.db"),
                                                              str(tmp_path / "dynamic-Mx3072x768_bt.db")]
    from pathlib import Path
    assert not any(Path(root).exists() for k, _, root, _ in seen)   # the scratch folder is gone


def test_a_resumed_run_keeps_the_finished_rows_and_runs_the_rest(h100, tmp_path):
    """run(done=rows): the workloads those rows hold are not run again, the others are, and the
    summary covers them all; resumable gives the rows and their commits, and refuses a partial file of another GPU model or other
    settings, naming what differs."""
    import json

    import pytest
    runner, t = SyntheticRunner(h100), HgemmDynTemplate()
    ran = []

    def dyn(dw):
        ran.append(dw.key)
        return tune_dynamic(dw, t, runner, None, rounds=1, per_round=4)

    h = bench.Harness(h100, dyn, lambda w, b: (t.family, {}, 10.0, b),
                      lambda dw, res, M: runner.measure(res.dispatcher.spec(dw.at(M), t, h100)).median_us,
                      lambda w: 20.0)
    dws = [DynamicWorkload.parse("hgemm", "Mx768x768_bt", (16, 256), step=16),
           DynamicWorkload.parse("hgemm", "Mx3072x768_bt", (16, 256), step=16)]
    first, _ = bench.run(h, dws[:1], log=lambda *a: None, sampled=2)
    rows, summary = bench.run(h, dws, log=lambda *a: None, sampled=2, done=first)
    assert ran == [dws[0].key, dws[1].key]                  # the first workload ran once, in the first call
    assert [r["workload"] for r in rows] == [dw.key for dw in dws] and rows[0] is first[0]
    assert summary == bench.summarize(rows)

    settings = {"quick": False, "rounds": 4}
    p = tmp_path / bench.PARTIAL
    p.write_text(json.dumps({"device_key": h100.key, "settings": settings, "commits": ["abc"], "rows": first}))
    assert bench.resumable(p, h100.key, settings) == (json.loads(json.dumps(first)), ["abc"])
    with pytest.raises(ValueError, match="measured on"):
        bench.resumable(p, "another-gpu", settings)
    with pytest.raises(ValueError, match="settings"):
        bench.resumable(p, h100.key, {**settings, "rounds": 2})
    p.write_text(json.dumps(first))                        # the list an older bench wrote
    with pytest.raises(ValueError, match="not a DietCode partial file"):
        bench.resumable(p, h100.key, settings)


def test_resume_names_a_missing_file(tmp_path, capsys):
    import pytest
    with pytest.raises(SystemExit):
        bench.main(["--resume", str(tmp_path / "nope.json")])
    err = capsys.readouterr().err
    assert "--resume" in err and "nope.json: no such file" in err


def test_the_ratio_to_cublas_comes_from_the_paired_timing_where_the_harness_has_one(h100):
    """With cublas_pair (the GPU harness's: the dispatched kernel and cuBLAS on the same buffers, in
    alternation), vs_cublas and cublas_us are that pairing's, kept whole in cublas_paired, and the
    separately timed cuBLAS is not asked; without it, cuBLAS's own time over the dispatched time."""
    runner, t = SyntheticRunner(h100), HgemmDynTemplate()
    asked = []

    def own(w):
        asked.append(w.M)
        return 20.0

    def pair(dw, res, M):
        return {"vs_cublas": 0.5 + M / 1000.0, "vs_cublas_range": [0.4, 0.6], "cublas_us": 7.0, "ours_us": 9.0,
                "rounds": 3, "cublas_kernels": ["k"]}

    def harness(cublas_pair):
        return bench.Harness(h100, lambda dw: tune_dynamic(dw, t, runner, None, rounds=1, per_round=4),
                             lambda w, b: (t.family, {}, 10.0, b), lambda dw, res, M: 40.0, own,
                             cublas_pair=cublas_pair)
    dws = [DynamicWorkload.parse("hgemm", "Mx768x768_bt", (16, 256), step=16)]
    rows, summary = bench.run(harness(pair), dws, log=lambda *a: None, sampled=3)
    assert asked == []
    per = rows[0]["untuned"]
    assert [p["vs_cublas"] for p in per] == [0.5 + p["M"] / 1000.0 for p in per]
    assert all(p["cublas_us"] == 7.0 and p["cublas_paired"]["ours_us"] == 9.0 for p in per)
    assert abs(summary["geomean_vs_cublas_m_le_256"] - bench.geomean(p["vs_cublas"] for p in per)) < 1e-12

    rows, _ = bench.run(harness(None), dws, log=lambda *a: None, sampled=3)
    per = rows[0]["untuned"]
    assert asked == [p["M"] for p in per]
    assert all(p["vs_cublas"] == 0.5 and "cublas_paired" not in p for p in per)     # 20 us over 40
