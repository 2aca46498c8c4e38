"""Tuning packs on the CPU: a pack exported from one database serves the same configs from another
(through best_config, as on another machine), merging keeps the faster measured config, a database's
own faster row is kept, a pack of another build ranks nothing, a broken pack says why, and the dump."""

import csv
import json

import pytest

import autosched
from autosched import packs
from autosched.database import Database
from autosched.errors import AutoschedError
from autosched.measure.result import Measurement, Status
from autosched.templates.gemv_q4f16 import GemvQ4F16Template
from synthetic_recording import synthetic  # noqa: F401  (fixture)
from autosched.identity import current_builds


def ok(us):
    return Measurement(Status.OK, us, us, 0.1, 0.0, runs=10)


def _tuned_db(path, w, dev, configs_us, build):
    t = GemvQ4F16Template()
    with Database(path) as db:
        for c, us in configs_us:
            db.add(w.key, dev.key, t.family, c, ok(us), build=build)
    return path


def test_a_pack_serves_the_same_configs_on_another_machine(synthetic, tmp_path):   # noqa: F811
    w, dev = synthetic.workload, synthetic.device
    t = GemvQ4F16Template()
    build = current_builds(t, dev.key)
    space = list(t.space(w, dev))
    a = _tuned_db(tmp_path / "a.db", w, dev, [(space[3], 2.0), (space[5], 1.5), (space[7], 9.0)], build)
    want = autosched.best_config(w, device=dev, db=a)
    assert want.source == "database" and want.config == space[5]
    with Database(a, readonly=True) as db:
        assert packs.export_pack(db, tmp_path / "p.json", top=2) == 2
    # another machine: a fresh database, the pack imported
    with Database(tmp_path / "b.db") as db:
        assert packs.import_pack(db, tmp_path / "p.json") == (2, 0)
    got = autosched.best_config(w, device=dev, db=tmp_path / "b.db")
    assert got.config == want.config and got.template == want.template
    with Database(tmp_path / "b.db", readonly=True) as db:
        [row] = db.fastest(w.key, dev.key, t.family, 1, build=build)
        assert row.measurement.source.startswith("pack p.json") and row.measurement.median_us == 1.5
    # a database that measured the config faster keeps its own row
    c = _tuned_db(tmp_path / "c.db", w, dev, [(space[5], 1.0)], build)
    with Database(c) as db:
        assert packs.import_pack(db, tmp_path / "p.json") == (1, 1)
        assert db.best(w.key, dev.key, t.family, build=build).measurement.median_us == 1.0


def test_merge_keeps_the_faster_and_another_build_ranks_nothing(synthetic, tmp_path):   # noqa: F811
    w, dev = synthetic.workload, synthetic.device
    t = GemvQ4F16Template()
    build = current_builds(t, dev.key)
    space = list(t.space(w, dev))
    for name, us in (("x", 3.0), ("y", 2.0)):
        d = _tuned_db(tmp_path / f"{name}.db", w, dev, [(space[4], us)], build)
        with Database(d, readonly=True) as db:
            packs.export_pack(db, tmp_path / f"{name}.json")
    assert packs.merge_packs([tmp_path / "x.json", tmp_path / "y.json"], tmp_path / "xy.json") == 1
    [e] = packs.read_pack(tmp_path / "xy.json")
    assert e["median_us"] == 2.0
    stale = _tuned_db(tmp_path / "s.db", w, dev, [(space[9], 0.5)], "an-old-build")
    with Database(stale, readonly=True) as db:
        packs.export_pack(db, tmp_path / "s.json")
    with Database(tmp_path / "fresh.db") as db:
        packs.import_pack(db, tmp_path / "s.json")
    got = autosched.best_config(w, device=dev, db=tmp_path / "fresh.db")
    assert got.config != space[9] and got.source != "database"


def test_broken_packs_say_why(tmp_path):
    bad = tmp_path / "bad.json"
    for text, why in (("{", "not readable JSON"), ('{"format": "other"}', "not an autosched pack"),
                      ('{"format": "autosched-pack", "version": 99, "entries": []}', "upgrade autosched"),
                      ('{"format": "autosched-pack", "version": 1, "entries": [{"device_key": "d"}]}', "entry 0 lacks")):
        bad.write_text(text)
        with pytest.raises(AutoschedError, match=why):
            packs.read_pack(bad)
    with pytest.raises(AutoschedError, match="no such pack"):
        packs.read_pack(tmp_path / "nope.json")


def test_dump_and_the_cli(synthetic, tmp_path):   # noqa: F811
    from autosched.cli import main
    w, dev = synthetic.workload, synthetic.device
    t = GemvQ4F16Template()
    space = list(t.space(w, dev))
    d = _tuned_db(tmp_path / "d.db", w, dev, [(space[1], 4.0), (space[2], 5.0)], "b1")
    assert main(["pack", "dump", str(tmp_path / "rows.csv"), "--db", str(d)]) == 0
    rows = list(csv.DictReader(open(tmp_path / "rows.csv")))
    assert len(rows) == 2 and {float(r["median_us"]) for r in rows} == {4.0, 5.0}
    assert main(["pack", "dump", str(tmp_path / "rows.json"), "--db", str(d)]) == 0
    assert len(json.loads((tmp_path / "rows.json").read_text())) == 2
    assert main(["pack", "export", str(tmp_path / "p.json"), "--db", str(d)]) == 0
    assert main(["pack", "import", str(tmp_path / "p.json"), "--db", str(tmp_path / "e.db")]) == 0
    assert main(["pack", "dump", str(tmp_path / "rows.txt"), "--db", str(d)]) == 2


def test_packs_beside_the_database_serve_without_an_import(synthetic, tmp_path, monkeypatch):   # noqa: F811
    """A pack in the folder packs/ beside the default database answers rank (after the database,
    before the recordings) for its device key and current build; one of another build does not."""
    from autosched import knobs
    from autosched.selection import Origin, rank
    w, dev = synthetic.workload, synthetic.device
    t = GemvQ4F16Template()
    space = list(t.space(w, dev))
    build = current_builds(t, dev.key)
    src = _tuned_db(tmp_path / "src.db", w, dev, [(space[6], 0.25)], build)
    home = tmp_path / "home"
    with Database(src, readonly=True) as db:
        packs.export_pack(db, home / "packs" / "team.json")
    monkeypatch.setenv("AUTOSCHED_RECORDINGS", str(synthetic.dir))
    with knobs.scope(HOME=str(home)):
        [c] = rank(w, dev)
        assert (c.config, c.median_us, c.origin) == (space[6], 0.25, Origin.PACK) and c.source == "pack team.json"
        (home / "packs" / "team.json").write_text((home / "packs" / "team.json").read_text()
                                                  .replace(str(build), "an-old-build"))
        [c] = rank(w, dev)
        assert c.origin == Origin.RECORDING
