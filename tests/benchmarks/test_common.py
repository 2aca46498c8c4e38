"""The benchmarks' tuning phase, on the replay runner: each shape tuned, its default measured too."""

import pytest

from autosched.benchmarks.common import tune_all
from autosched.database import Database
from autosched.measure.recording import Recording, ReplayRunner
from autosched.space import config_hash
from autosched.templates import GemvQ4F16Template
from synthetic_recording import synthetic  # noqa: F401  (fixture)


def test_tune_all_tunes_and_records_the_default(synthetic, tmp_path):   # noqa: F811
    t = GemvQ4F16Template()
    w = synthetic.workload
    runner = ReplayRunner(Recording.load(synthetic.path))
    lines = []
    with Database(tmp_path / "db") as db:
        out = tune_all([w], t, runner, db, None, strategy="random", trials=40, time_per_shape_s=None,
                       log=lines.append)
        measured = db.measured(w.key, runner.device_info.key, t.family)
    res = out[w.key]
    assert res.trials == 40 and res.measured_now == 40
    default = t.default_config(w, runner.device_info)
    assert config_hash(default) in measured
    # 40 tuning trials, plus the default unless the search had already drawn it
    assert res.total_trials == len(measured) and len(measured) in (40, 41)
    assert lines and lines[0].startswith(f"tuned {w.shape_str}:")


def test_rerank_times_the_pick_and_the_fastest_records_and_keeps_the_fastest_here(tmp_path, h100):
    from types import SimpleNamespace

    from autosched.benchmarks.common import rerank_configs
    from autosched.identity import build_id
    from autosched.measure.result import Measurement, Status
    from autosched.templates import SgemmTemplate
    from autosched.workloads import Sgemm
    device = h100
    w, t = Sgemm.from_shape("256x256x256"), SgemmTemplate()
    cfgs = list(t.space(w, device))[:6]
    builder = SimpleNamespace(submit=lambda spec: SimpleNamespace(result=lambda: spec.name_expression))
    with Database(tmp_path / "db") as db:
        # the database ranks cfgs[1] < cfgs[2] < ... ; cfgs[0] is the tuning's pick, not in it
        for i, c in enumerate(cfgs[1:], 1):
            db.add(w.key, device.key, t.family, c, Measurement(Status.OK, median_us=float(i), min_us=float(i)),
                   build=build_id(t))
        db.add(w.key, device.key, t.family, cfgs[5], Measurement(Status.WRONG, median_us=0.5), build=build_id(t))
        names = {t.render(w, c, device).name_expression: i for i, c in enumerate(cfgs)}
        here = {0: 9.0, 1: 7.0, 2: None, 3: 3.0, 4: 1.0}     # this process's times; 2 fails its check

        def time_config(spec, binary):
            us = here[names[binary]]
            if us is None:
                raise RuntimeError("failed its check")
            return us
        best, tried = rerank_configs(w, t, device, db, cfgs[0], builder, 4, time_config)
    # k=4: the pick first, then the database's fastest passing records in order; the wrong one never
    assert [e["config"] for e in tried] == cfgs[:4]
    assert [e.get("tuner_us") for e in tried] == [None, 1.0, 2.0, 3.0]
    assert "error" in tried[2] and "bench_us" not in tried[2]
    assert best == cfgs[3]          # 3.0 us here beats the tuner's favourite (7.0 us here)


def test_gemm_benchmark_hands_cublas_the_logical_operands():
    """A stored (K, M) for sgemm's trans_a is passed to torch.matmul as a transposed view, so
    cuBLAS computes the same product as our kernel."""
    from types import SimpleNamespace

    from autosched.benchmarks.gemm import SHAPES, _operands
    from autosched.workloads import Sgemm

    class View(SimpleNamespace):
        def t(self):
            return View(name=self.name + ".T")
    ops = {"A": View(name="A"), "B": View(name="B")}
    assert [v.name for v in _operands(Sgemm(4, 8, 8, trans_a=1), ops)] == ["A.T", "B"]
    assert [v.name for v in _operands(Sgemm(4, 8, 8), ops)] == ["A", "B"]
    # hgemm's views (every layout, BF16) are autosched.benchmarks.hgemm's, which need torch:
    # tests/benchmarks/test_hgemm_bench.py checks them against numpy where torch is installed
    for op, shapes in SHAPES.items():        # every default shape parses
        from autosched.workloads import WORKLOADS
        assert all(WORKLOADS[op].from_shape(s) for s in shapes)


def test_the_commit_names_a_tree_that_differs_from_it(tmp_path, monkeypatch):
    """git's HEAD, "+dirty" once a tracked file differs from it (a copied tree whose .git is older),
    untracked files aside; $AUTOSCHED_COMMIT wins where it is a full sha, else "unknown"."""
    import shutil
    import subprocess

    from autosched.benchmarks.common import git_commit
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    monkeypatch.delenv("AUTOSCHED_COMMIT", raising=False)
    monkeypatch.chdir(tmp_path)
    assert git_commit() == "unknown"                        # not a repository
    git = lambda *a: subprocess.run(["git", *a], check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    (tmp_path / "k.cuh").write_text("one\n")
    git("add", "k.cuh")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    (tmp_path / "notes.txt").write_text("untracked\n")
    assert git_commit() == head
    (tmp_path / "k.cuh").write_text("two\n")
    assert git_commit() == head + "+dirty"
    monkeypatch.setenv("AUTOSCHED_COMMIT", "a" * 40)
    assert git_commit() == "a" * 40
    monkeypatch.setenv("AUTOSCHED_COMMIT", "abc+ladder")
    assert git_commit() == "unknown"
