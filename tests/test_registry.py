"""The family registry: every entry is complete and consistent, so the CLI, bench, report and the
sanitizer script can iterate over it."""

import subprocess
import sys

import pytest

from autosched.registry import FAMILIES, family, family_of, template_named, templates_for
from autosched.templates.base import Template


@pytest.fixture(scope="module")
def h100_info():
    from autosched.measure.recording import Recording, shipped_recordings
    return Recording.load(shipped_recordings()[0]).device


@pytest.mark.parametrize("name", list(FAMILIES))
def test_entry_is_complete(name, h100_info):
    f = FAMILIES[name]
    assert f.name == name and f.summary and f.shape_help and f.templates
    assert all(isinstance(t, Template) and t.workload_name == f.workload.name for t in f.templates)
    assert family(name) is f and family(f.workload.name) is f
    if f.benchmark:
        assert callable(f.benchmark_fn()) and f.bench_help
    if f.report_section:
        assert callable(f.report_fn()) and f.report
    for shape in f.sanitize_shapes:
        w = f.parse(shape)
        assert family_of(w) is f and templates_for(w)
        for t in f.templates_for(w):
            space = t.space(w, h100_info)
            picks = f.sanitize_picks(t, w, h100_info)
            assert picks and all(space.contains(c) for c in picks), (name, shape, t.family)


def test_template_names_are_unique_and_found():
    names = [t.family for f in FAMILIES.values() for t in f.templates]
    assert len(names) == len(set(names))
    for n in names:
        assert template_named(n).family == n
    with pytest.raises(ValueError, match="unknown template"):
        template_named("nope")


def test_a_template_may_refuse_a_workload():
    f = FAMILIES["sgemm"]
    w = f.parse("8x8x8")

    class Picky(type(f.templates[0])):
        family = "picky"

        def refuses(self, workload):
            return "only square" if workload.M != workload.N else None

    import dataclasses
    g = dataclasses.replace(f, templates=(f.templates[0], Picky()))
    assert [t.family for t in g.templates_for(w)] == ["sgemm", "picky"]
    assert [t.family for t in g.templates_for(g.parse("8x16x8"))] == ["sgemm"]
    assert "serves hgemm, not sgemm" in FAMILIES["hgemm"].templates[0].refuses(w)


def test_cli_choices_and_help_come_from_the_registry():
    out = subprocess.run([sys.executable, "-m", "autosched.cli", "tune", "--help"], capture_output=True,
                         text=True, check=True).stdout
    for f in FAMILIES.values():
        assert f.name in out
    out = subprocess.run([sys.executable, "-m", "autosched.cli", "bench", "--help"], capture_output=True,
                         text=True, check=True).stdout
    for f in FAMILIES.values():
        if f.benchmark:
            assert f.bench_help.split()[0] in out


def test_readme_module_table_names_every_module():
    """'How it is built' in the README lists every module and package of autosched, and nothing gone."""
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    text = (root / "README.md").read_text()
    table = text[text.index("## How it is built"):]
    named = set()
    for cell in re.findall(r"^\| (`autosched/[^|]+)\|", table, re.M):
        for path in re.findall(r"`([\w./*]+)`", cell):
            path = path.removeprefix("autosched/")
            named.add(path.split("*")[0])
    actual = {p.name + ("/" if p.is_dir() else "") for p in (root / "autosched").iterdir()
              if not p.name.startswith("_") and p.name != "data" and (p.is_dir() or p.suffix == ".py")}
    assert actual == named, f"README lacks {sorted(actual - named)}; names gone {sorted(named - actual)}"


def test_family_options_reach_the_workload():
    import inspect
    from autosched.registry import options
    from autosched.workloads import WorkloadError
    for f in FAMILIES.values():
        takes = inspect.signature(f.workload.from_shape).parameters
        for o in f.options:
            assert o.name in takes and o.default in o.choices and o.help
    assert set(options()) == {"layout", "dtype"} and options()["layout"][1] == ["hgemm"]
    h = FAMILIES["hgemm"]
    assert h.parse("8x8x8", layout="TT", dtype="bf16") == h.parse("8x8x8_tt_bf16")
    assert h.parse("8x8x8", layout=None) == h.parse("8x8x8")
    with pytest.raises(WorkloadError, match="gemv-q4f16 takes no option --dtype; --dtype is for hgemm"):
        FAMILIES["gemv-q4f16"].parse("4096x4096", dtype="bf16")
    with pytest.raises(WorkloadError, match=r"hgemm takes no option --trans \(its options: --layout, --dtype\)"):
        h.parse("8x8x8", trans="1")
    with pytest.raises(WorkloadError, match="hgemm: --layout must be one of nn, nt, tn, tt, bb, got 3"):
        h.parse("8x8x8", layout=3)


def test_every_hgemm_layout_and_dtype_has_a_template():
    from autosched.registry import templates_for
    h = FAMILIES["hgemm"]
    for dtype in ("fp16", "bf16"):
        for layout in ("nn", "nt", "tn", "tt"):
            # hgemm_stream streams a linear layer's weight: nt only
            assert [t.family for t in templates_for(h.parse("16x16x16", layout=layout, dtype=dtype))] == [
                "hgemm_mma", "hgemm_wmma", "hgemm_wgmma", "hgemm_wgmma_splitk",
                *(["hgemm_stream"] if layout == "nt" else []), "hgemm_wgmma_cluster", "hgemm_wgmma_sched",
                *(["hgemm_wgmma_swap"] if layout == "nt" else [])], (layout, dtype)
        assert [t.family for t in templates_for(h.parse("16x16x16_bb", dtype=dtype))] == ["hgemm_wmma"]
        # hgemm_wgmma's TMA store needs C's rows 16-byte aligned: N % 8 (and so its split-K's)
        assert [t.family for t in templates_for(h.parse("16x12x16_bt", dtype=dtype))] == [
            "hgemm_mma", "hgemm_wmma", "hgemm_stream"]
        # past 256 rows of A the weight would be streamed once per 128 of them
        assert "hgemm_stream" not in [t.family for t in templates_for(h.parse("257x64x64_bt", dtype=dtype))]


def test_templates_for_gives_every_reason(monkeypatch):
    import dataclasses

    from autosched import registry
    from autosched.registry import templates_for
    from autosched.workloads import WorkloadError
    h = FAMILIES["hgemm"]
    monkeypatch.setitem(registry.FAMILIES, "hgemm", dataclasses.replace(h, templates=h.templates[:1]))
    with pytest.raises(WorkloadError, match=r"no template of hgemm accepts hgemm:M=16,N=16,K=16,b_col=0,blocked=1,"
                                            r"bf16=1 \(hgemm_mma: its kernel reads row layouts, not the blocked"):
        templates_for(h.parse("16x16x16_bb_bf16"))
