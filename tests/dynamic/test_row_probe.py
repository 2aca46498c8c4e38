"""The row probe (measurer.py, an experiment off by default): each micro-kernel also timed on the
range's smallest real shape, one row of tiles over all of N, and the cost model taking no partial
first wave faster than it; on the synthetic runner (MODELLED times)."""

import pytest

from autosched.benchmarks import dynamic as bench
from autosched.dynamic.cost_model import MicroKernelCostModel
from autosched.dynamic.measurer import CompileReport, MicroKernel, row_workload
from autosched.dynamic.synthetic import SyntheticRunner
from autosched.dynamic.tune import DynamicResult, tune_dynamic
from autosched.dynamic.workload import DynamicWorkload
from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate

WG64 = {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 6, "group": 8}


@pytest.fixture(scope="module")
def dw():
    return DynamicWorkload.parse("hgemm", "Mx4096x4096_bt", (1, 4096))


def test_the_row_probe_is_one_row_of_tiles_over_all_of_n(dw):
    assert row_workload(WG64, dw, "hgemm_wgmma").shape_str == "64x4096x4096_bt"
    stream = {"rw": 1, "wn": 2, "wk": 4, "mt": 16, "kw": 64, "stages": 6, "split_k": 1}
    assert row_workload(stream, dw, "hgemm_stream").shape_str == "16x4096x4096_bt"


def test_no_partial_first_wave_is_predicted_faster_than_the_row_probe(h100, dw):
    rep = CompileReport(256, 168, 100000, 0, 1, "ptxas")
    plain = MicroKernel(WG64, rep, {132: 20.0}, family="hgemm_wgmma")
    rowed = MicroKernel(WG64, rep, {132: 20.0}, row_us=25.0, family="hgemm_wgmma")
    m = MicroKernelCostModel(dw, h100)
    # M = 1..128: 64 or 128 tiles, one partial wave: the row probe's 25 us bounds the wave model's 20
    assert [m.analytic_us(plain, M) for M in (1, 64, 128)] == [20.0, 20.0, 20.0]
    assert [m.analytic_us(rowed, M) for M in (1, 64, 128)] == [25.0, 25.0, 25.0]
    # past a full wave the grid probes alone decide
    assert m.analytic_us(rowed, 4096) == m.analytic_us(plain, 4096) > 25.0


def test_the_tuner_takes_row_probes_unless_told_not_to_and_counts_them(h100, dw):
    runner = SyntheticRunner(h100)
    off = tune_dynamic(dw, HgemmWgmmaDynTemplate(), runner, None, rounds=1, per_round=6, seeds=False, row_probe=False)
    before = runner.calls
    on = tune_dynamic(dw, HgemmWgmmaDynTemplate(), runner, None, rounds=1, per_round=6, seeds=False)
    assert all(k.row_us is None for k in off.kernels)
    assert on.kernels and all(k.row_us is not None and k.row_us > 0 for k in on.kernels)
    assert on.measurements == runner.calls - before       # every probe counted, the row probes too
    assert on.measurements == off.measurements + on.measured
    back = DynamicResult.from_json(on.to_json())
    assert [k.row_us for k in back.kernels] == [k.row_us for k in on.kernels]


def test_the_bench_passes_the_switch_to_the_dynamic_run(h100, monkeypatch, tmp_path):
    import autosched.dynamic.tune as dyn_tune
    import autosched.measure.gpu as gpu
    class Forgetting(SyntheticRunner):
        def forget_inputs(self):
            pass
    monkeypatch.setattr(gpu, "GpuRunner", lambda: Forgetting(h100))
    got = {}

    def fake_dynamic(dw, templates, runner, db, **kw):
        got.update(kw)
        return "result"
    monkeypatch.setattr(dyn_tune, "tune_dynamic", fake_dynamic)
    for asked in (True, False):
        h, closers = bench.gpu_harness(db_path=tmp_path / "d.db", wgmma=False, row_probe=asked)
        try:
            assert h.tune_dynamic(DynamicWorkload.parse("hgemm", "Mx768x768_bt", (16, 64), step=16)) == "result"
            assert got["row_probe"] is asked and h.spent()["compiled"] == 0
        finally:
            for c in reversed(closers):
                c.close()
    # the command line's default is on, --no-row-probe turns it off
    seen = []
    monkeypatch.setattr(bench, "run_benchmark", lambda *a, **kw: seen.append(kw["row_probe"]))
    for argv, want in (([], True), (["--no-row-probe"], False)):
        monkeypatch.setattr("sys.argv", ["dynamic", *argv])
        bench.main()
        assert seen[-1] is want
