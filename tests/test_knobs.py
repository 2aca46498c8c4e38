"""autosched/knobs.py: every AUTOSCHED_* variable declared there, read when used, overridden in a scope;
and no other module of the package reads one from the environment."""

import ast
from pathlib import Path

import pytest

from autosched import knobs

PACKAGE = Path(__file__).resolve().parents[1] / "autosched"
PENDING: set = set()      # modules still reading AUTOSCHED_* themselves: none


def test_a_switch_is_its_default_until_the_variable_is_set(monkeypatch):
    monkeypatch.delenv("AUTOSCHED_DYN_STREAM", raising=False)
    assert knobs.DYN_STREAM.enabled() is knobs.DYN_STREAM.default is True
    for value, want in (("1", True), ("yes", True), (" on ", True), ("0", False), (" false", False),
                        ("no", False), ("", False), ("  ", False)):
        monkeypatch.setenv("AUTOSCHED_DYN_STREAM", value)           # read at the call, not at import
        assert knobs.DYN_STREAM.enabled() is want
        assert knobs.env_switch("AUTOSCHED_DYN_STREAM", not want) is want


def test_env_switch_takes_only_declared_variables(monkeypatch):
    monkeypatch.delenv("AUTOSCHED_PREFILL_TC_ATTN", raising=False)
    assert knobs.env_switch("AUTOSCHED_PREFILL_TC_ATTN", True) is True
    with pytest.raises(KeyError, match="AUTOSCHED_NO_SUCH"):
        knobs.env_switch("AUTOSCHED_NO_SUCH", True)


def test_a_scope_overrides_and_restores(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOSCHED_WGMMA_IN_AUTO", "1")
    monkeypatch.setenv("AUTOSCHED_RECORDINGS", "/from/env")
    with knobs.scope(WGMMA_IN_AUTO=False, RECORDINGS=str(tmp_path)):
        assert knobs.WGMMA_IN_AUTO.enabled() is False and knobs.RECORDINGS.get() == str(tmp_path)
        with knobs.scope(WGMMA_IN_AUTO=None):                   # unset: the default again
            assert knobs.WGMMA_IN_AUTO.enabled() is knobs.WGMMA_IN_AUTO.default
        assert knobs.WGMMA_IN_AUTO.enabled() is False
    assert knobs.WGMMA_IN_AUTO.enabled() is True and knobs.RECORDINGS.get() == "/from/env"
    with pytest.raises(KeyError, match="NOT_A_KNOB"):
        with knobs.scope(NOT_A_KNOB=1):
            pass


def test_every_knob_names_an_autosched_variable_once():
    envs = [k.env for k in knobs.ALL.values()]
    assert all(e.startswith("AUTOSCHED_") for e in envs) and len(set(envs)) == len(envs)


def _environment_reads(tree) -> list[int]:
    """Lines where os.environ / os.getenv is read with an AUTOSCHED_* name."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Call, ast.Subscript)):
            target = node.func if isinstance(node, ast.Call) else node.value
            text = ast.unparse(target)
            if "environ" not in text and "getenv" not in text:
                continue
            keys = node.args if isinstance(node, ast.Call) else [node.slice]
            if any(isinstance(k, ast.Constant) and str(k.value).startswith("AUTOSCHED_") for k in keys):
                out.append(node.lineno)
    return out


def test_the_scan_finds_an_environment_read():
    src = 'import os\na = os.environ.get("AUTOSCHED_X")\nb = os.environ["AUTOSCHED_Y"]\nc = os.getenv("AUTOSCHED_Z")\n'
    assert _environment_reads(ast.parse(src)) == [2, 3, 4]


def test_nothing_but_knobs_reads_an_autosched_variable():
    found = {str(p.relative_to(PACKAGE)): lines for p in sorted(PACKAGE.rglob("*.py")) if p.name != "knobs.py"
             if (lines := _environment_reads(ast.parse(p.read_text())))}
    assert set(found) <= PENDING, found
