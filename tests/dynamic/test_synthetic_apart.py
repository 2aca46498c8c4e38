"""A synthetic dry run (`tune-dynamic --runner synthetic`) keeps its modelled rows apart: the default
database's best_config and export answers are the same after it as before, and nothing modelled
reaches the measured database or the dynamic results an op serves."""

import pytest

import autosched
import autosched.device
from autosched.cli import main

# a recorded shape, and shapes the dry run below probes (M 64 and 128 of N = K = 4096)
SHAPES = ("4096x4096x4096_bt", "128x4096x4096_bt", "64x4096x4096_bt")


def answers(tmp_path) -> list:
    out = []
    for shape in SHAPES:
        w = autosched.workload("hgemm", shape)
        c = autosched.best_config(w)
        try:
            exported = autosched.export(w, tmp_path / f"{shape}.cu")[1]
        except autosched.AutoschedError as e:
            exported = str(e)
        out.append((c.template, c.config, c.source, exported))
    return out


def test_a_synthetic_run_changes_no_answer_of_the_default_database(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOSCHED_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("AUTOSCHED_RECORDINGS", raising=False)
    monkeypatch.setattr(autosched.device, "gpu_count", lambda: 0)
    before = answers(tmp_path)
    assert main(["tune-dynamic", "hgemm", "--shape", "Mx4096x4096_bt", "--range", "16:128", "--step", "16",
                 "--runner", "synthetic", "--rounds", "1", "--per-round", "4"]) == 0
    assert answers(tmp_path) == before
    home = tmp_path / "home"
    assert not (home / "autosched.db").exists() and not (home / "dynamic").exists()
    assert list((home / "synthetic" / "dynamic").glob("*.json"))
    from autosched.database import Database
    with Database(home / "synthetic" / "autosched.db", readonly=True) as modelled:
        assert any(wk.startswith("hgemm:M=128,N=4096,K=4096") for wk, *_ in modelled.workloads())
