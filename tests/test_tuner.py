"""autosched.tuner.tune against the replay runner over the synthetic recording: the search finds the
recorded best, failed configs never win, budgets hold, and a second run resumes from the database."""

import math
import sqlite3

import pytest

from autosched.database import Database
from autosched.measure.recording import Recording, ReplayRunner
from autosched.measure.result import Status
from autosched.search import make_strategy
from autosched.space import config_hash
from autosched.tuner import measure_configs, tune
from synthetic_recording import synthetic  # noqa: F401  (fixture)


class CountingRunner(ReplayRunner):
    """The replay runner, remembering every config it was asked for."""

    def __init__(self, recording):
        super().__init__(recording)
        self.asked: list[str] = []

    def measure(self, spec, binary=None):
        self.asked.append(config_hash(dict(spec.config)))
        return super().measure(spec, binary)


def row_count(path) -> int:
    conn = sqlite3.connect(str(path))
    try:
        return conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
    finally:
        conn.close()


@pytest.fixture(scope="module")
def loaded(synthetic):
    return synthetic.load()


@pytest.fixture(scope="module")
def exhaustive_run(synthetic, loaded, tmp_path_factory):
    """One full exhaustive tune (the whole 34k space), shared by the tests that inspect it."""
    path = tmp_path_factory.mktemp("exh") / "db.sqlite"
    runner = CountingRunner(loaded)
    seen = []
    with Database(path) as db:
        res = tune(synthetic.workload, synthetic.template, runner, db, strategy="exhaustive",
                   on_result=lambda cfg, m, r: seen.append((cfg, m)))
        best_row = db.best(synthetic.workload.key, synthetic.device.key, synthetic.template.family)
    return res, runner, seen, path, best_row


def test_exhaustive_finds_recorded_best(synthetic, loaded, exhaustive_run):
    res, runner, seen, path, best_row = exhaustive_run
    n = len(synthetic.configs)
    want_cfg, want_m = synthetic.best_ok(loaded)
    assert res.space_size == n
    assert res.trials == res.measured_now == n
    assert res.resumed == 0
    assert res.runner == "replay"
    assert res.workload_key == synthetic.workload.key
    assert res.device_key == synthetic.device.key
    assert res.template == "gemv_q4f16"
    assert res.best_config == want_cfg
    assert res.best.median_us == want_m.median_us
    assert res.best.ok
    assert res.best.source == "replay:x.json.gz"
    # the database agrees
    assert best_row.config == want_cfg
    assert best_row.measurement.median_us == want_m.median_us
    assert row_count(path) == n
    # every config asked for exactly once, in enumeration order
    assert runner.asked == [config_hash(c) for c in synthetic.configs]
    assert [c for c, _ in seen] == synthetic.configs


def test_exhaustive_statuses(synthetic, exhaustive_run):
    res = exhaustive_run[0]
    n_wrong, n_ce = len(synthetic.wrong), len(synthetic.compile_error)
    assert res.statuses == {"ok": len(synthetic.configs) - n_wrong - n_ce, "wrong": n_wrong,
                            "compile_error": n_ce}


def test_failed_configs_never_win(synthetic, loaded, exhaustive_run):
    res, _, _, _, best_row = exhaustive_run
    timed = [(m.median_us, h, m.status) for h, (_, m) in loaded.entries.items() if not math.isnan(m.median_us)]
    timed.sort()
    # the fixture is rigged: the fastest times of all belong to compile errors, then to WRONG configs
    assert timed[0][2] is Status.COMPILE_ERROR
    fastest_wrong = min(t for t in timed if t[2] is Status.WRONG)
    assert fastest_wrong[0] < res.best.median_us
    assert all(t[2] is not Status.OK for t in timed[: len(synthetic.wrong) + len(synthetic.compile_error) // 2])
    h = config_hash(res.best_config)
    assert h not in synthetic.wrong and h not in synthetic.compile_error
    assert config_hash(best_row.config) not in synthetic.wrong | synthetic.compile_error
    assert res.best.median_us == min(t[0] for t in timed if t[2] is Status.OK)


@pytest.mark.parametrize("strategy", ["exhaustive", "random"])
def test_trials_budget(synthetic, loaded, tmp_path, strategy):
    path = tmp_path / "db"
    runner = CountingRunner(loaded)
    calls = []
    with Database(path) as db:
        res = tune(synthetic.workload, synthetic.template, runner, db, strategy=strategy, trials=150, seed=3,
                   on_result=lambda c, m, r: calls.append(c))
    assert res.trials == res.measured_now == len(runner.asked) == len(calls) == 150
    assert res.resumed == 0
    assert row_count(path) == 150
    assert len(set(runner.asked)) == 150
    assert sum(res.statuses.values()) == 150
    if strategy == "exhaustive":
        expected_cfgs = synthetic.configs[:150]
    else:
        expected_cfgs = make_strategy("random", synthetic.template.space(synthetic.workload, synthetic.device),
                                      seed=3).propose(150)
    assert runner.asked == [config_hash(c) for c in expected_cfgs]
    want_cfg, want_m = synthetic.best_ok(loaded, expected_cfgs)
    assert res.best_config == want_cfg
    assert res.best.median_us == want_m.median_us


def test_resume(synthetic, loaded, tmp_path):
    path = tmp_path / "db"
    w, t, key = synthetic.workload, synthetic.template, synthetic.device.key
    r1 = CountingRunner(loaded)
    with Database(path) as db:
        first = tune(w, t, r1, db, strategy="random", trials=300, seed=0)
    assert (first.trials, first.measured_now, first.resumed) == (300, 300, 0)
    assert row_count(path) == 300

    r2 = CountingRunner(loaded)
    with Database(path) as db:          # a new process would reopen the file like this
        second = tune(w, t, r2, db, strategy="random", trials=500, seed=0)
        measured = db.measured(w.key, key, t.family)
    assert second.measured_now == 200
    assert second.resumed == 300
    assert second.trials == 500
    assert row_count(path) == 500
    assert len(measured) == 500
    # nothing measured twice: the second run asked only for configs the first did not
    assert len(r2.asked) == 200
    assert not set(r1.asked) & set(r2.asked)
    assert set(r1.asked) | set(r2.asked) == set(measured)
    # the resumed trials count in the result: the best is the best over all 500
    order = make_strategy("random", t.space(w, synthetic.device), seed=0).propose(500)
    assert {config_hash(c) for c in order} == set(measured)
    want_cfg, want_m = synthetic.best_ok(loaded, order)
    assert second.best_config == want_cfg
    assert second.best.median_us == want_m.median_us
    assert sum(second.statuses.values()) == 500

    # a third run with the same budget measures nothing at all
    r3 = CountingRunner(loaded)
    with Database(path) as db:
        third = tune(w, t, r3, db, strategy="random", trials=500, seed=0)
    assert (third.measured_now, third.resumed, len(r3.asked)) == (0, 500, 0)
    assert third.best_config == want_cfg
    assert row_count(path) == 500


def test_resume_across_strategies(synthetic, loaded, tmp_path):
    """Configs measured by a random run are not measured again by an exhaustive one."""
    path = tmp_path / "db"
    w, t = synthetic.workload, synthetic.template
    with Database(path) as db:
        tune(w, t, CountingRunner(loaded), db, strategy="random", trials=200, seed=5)
    first200 = {config_hash(c) for c in synthetic.configs[:200]}
    with Database(path) as db:
        done = set(db.measured(w.key, synthetic.device.key, t.family))
        r = CountingRunner(loaded)
        res = tune(w, t, r, db, strategy="exhaustive", trials=200)
    overlap = len(first200 & done)
    assert res.resumed == overlap
    assert res.measured_now == 200 - overlap == len(r.asked)
    assert not set(r.asked) & done


def test_time_budget_zero_measures_nothing(synthetic, loaded, tmp_path):
    path = tmp_path / "db"
    runner = CountingRunner(loaded)
    with Database(path) as db:
        res = tune(synthetic.workload, synthetic.template, runner, db, strategy="random", time_budget_s=0)
    assert res.trials == res.measured_now == res.resumed == 0
    assert runner.asked == []
    assert res.best is None and res.best_config is None
    assert row_count(path) == 0


def test_not_recorded_configs_do_not_win(synthetic, loaded, tmp_path):
    """A recording that lacks configs: those come back NOT_RECORDED and are never the best."""
    partial = Recording(loaded.workload_key, loaded.template, loaded.device, loaded.knobs)
    # keep only the slowest half of the first 100 configs
    first = synthetic.configs[:100]
    by_time = sorted(first, key=lambda c: loaded.lookup(c).median_us if loaded.lookup(c).ok else -1)
    kept = by_time[50:]
    for c in kept:
        partial.add(c, loaded.lookup(c))
    with Database(tmp_path / "db") as db:
        res = tune(synthetic.workload, synthetic.template, ReplayRunner(partial), db, trials=100)
    assert res.statuses.get("not_recorded") == 50
    want_cfg, want_m = synthetic.best_ok(loaded, kept)
    assert res.best_config == want_cfg
    assert res.best.median_us == want_m.median_us


def test_measure_configs(synthetic, loaded):
    cfgs = synthetic.configs[10:15]
    out = measure_configs(synthetic.workload, synthetic.template, ReplayRunner(loaded), cfgs)
    assert out == [loaded.lookup(c) for c in cfgs]
