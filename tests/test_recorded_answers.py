"""On a machine without a GPU, a shape that ships a recording answers from it, and from the rows a
replay of it wrote, not from a prediction; `devices` does not call those rows another build's.
The recording's GPU builds with its own NVRTC (named in its device key), not this machine's.  A shape
no recording holds is refused at once, from the recordings' headers."""

import time

import autosched
import autosched.device
from autosched.identity import build_id, current_builds
from autosched.database import Database
from autosched.measure.recording import ReplayRunner, find_recording
from autosched.measure.result import Measurement, Status
from autosched.registry import template_named

SHAPE = "4096x4096x4096_bt"


def test_the_current_build_on_a_device_takes_the_nvrtc_of_its_key():
    t = template_named("gemv_q4f16")
    assert f"{t.source_hash()[:12]}/nvrtc-13.0" in current_builds(t, "NVIDIA H100|sm_90|driver 580|cuda 13.0").names
    assert current_builds(t, "a key without a cuda version").names == build_id(t).names


def test_a_recorded_and_replayed_hgemm_shape_answers_from_them_not_a_prediction(tmp_path, monkeypatch):
    monkeypatch.delenv("AUTOSCHED_RECORDINGS", raising=False)
    monkeypatch.setattr(autosched.device, "gpu_count", lambda: 0)
    w = autosched.workload("hgemm", SHAPE)
    got = autosched.best_config(w, db=tmp_path / "db")
    rec = find_recording(w.key, got.template)
    assert got.source == f"recording {rec.name}"
    # what a replay of that recording stores: its rows under the recording's build
    config, m = rec.fastest(2)[1]
    t = template_named(rec.template)
    with Database(tmp_path / "db") as db:
        db.add(w.key, rec.device.key, rec.template, config, Measurement(Status.OK, 1.0, 1.0, 0.0, 0.0),
               build=ReplayRunner(rec).build_id(t))
    got = autosched.best_config(w, db=tmp_path / "db")
    assert (got.source, got.config) == ("database", config)
    assert autosched.stale_rows(tmp_path / "db") == {}


def test_an_unrecorded_shape_is_refused_before_any_recording_is_read(tmp_path, monkeypatch, capsys):
    from autosched.cli import main
    from autosched.measure import recording
    monkeypatch.delenv("AUTOSCHED_RECORDINGS", raising=False)
    monkeypatch.setattr(autosched.device, "gpu_count", lambda: 0)
    monkeypatch.setattr(recording, "_LOADED", {})

    def no_rows(path):
        raise AssertionError(f"read every row of {path} to refuse a shape no recording holds")
    monkeypatch.setattr(recording.Recording, "load", no_rows)
    t0 = time.monotonic()
    assert main(["tune", "hgemm", "--shape", "1000x1000x1000", "--runner", "replay", "--db", str(tmp_path / "db")]) == 2
    assert time.monotonic() - t0 < 10
    err = " ".join(capsys.readouterr().err.split())
    assert "no recording for hgemm:M=1000,N=1000,K=1000" in err and "4096x4096x4096_bt" in err
    assert not (tmp_path / "db").exists()
