"""The benchmarks' tuning phase, on the replay runner: each shape tuned, its default measured too."""

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
