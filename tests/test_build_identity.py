"""Build identity: a measurement is of the binaries NVRTC made (autosched.identity), so a header edit
that compiles to the same code stales nothing, one that changes code stales, and rows and recordings
named by the source ids of before carry over; how runners and recordings name their build, and how a
recording's rows enter the database."""

import dataclasses
import gzip
import json
import re
import sys

import pytest

import autosched.templates.base as base
from autosched import identity
from autosched.build import compile_spec
from autosched.database import Database
from autosched.device import nvrtc_version
from autosched.identity import build_id, code_digest, is_current, source_id
from autosched.measure.recording import (Recording, ReplayRunner, import_recording, recording_from_db,
                                         shipped_recordings)
from autosched.measure.result import Measurement, Status
from autosched.registry import FAMILIES
from autosched.selection import from_recording
from autosched.templates import GemvQ4F16Template, SgemmTemplate
from autosched.workloads import Sgemm

from synthetic_recording import synthetic  # noqa: F401  (fixture)

TEMPLATES = {t.family: t for f in FAMILIES.values() for t in f.templates}
OK = Measurement(Status.OK, 1.0, 1.0, 0.0, 0.0)


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    """This machine's ledger in a fresh folder, and no id remembered from before."""
    monkeypatch.setenv("AUTOSCHED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(identity, "_memo", {})
    return tmp_path / "cache" / "build_ids.json"


def _edited(monkeypatch, template, edit) -> None:
    """The template's kernel source, as render and the source hash read it, edited by `edit`."""
    original = base.kernel_source
    monkeypatch.setattr(base, "kernel_source", lambda h, package="autosched.kernels", _seen=frozenset(): (
        edit(original(h, package)) if h == template.header else original(h, package, _seen)))
    monkeypatch.setattr(sys.modules[type(template).__module__], "kernel_source", base.kernel_source)


def test_nvrtc_code_is_deterministic_and_the_digest_reads_only_the_code(h100):
    t = SgemmTemplate()
    w = Sgemm.from_shape("300x260x200")
    spec = t.render(w, t.default_config(w, h100), h100)
    a, b = compile_spec(spec), compile_spec(spec)
    # the code is: (the whole file may not be; once in a long test run two compiles' section tables
    # sat at different offsets, which is why the digest reads the code sections only)
    assert a.ok and code_digest(a.cubin) == code_digest(b.cubin)
    # gemv_q4f16's cubins name a global of internal linkage with a hash that changes every compile
    g = GemvQ4F16Template()
    wq = FAMILIES["gemv-q4f16"].parse("264x4128")
    q = g.render(wq, g.default_config(wq, h100), h100)
    assert len({code_digest(compile_spec(q).cubin) for _ in range(3)}) == 1
    commented = dataclasses.replace(spec, source="// a comment\n" + spec.source)
    c = compile_spec(commented)
    assert commented.source_hash != spec.source_hash and code_digest(c.cubin) == code_digest(a.cubin)
    with pytest.raises(ValueError, match="ELF64"):
        code_digest(b"not a cubin")


def test_every_template_has_a_binary_build_id_that_answers_for_its_source_id():
    ids = {}
    for family, t in TEMPLATES.items():
        b = build_id(t)
        assert re.fullmatch(r"bin-[0-9a-f]{12}/nvrtc-\d+\.\d+/sm_\d+a?", b), b
        assert b.aliases[0] == source_id(t) == f"{t.source_hash()[:12]}/nvrtc-{nvrtc_version()}"
        assert build_id(type(t)()) == b and is_current(source_id(t), t) and is_current(str(b), t)
        ids[family] = str(b)
    assert len(set(ids.values())) == len(ids)


@pytest.mark.parametrize("family", ["gemv_dense", "hgemm_wgmma"])
def test_the_shipped_ledger_names_the_shipped_sources_as_this_nvrtc_compiles_them(ledger, family):
    """Compiled again here, the current source makes the code the shipped ledger says; for hgemm_wgmma
    that is also the code of the source its shipped recordings name, so they still serve."""
    t = TEMPLATES[family]
    shipped = json.loads(identity.SHIPPED_LEDGER.read_text())
    known = shipped[t.family].get(t.source_hash()[:12], {}).get(nvrtc_version())
    if known is None:
        pytest.skip(f"{t.header} changed since the ledger was shipped (python -m autosched.identity)")
    assert identity.program_digest(t, nvrtc_version()) == known
    if family == "hgemm_wgmma":
        recorded = {r.build.split("/")[0] for r in (Recording.load(p) for p in shipped_recordings())
                    if r.template == family}
        assert recorded and all(shipped[family][src][nvrtc_version()] == known for src in recorded)


def test_a_header_edit_that_compiles_to_the_same_code_stales_nothing(ledger, tmp_path, monkeypatch, h100):
    t = SgemmTemplate()
    before, old_source = build_id(t), source_id(t)
    w = Sgemm.from_shape("300x260x200")
    cfg = t.default_config(w, h100)
    with Database(tmp_path / "db") as db:
        db.add(w.key, h100.key, t.family, cfg, OK, build=before)
        _edited(monkeypatch, t, lambda s: "// a comment, and a function nothing calls\n"
                "__device__ inline int autosched_unused(int x) { return x + 1; }\n" + s)
        identity._memo.clear()
        edited = SgemmTemplate()
        assert edited.source_hash() != t.source_hash()
        after = build_id(edited)
        assert after == before and old_source in after.aliases and source_id(edited) in after.aliases
        assert len(db.measured(w.key, h100.key, t.family, build=after)) == 1
        assert db.stale({t.family: after}) == {}


def test_an_edit_that_changes_code_stales(ledger, tmp_path, monkeypatch, h100):
    t = SgemmTemplate()
    before, old_source = build_id(t), source_id(t)
    w = Sgemm.from_shape("300x260x200")
    assert ": 0.f;" in base.kernel_source(t.header)          # the padding of a ragged edge
    _edited(monkeypatch, t, lambda s: s.replace(": 0.f;", ": 1.f;", 1))
    identity._memo.clear()
    edited = SgemmTemplate()
    after = build_id(edited)
    assert after != before and old_source not in after.aliases and not is_current(str(before), edited)
    with Database(tmp_path / "db") as db:
        db.add(w.key, h100.key, t.family, t.default_config(w, h100), OK, build=before)
        assert db.measured(w.key, h100.key, t.family, build=after) == {}
        assert db.stale({t.family: after}) == {(w.key, h100.key, t.family): 1}      # kept, counted, not used


def test_rows_and_recordings_of_source_ids_carry_over(ledger, tmp_path, monkeypatch, synthetic, h100):  # noqa: F811
    t = GemvQ4F16Template()
    w, dev, loaded = synthetic.workload, synthetic.device, synthetic.load()
    old = source_id(t)                      # how a row was named before binary ids
    cfgs = synthetic.configs[:4]
    with Database(tmp_path / "db") as db:
        db.add(w.key, dev.key, t.family, cfgs[0], OK, build=old)
        db.add(w.key, dev.key, t.family, cfgs[1], OK, build=build_id(t))
        db.add(w.key, dev.key, t.family, cfgs[2], OK, build="0123456789ab/nvrtc-" + nvrtc_version())  # other code
        db.add(w.key, dev.key, t.family, cfgs[3], OK, build=f"{t.source_hash()[:12]}/nvrtc-1.0")  # other NVRTC
        assert len(db.measured(w.key, dev.key, t.family, build=build_id(t))) == 2
        assert db.stale({t.family: build_id(t)}) == {(w.key, dev.key, t.family): 2}
        rec = recording_from_db(db, w, t, dev, {}, {}, "2026-11-28")
        assert rec.build == build_id(t) and len(rec.entries) == 2          # written under the binary id
    # a recording named by the source id of a source the ledger saw compile to the same code
    identity.record(t.family, "feedfacecafe", nvrtc_version(), str(build_id(t)).split("/")[0][4:])
    identity._memo.clear()
    assert "feedfacecafe/nvrtc-" + nvrtc_version() in build_id(t).aliases
    r = Recording(loaded.workload_key, loaded.template, loaded.device, loaded.knobs,
                  build="feedfacecafe/nvrtc-" + nvrtc_version())
    r.add(cfgs[0], OK)
    monkeypatch.setattr("autosched.selection.find_recording", lambda *a, **k: r)
    assert [c.config for c in from_recording(w, t, dev)] == [cfgs[0]]
    r.build = "0123456789ab/nvrtc-" + nvrtc_version()
    assert from_recording(w, t, dev) == []


def test_a_template_without_a_header_has_no_source_hash():
    with pytest.raises(ValueError, match="names no header"):
        base.Template().source_hash()


def test_a_recording_keeps_its_build_id_and_an_old_one_is_named_by_its_file(synthetic, tmp_path):  # noqa: F811
    loaded = synthetic.load()
    t = synthetic.template
    rec = Recording(loaded.workload_key, loaded.template, loaded.device, loaded.knobs, build="abcdef012345/nvrtc-12.9")
    for cfg in synthetic.configs[:20]:
        rec.add(cfg, loaded.lookup(cfg))
    rec.save(tmp_path / "new.json.gz")
    back = Recording.load(tmp_path / "new.json.gz")
    assert back.build == back.build_id == "abcdef012345/nvrtc-12.9"
    assert ReplayRunner(back).build_id(t) == "abcdef012345/nvrtc-12.9"
    # the same file written by a version from before build ids
    with gzip.open(tmp_path / "new.json.gz", "rt") as f:
        doc = json.load(f)
    del doc["build"]
    with gzip.open(tmp_path / "old.json.gz", "wt") as f:
        json.dump(doc, f)
    old = Recording.load(tmp_path / "old.json.gz")
    assert old.build == "" and len(old.entries) == 20
    assert old.build_id == ReplayRunner(old).build_id(t) == "recording:old.json.gz"
    assert Recording.load(tmp_path / "old.json.gz").build_id == old.build_id        # stable


def test_recording_from_db_takes_one_build_and_import_puts_it_back_under_it(synthetic, tmp_path):  # noqa: F811
    loaded = synthetic.load()
    w, t, dev = synthetic.workload, synthetic.template, synthetic.device
    cfgs = synthetic.configs[:30]
    with Database(tmp_path / "db") as db:
        for c in cfgs[:20]:
            db.add(w.key, dev.key, t.family, c, loaded.lookup(c), build=build_id(t))
        for c in cfgs[20:]:
            db.add(w.key, dev.key, t.family, c, loaded.lookup(c), build="stale/nvrtc-1.0")
        rec = recording_from_db(db, w, t, dev, {}, {"runner": "gpu"}, "2025-01-01")
        other = recording_from_db(db, w, t, dev, {}, {}, "2025-01-01", build="stale/nvrtc-1.0")
    assert rec.build == build_id(t) and len(rec.entries) == 20
    assert other.build == "stale/nvrtc-1.0" and len(other.entries) == 10
    rec.save(tmp_path / "r.json.gz")
    back = Recording.load(tmp_path / "r.json.gz")
    with Database(tmp_path / "db2") as db:
        assert import_recording(db, back) == 20
        rows = db.measured(w.key, dev.key, t.family, build=build_id(t))
        assert len(rows) == 20 and db.stale({t.family: build_id(t)}) == {}
        r = next(iter(rows.values()))
        assert r.measurement.source == "gpu (recording r.json.gz)" and r.versions == {"runner": "gpu"}
    with Database(tmp_path / "db3") as db:       # a recording from before build ids: stale here
        assert import_recording(db, Recording.load(synthetic.path)) == len(loaded.entries)
        assert db.stale({t.family: build_id(t)}) == {(w.key, dev.key, t.family): len(loaded.entries)}
        assert len(db.measured(w.key, dev.key, t.family, build="recording:x.json.gz")) == len(loaded.entries)


def test_a_replay_of_the_local_build_counts_as_the_local_build(synthetic, tmp_path):  # noqa: F811
    loaded = synthetic.load()
    t = synthetic.template
    rec = Recording(loaded.workload_key, loaded.template, loaded.device, loaded.knobs, build=build_id(t))
    rec.add(synthetic.configs[0], Measurement(Status.OK, 1.0, 1.0, 0.0, 0.0))
    assert ReplayRunner(rec).build_id(t) == build_id(t)


def test_a_probe_is_named_by_the_code_most_of_its_compiles_make(monkeypatch):
    """ptxas now and then makes other code for the same input: a probe's digest is the most common of
    identity.PROBE_COMPILES compiles, so one odd compile neither stales nor renames a program."""
    t = SgemmTemplate()
    real = identity.program_digest(t, nvrtc_version())
    seen = {"n": 0}
    original = identity.compile_spec

    def odd_second_compile(spec):
        seen["n"] += 1
        b = original(spec)
        if seen["n"] == 1:       # the first probe's first compile: code of its own
            b = dataclasses.replace(b, cubin=original(dataclasses.replace(
                spec, name_expression=identity.probe_specs(t)[-1].name_expression)).cubin)
        return b
    monkeypatch.setattr(identity, "compile_spec", odd_second_compile)
    assert identity.PROBE_COMPILES >= 3 and identity.program_digest(t, nvrtc_version()) == real
