"""autosched.tuner.tune against the replay runner over the synthetic recording: the search finds the
recorded best, failed configs never win, budgets hold, and a second run resumes from the database."""

import functools
import math

import pytest

from autosched.database import Database
from autosched.measure.recording import Recording, ReplayRunner
from autosched.measure.result import Status
from autosched.measure.runner import Runner
from autosched.space import config_hash
import autosched.templates.gemv_q4f16 as tmod
from autosched.templates import GemvQ4F16Template
from autosched.tuner import measure_configs, tune
from db_rows import measurement_rows
from synthetic_recording import synthetic  # noqa: F401  (fixture)


class CountingRunner(ReplayRunner):
    """The replay runner, remembering every config it was asked for."""

    def __init__(self, recording):
        super().__init__(recording)
        self.asked: list[str] = []

    def measure(self, spec, binary=None):
        self.asked.append(config_hash(dict(spec.config)))
        return super().measure(spec, binary)


@pytest.fixture(scope="module")
def loaded(synthetic):
    return synthetic.load()


@pytest.fixture(scope="module")
def exhaustive_run(synthetic, loaded):
    """One full exhaustive tune (the whole 34k space), shared by the tests that inspect it."""
    runner = CountingRunner(loaded)
    seen = []
    # speed only (the run renders all 34k configs): a template whose space() is built once, and the
    # kernel source read once; both are pure functions of their arguments
    template = GemvQ4F16Template()
    space = template.space(synthetic.workload, synthetic.device)
    template.space = lambda w, d: space if (w.key, d) == (synthetic.workload.key, synthetic.device) \
        else GemvQ4F16Template.space(template, w, d)
    # an in-memory database: the run commits 34k rows one by one (file-backed DBs: test_resume)
    with pytest.MonkeyPatch.context() as mp, Database(":memory:") as db:
        mp.setattr(tmod, "kernel_source", functools.lru_cache(maxsize=None)(tmod.kernel_source))
        res = tune(synthetic.workload, template, runner, db, strategy="exhaustive",
                   on_result=lambda cfg, m, r: seen.append((cfg, m)))
        best_row = db.best(synthetic.workload.key, synthetic.device.key, synthetic.template.family)
        n_rows = db.conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
    return res, runner, seen, n_rows, best_row


def test_exhaustive_finds_recorded_best(synthetic, loaded, exhaustive_run):
    res, runner, seen, n_rows, best_row = exhaustive_run
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
    assert n_rows == n
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
    assert measurement_rows(path) == 150
    assert len(set(runner.asked)) == 150
    assert sum(res.statuses.values()) == 150
    if strategy == "exhaustive":
        expected_cfgs = synthetic.configs[:150]
        assert runner.asked == [config_hash(c) for c in expected_cfgs]
    else:
        expected_cfgs = [loaded.entries[h][0] for h in runner.asked]
        assert runner.asked != [config_hash(c) for c in synthetic.configs[:150]]
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
    assert measurement_rows(path) == 300

    r2 = CountingRunner(loaded)
    with Database(path) as db:          # a new process would reopen the file like this
        second = tune(w, t, r2, db, strategy="random", trials=500, seed=0)
        measured = db.measured(w.key, key, t.family)
    assert second.measured_now == 200
    assert second.resumed == 300
    assert second.trials == 500
    assert measurement_rows(path) == 500
    assert len(measured) == 500
    # nothing measured twice: the second run asked only for configs the first did not
    assert len(r2.asked) == 200
    assert not set(r1.asked) & set(r2.asked)
    assert set(r1.asked) | set(r2.asked) == set(measured)
    # the resumed trials count in the result: the best is the best over all 500
    all500 = [loaded.entries[h][0] for h in measured]
    want_cfg, want_m = synthetic.best_ok(loaded, all500)
    assert second.best_config == want_cfg
    assert second.best.median_us == want_m.median_us
    assert sum(second.statuses.values()) == 500


def test_time_budget_zero_measures_nothing(synthetic, loaded, tmp_path):
    path = tmp_path / "db"
    runner = CountingRunner(loaded)
    with Database(path) as db:
        res = tune(synthetic.workload, synthetic.template, runner, db, strategy="exhaustive", time_budget_s=0)
    assert res.trials == res.measured_now == res.resumed == 0
    assert runner.asked == []
    assert res.best is None and res.best_config is None
    assert measurement_rows(path) == 0


def test_time_budget_stops_after_the_batch_it_runs_out_in(h100, gemv_template, tmp_path):
    """The batch proposed ahead (its builds already started) is not measured once the time is up:
    a run overruns its budget by at most the batch in flight."""
    import time as _time

    from autosched.measure.result import Measurement, Status
    from autosched.workloads import GemvQ4F16

    class SlowRunner(Runner):
        name, needs_binary, device_info = "slow", False, h100

        def build_id(self, template):
            return "fake-build"

        def measure_stream(self, items):
            for tag, spec, binary in items:
                _time.sleep(0.01)
                yield tag, Measurement(Status.OK, 1.0, 1.0, 0.1, 0.0)

    with Database(tmp_path / "db") as db:
        res = tune(GemvQ4F16(4096, 4096), gemv_template, SlowRunner(), db, strategy="random", trials=100,
                   batch=10, time_budget_s=0.05)
    # batches 1 and 2 are proposed at once, in budget; batch 1 takes ~0.1 s, so batch 2 is dropped
    assert res.measured_now == 10 and res.trials == 10


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
    # every kept config is evaluated (configs the recording lacks either come back NOT_RECORDED
    # or are not proposed at all: the replay may restrict the search to what it can answer)
    answered = {k: v for k, v in res.statuses.items() if k != "not_recorded"}
    assert sum(answered.values()) == len(kept)
    assert res.statuses.get("not_recorded", 0) <= 50
    want_cfg, want_m = synthetic.best_ok(loaded, kept)
    assert res.best_config == want_cfg
    assert res.best.median_us == want_m.median_us


def test_measure_configs(synthetic, loaded):
    cfgs = synthetic.configs[10:15]
    out = measure_configs(synthetic.workload, synthetic.template, ReplayRunner(loaded), cfgs)
    assert out == [loaded.lookup(c) for c in cfgs]


def test_next_batch_builds_while_this_batch_is_measured(h100, gemv_template, tmp_path):
    """Batch k+1 is proposed and its builds submitted while batch k is being measured (a thread
    beside the measuring one), so the strategy, NVRTC and the GPU overlap: the runner holds its first
    result back until batch 2's builds are in, which would never happen were they proposed after."""
    import time
    from concurrent.futures import Future

    from autosched.build import Binary
    from autosched.measure.result import Measurement, Status
    from autosched.workloads import GemvQ4F16

    events = []

    class FakeBuilder:
        def submit(self, spec):
            events.append(("build", spec.name_expression))
            f = Future()
            f.set_result(Binary("k", spec.name_expression, "sym", b"\x7fELF"))
            return f

    class FakeRunner(Runner):
        name, needs_binary, device_info = "fake", True, h100

        def build_id(self, template):
            return "fake-build"

        def measure_stream(self, items):
            deadline = time.monotonic() + 10
            while sum(k == "build" for k, _ in list(events)) < 20 and time.monotonic() < deadline:
                time.sleep(0.005)
            for tag, spec, binary in items:
                events.append(("measure", spec.name_expression))
                yield tag, Measurement(Status.OK, 1.0, 1.0 + len(events) % 7, 0.1, 0.0)

    w = GemvQ4F16(4096, 4096)
    with Database(tmp_path / "db") as db:
        res = tune(w, gemv_template, FakeRunner(), db, strategy="random", trials=30, batch=10,
                   builder=FakeBuilder())
    assert res.measured_now == 30
    kinds = [k for k, _ in events]
    assert kinds.count("build") == 30 and kinds.count("measure") == 30
    # batch 2's 10 builds were submitted while batch 1 was being measured, before its first result
    assert kinds[:20] == ["build"] * 20


@pytest.mark.parametrize("strategy", ["model", "evolutionary", "evolutionary-model"])
def test_resumed_model_search_reports_the_best_of_every_run(synthetic, loaded, tmp_path, strategy):
    """Strategies that skip measured configs: a second run's best is the best over both runs (it
    was the best of the second run's own trials, so `bench` run again could time a worse kernel)."""
    path = tmp_path / "db"
    w, t, key = synthetic.workload, synthetic.template, synthetic.device.key
    with Database(path) as db:
        tune(w, t, CountingRunner(loaded), db, strategy=strategy, trials=120, seed=0)
    r2 = CountingRunner(loaded)
    with Database(path) as db:
        # the budget counts what the database holds: 125 is 5 more than the first run's 120
        second = tune(w, t, r2, db, strategy=strategy, trials=125, seed=1)
        measured = db.measured(w.key, key, t.family)
    assert len(r2.asked) == second.measured_now == 5 and len(measured) == 125
    assert second.resumed == 120 and second.trials == 125
    want_cfg, want_m = synthetic.best_ok(loaded, [loaded.entries[h][0] for h in measured])
    assert second.best_config == want_cfg
    assert second.best.median_us == want_m.median_us


class EditedRunner(CountingRunner):
    """The same numbers, said to be of another build: what the tuner sees after a .cuh edit."""

    def build_id(self, template):
        return "0123456789ab/nvrtc-99.9"


def test_a_kernel_edit_measures_again_instead_of_resuming_from_stale_rows(synthetic, loaded, tmp_path):
    path = tmp_path / "db"
    w, t, key = synthetic.workload, synthetic.template, synthetic.device.key
    with Database(path) as db:
        first = tune(w, t, CountingRunner(loaded), db, strategy="random", trials=100, seed=0)
    assert first.measured_now == 100
    edited = EditedRunner(loaded)
    with Database(path) as db:
        assert db.stale({t.family: edited.build_id(t)}) == {(w.key, key, t.family): 100}
        second = tune(w, t, edited, db, strategy="random", trials=100, seed=0)
        assert db.stale({t.family: edited.build_id(t)}) == {}       # every stale row measured again
        assert {r.build for r in db.measured(w.key, key, t.family).values()} == {edited.build_id(t)}
    assert (second.measured_now, second.resumed) == (100, 0)
    assert len(edited.asked) == 100
    assert measurement_rows(path) == 100            # the same configs: their rows replaced, not added
    again = EditedRunner(loaded)
    with Database(path) as db:
        third = tune(w, t, again, db, strategy="random", trials=100, seed=0)
    assert (third.measured_now, third.resumed, again.asked) == (0, 100, [])


def test_a_replay_run_twice_resumes_under_the_recordings_build_never_the_local_one(synthetic, loaded, tmp_path):
    from autosched.identity import build_id
    path = tmp_path / "db"
    w, t, key = synthetic.workload, synthetic.template, synthetic.device.key
    assert ReplayRunner(loaded).build_id(t) == "recording:x.json.gz"      # an old recording: no build id
    with Database(path) as db:
        tune(w, t, CountingRunner(loaded), db, strategy="random", trials=80, seed=0)
    r2 = CountingRunner(loaded)
    with Database(path) as db:
        second = tune(w, t, r2, db, strategy="random", trials=80, seed=0)
        assert {r.build for r in db.measured(w.key, key, t.family).values()} == {"recording:x.json.gz"}
        assert db.measured(w.key, key, t.family, build=build_id(t)) == {}
        assert db.best(w.key, key, t.family, build=build_id(t)) is None
    assert (second.measured_now, second.resumed, r2.asked) == (0, 80, [])


@pytest.mark.parametrize("strategy", ["model", "evolutionary-model"])
def test_a_rerun_finishes_the_interrupted_budget(synthetic, loaded, tmp_path, strategy):
    """Killed part way through `--trials N`, the same command again measures only what is left of N
    and says how many it took from the database; run once more, it measures nothing."""
    w, t = synthetic.workload, synthetic.template
    path = tmp_path / "db"

    class Killed(CountingRunner):
        def measure(self, spec, binary=None):
            if len(self.asked) == 70:
                raise KeyboardInterrupt        # Ctrl-C part way through the run
            return super().measure(spec, binary)

    with Database(path) as db, pytest.raises(KeyboardInterrupt):
        tune(w, t, Killed(loaded), db, strategy=strategy, trials=200, seed=0)
    with Database(path) as db:
        assert len(db.measured(w.key, synthetic.device.key, t.family)) == 70
        again = tune(w, t, CountingRunner(loaded), db, strategy=strategy, trials=200, seed=0)
        assert len(db.measured(w.key, synthetic.device.key, t.family)) == 200
    assert again.resumed == 70 and again.measured_now == 130
    assert again.trials == 200
    with Database(path) as db:
        third = tune(w, t, CountingRunner(loaded), db, strategy=strategy, trials=200, seed=0)
    assert third.measured_now == 0 and third.resumed == 200 and third.best.median_us == again.best.median_us
