"""Ray is an optional extra: importing autosched never imports it, and asking for the Ray runner
where it is not installed says what to install (these run with or without ray)."""

import subprocess
import sys

import pytest


def test_importing_autosched_never_imports_ray():
    code = ("import sys, autosched, autosched.api, autosched.cli, autosched.tuner, autosched.measure.ray_runner; "
            "sys.exit('ray' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_the_ray_runner_without_ray_says_what_to_install(monkeypatch):
    import autosched
    from autosched.measure.ray_runner import RayMissing, RayRunner
    monkeypatch.setitem(sys.modules, "ray", None)       # import ray raises ImportError
    with pytest.raises(RayMissing, match=r"pip install 'autosched\[cluster\]'"):
        RayRunner(recordings=[])
    with pytest.raises(autosched.AutoschedError, match=r"ray, which is not installed.*autosched\[cluster\]"):
        autosched.tune(("gemv-q4f16", "4096x4096"), cluster="auto")
    with pytest.raises(autosched.AutoschedError, match=r"autosched\[cluster\]"):
        autosched.api.open_runner("ray", None)
