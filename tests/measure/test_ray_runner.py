"""RayRunner on a local Ray cluster of two "nodes" (ray.cluster_utils.Cluster: a head and a worker
raylet, 2 CPUs each) with replay actors over the synthetic recording: the rows and best equal the
single-process replay's with 1, 2 and 4 actors, and an actor killed mid-run, or a whole node
removed, loses nothing and writes nothing twice.  Skipped where ray is not installed."""

from __future__ import annotations

import collections
import json
import warnings

import pytest

ray = pytest.importorskip("ray")

from synthetic_recording import synthetic  # noqa: E402,F401  (fixture)

from autosched.database import Database  # noqa: E402
from autosched.measure.ray_runner import ActorLostWarning, ClusterLost, RayRunner  # noqa: E402
from autosched.measure.recording import ReplayRunner  # noqa: E402
from autosched.space import config_hash  # noqa: E402
from autosched.tuner import tune  # noqa: E402

BUDGET = 300        # configs a run evaluates: the whole space (67k) would take minutes through Ray


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "include_dashboard": False})
    c.add_node(num_cpus=2)
    ray.init(address=c.address, log_to_driver=False, logging_level="WARNING")
    c.wait_for_nodes()
    yield c
    ray.shutdown()
    c.shutdown()


def rows(db, syn) -> dict:
    """config hash -> the row's config and measurement as JSON text (NaN included), without what
    differs between runs by nature: wall times, timestamps, the runner's name."""
    got = db.measured(syn.workload.key, syn.device.key, syn.template.family)
    return {h: (json.dumps(r.config, sort_keys=True), json.dumps(r.measurement.to_json(), sort_keys=True), r.build)
            for h, r in got.items()}


class CountingDb(Database):
    """Counts every write per config: INSERT OR REPLACE would hide a second one in the row count."""

    def __init__(self, path):
        super().__init__(path)
        self.writes = collections.Counter()

    def add(self, workload_key, device_key, template, config, m, *a, **kw):
        self.writes[config_hash(config)] += 1
        super().add(workload_key, device_key, template, config, m, *a, **kw)


@pytest.fixture(scope="module")
def single(synthetic, tmp_path_factory):
    """The single-process replay runs every Ray run must equal, per strategy."""
    out = {}
    for strategy in ("exhaustive", "random"):
        with Database(tmp_path_factory.mktemp("single") / "db") as db:
            res = tune(synthetic.workload, synthetic.template, ReplayRunner(synthetic.load()), db,
                       strategy=strategy, trials=BUDGET, seed=3, batch=32)
            out[strategy] = (res, rows(db, synthetic))
    return out


# random with 4 actors only: the most out of order, and each run here costs seconds on 2 cores
@pytest.mark.parametrize("strategy, actors", [("exhaustive", 1), ("exhaustive", 2), ("exhaustive", 4), ("random", 4)])
def test_rows_and_best_equal_the_single_process_replay(cluster, synthetic, single, tmp_path, actors, strategy):
    want, want_rows = single[strategy]
    with RayRunner(recordings=[synthetic.load()], actors=actors) as run, CountingDb(tmp_path / "db") as db:
        assert len(run.actors) == actors and run.device_info.key == synthetic.device.key
        if actors == 4:
            assert run.nodes == 2       # 4 actors of 1 CPU fill both 2-CPU nodes
        res = tune(synthetic.workload, synthetic.template, run, db, strategy=strategy, trials=BUDGET, seed=3, batch=32)
        got_rows = rows(db, synthetic)
        assert set(db.writes.values()) == {1}
    assert len(got_rows) == BUDGET and got_rows == want_rows
    assert (res.best_config, res.best.median_us, res.best.source) == (want.best_config, want.best.median_us,
                                                                     want.best.source)
    assert (res.trials, res.measured_now, res.statuses) == (want.trials, want.measured_now, want.statuses)
    assert res.runner == "ray-replay"


def _killing_run(synthetic, db, run, after: int, kill):
    """An exhaustive tune that calls kill() once `after` results are in; (result, configs seen by
    on_result in order)."""
    seen = []

    def on_result(cfg, m, res):
        seen.append(config_hash(cfg))
        if len(seen) == after:
            kill()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = tune(synthetic.workload, synthetic.template, run, db, strategy="exhaustive", trials=BUDGET,
                   batch=32, on_result=on_result)
    return res, seen, [w for w in caught if issubclass(w.category, ActorLostWarning)]


def _expected(synthetic, single) -> dict:
    return single["exhaustive"][1]


def test_an_actor_killed_mid_run_loses_nothing_and_writes_nothing_twice(cluster, synthetic, single, tmp_path):
    with RayRunner(recordings=[synthetic.load()], actors=3, measure_delay_s=0.002) as run, \
            CountingDb(tmp_path / "db") as db:
        victim = run.actors[1]
        res, seen, lost = _killing_run(synthetic, db, run, 40, lambda: ray.kill(victim))
        assert len(run._alive) == 2 and len(run.lost) == 1 and len(lost) == 1
        assert run.requeued >= 1          # it had calls queued when it died: they went to the others
        got = rows(db, synthetic)
        writes = dict(db.writes)
    # every config of the budget exactly once: none lost, none measured (written, reported) twice
    assert len(seen) == len(set(seen)) == BUDGET and set(writes.values()) == {1}
    assert got == _expected(synthetic, single)
    assert res.measured_now == BUDGET and res.best_config == single["exhaustive"][0].best_config


def test_a_node_removed_mid_run_loses_nothing(cluster, synthetic, single, tmp_path):
    worker = next(n for n in cluster.worker_nodes)
    try:
        with RayRunner(recordings=[synthetic.load()], actors=4, measure_delay_s=0.002) as run, \
                CountingDb(tmp_path / "db") as db:
            on_worker = sum(i.node_id == worker.node_id for i in run.infos)
            assert on_worker >= 1
            res, seen, lost = _killing_run(synthetic, db, run, 40, lambda: cluster.remove_node(worker))
            assert len(run.lost) == on_worker and len(run._alive) == 4 - on_worker
            got = rows(db, synthetic)
            writes = dict(db.writes)
    finally:
        cluster.add_node(num_cpus=2)       # the next test has two nodes again
        cluster.wait_for_nodes()
    assert len(seen) == len(set(seen)) == BUDGET and set(writes.values()) == {1}
    assert got == _expected(synthetic, single)


def test_every_actor_dead_is_a_clear_error_and_the_run_resumes(cluster, synthetic, single, tmp_path):
    with CountingDb(tmp_path / "db") as db:
        with RayRunner(recordings=[synthetic.load()], actors=1) as run:
            with pytest.raises(ClusterLost, match="every measurement actor .* died .* run again to resume"):
                _killing_run(synthetic, db, run, 25, lambda: ray.kill(run.actors[0]))
        first = len(rows(db, synthetic))
        assert 25 <= first < BUDGET
        with RayRunner(recordings=[synthetic.load()], actors=2) as run:
            res = tune(synthetic.workload, synthetic.template, run, db, strategy="exhaustive", trials=BUDGET, batch=32)
        assert res.resumed == first and res.measured_now == BUDGET - first
        assert set(db.writes.values()) == {1}
        assert rows(db, synthetic) == _expected(synthetic, single)


def test_a_cpu_cluster_has_no_gpu_to_measure_on(cluster):
    with pytest.raises(RuntimeError, match="no GPU in the Ray cluster .* can only replay"):
        RayRunner()
    assert ray.is_initialized()        # the caller's connection is left alone


def test_actors_measuring_for_different_gpus_are_refused(cluster, synthetic):
    import dataclasses

    from autosched.measure.ray_runner import ActorInfo, check_one_device
    with RayRunner(recordings=[synthetic.load()], actors=2) as run:
        infos = run.infos
    check_one_device(infos)             # one kind: accepted
    a100 = dataclasses.replace(synthetic.device, name="NVIDIA A100-SXM4-80GB", cc=(8, 0))
    mixed = infos + [ActorInfo(a100, "node", "host", 1)]
    with pytest.raises(RuntimeError, match=r"GPUs of different kinds in one Ray cluster: 1 x .*A100.*, 2 x .*H100"
                                           r".*one device key"):
        check_one_device(mixed)


def test_cli_tune_on_the_cluster_says_replay(cluster, synthetic, monkeypatch, tmp_path, capsys):
    """--cluster through api.tune(cluster=) and open_runner: replay actors on this CPU cluster, the
    note the local replay prints, the rows in the database given."""
    from autosched.cli import main
    monkeypatch.setenv("AUTOSCHED_RECORDINGS", str(synthetic.dir))
    monkeypatch.setenv("COLUMNS", "250")         # the note on one line
    assert main(["tune", "gemv-q4f16", "--shape", "4096x4096", "--cluster", "auto", "--trials", "20",
                 "--strategy", "random", "--db", str(tmp_path / "db")]) == 0
    out = capsys.readouterr().out
    assert "REPLAY: no GPU used; answers are real measurements recorded on NVIDIA H100" in out
    assert "Ray replay actors (2 nodes)" in out and "replayed from x.json.gz" in out
    with Database(tmp_path / "db") as db:
        assert len(rows(db, synthetic)) == 20
    assert ray.is_initialized()        # the caller's connection is left alone


def test_record_on_a_cluster_without_gpus_says_it_needs_them(cluster, synthetic, tmp_path):
    import autosched
    with pytest.raises(autosched.AutoschedError, match="no GPU in the Ray cluster at auto .*needs GPU nodes"):
        autosched.record(synthetic.workload, cluster="auto", db=tmp_path / "db", out=tmp_path / "r.json.gz")
    assert ray.is_initialized() and not (tmp_path / "r.json.gz").exists()
