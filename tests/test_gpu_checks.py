"""The device checks as data (scripts/gpu_checks.toml) and their driver (scripts/gpu_check.py), on the CPU:
every stage well formed, every script and harness mode a command names present, and the driver's
steps (time limit, log, env, sanitizer expansion, stop on failure) on a tiny stage of shell commands."""

import ast
import importlib.util
import re
import tomllib

from autosched.registry import FAMILIES
from source_literals import ROOT

STAGES = tomllib.loads((ROOT / "scripts/gpu_checks.toml").read_text())


def _driver():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts/gpu_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _modes(script: str) -> set:
    tree = ast.parse((ROOT / script).read_text())
    table = next(n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "MODES")
    return {k.value for k in table.keys}


def test_every_stage_is_well_formed():
    assert {"tests", "sanitize", "splitk", "dyn-splitk", "swap", "verify", "dataflow", "prefill-tc-attn"} <= set(STAGES)
    for name, stage in STAGES.items():
        assert stage["about"] and stage["step"], name
        logs = [s["log"] for step in stage["step"] for s in _driver().expand(step)]
        assert len(logs) == len(set(logs)), name
        for step in stage["step"]:
            assert {"name", "log", "seconds", "run"} <= set(step) and step["seconds"] > 0, (name, step)


def test_every_script_and_mode_a_command_names_exists():
    modes = {"scripts/timing.py": _modes("scripts/timing.py"),
             "scripts/sanitize.py": _modes("scripts/sanitize.py") | set(FAMILIES)}
    for name, stage in STAGES.items():
        for step in stage["step"]:
            for script, mode in re.findall(r"(scripts/[\w/]+\.py)(?: (\S+))?", step["run"]):
                assert (ROOT / script).is_file(), (name, script)
                if script in modes:
                    assert mode in modes[script], (name, script, mode)


def test_the_driver_runs_a_stage_step_by_step(tmp_path, capsys):
    gc = _driver()
    stage = {"env": {"WHO": "stage"}, "step": [
        {"name": "one", "log": "one.log", "seconds": 5, "run": 'echo "$WHO $MINE"', "env": {"MINE": 1}},
        {"name": "slow", "log": "slow.log", "seconds": 1, "run": "sleep 3"},
        {"name": "fails", "log": "fails.log", "seconds": 5, "run": "echo no; exit 3", "stop": True},
        {"name": "never", "log": "never.log", "seconds": 5, "run": "echo never"}]}
    assert gc.run_stage("tiny", stage, tmp_path) is False
    assert (tmp_path / "one.log").read_text() == "stage 1\n" and not (tmp_path / "never.log").exists()
    out = capsys.readouterr().out
    assert "rc=124" in out and "rc=3" in out           # the time limit, then the failing step that stops the run
    both = gc.expand({"name": "x", "log": "x.log", "seconds": 5, "run": "scripts/sanitize.py hgemm", "sanitize": "SUMMARY"})
    assert [s["log"] for s in both] == ["memcheck-x.log", "racecheck-x.log"]
    assert all(s["run"].startswith(f"compute-sanitizer --tool {t} ") for s, t in zip(both, ("memcheck", "racecheck")))
