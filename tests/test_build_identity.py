"""Build identity: the kernel source hash and NVRTC version that a measurement is of, how the
templates, runners and recordings name it, and how a recording's rows enter the database."""

import gzip
import hashlib
import json
import re

import pytest

import autosched.templates.base as base
from autosched.build import build_id
from autosched.database import Database
from autosched.device import nvrtc_version
from autosched.measure.recording import Recording, ReplayRunner, import_recording, recording_from_db
from autosched.measure.result import Measurement, Status
from autosched.registry import FAMILIES
from autosched.templates import GemvQ4F16Template

TEMPLATES = {t.family: t for f in FAMILIES.values() for t in f.templates}
from synthetic_recording import synthetic  # noqa: F401  (fixture)


def test_every_template_hashes_the_source_it_renders():
    hashes = {}
    for family, t in TEMPLATES.items():
        h = t.source_hash()
        assert h == hashlib.sha256(base.kernel_source(t.header).encode()).hexdigest()
        assert t.source_hash() == h == type(t)().source_hash()          # stable
        hashes[family] = h
    assert len(set(hashes.values())) == len(hashes)
    assert re.fullmatch(r"[0-9a-f]{12}/nvrtc-\d+\.\d+", build_id(TEMPLATES["gemv_q4f16"]))
    assert build_id(TEMPLATES["sgemm"]) == f"{hashes['sgemm'][:12]}/nvrtc-{nvrtc_version()}"


def test_the_source_hash_follows_the_cuh_text(monkeypatch):
    real = base.kernel_source(GemvQ4F16Template.header)
    monkeypatch.setattr(base, "kernel_source", lambda header, package="autosched.kernels": real)
    before = GemvQ4F16Template().source_hash()
    assert GemvQ4F16Template().source_hash() == before
    monkeypatch.setattr(base, "kernel_source", lambda header, package="autosched.kernels": real + "\n// an edit\n")
    edited = GemvQ4F16Template()
    assert edited.source_hash() != before
    assert build_id(edited).split("/")[0] == edited.source_hash()[:12] != before[:12]
    monkeypatch.setattr(base, "kernel_source", lambda header, package="autosched.kernels": real)
    assert GemvQ4F16Template().source_hash() == before


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
