"""Which config an op serves: database (same device key) > recording (same device key) > default."""

import dataclasses

from autosched.database import Database
from autosched.measure.recording import Recording
from autosched.measure.result import Measurement, Status
from autosched.ops import choose_config
from autosched.templates import GemvQ4F16Template
from synthetic_recording import synthetic  # noqa: F401  (fixture)


def test_the_chain_of_sources(synthetic, tmp_path, monkeypatch):   # noqa: F811
    monkeypatch.setenv("AUTOSCHED_RECORDINGS", str(synthetic.dir))
    w, dev = synthetic.workload, synthetic.device
    rec = Recording.load(synthetic.path)
    best_rec = min(((m.median_us, c) for c, m in rec.entries.values() if m.ok), key=lambda tc: tc[0])
    t = GemvQ4F16Template()

    # no database: the recording taken on this very device key
    c = choose_config(w, dev)
    assert c.source.startswith("recording") and c.config == best_rec[1] and c.median_us == best_rec[0]

    # a database row for this device wins over the recording
    with Database(tmp_path / "db") as db:
        cfg = t.default_config(w, dev)
        db.add(w.key, dev.key, t.family, cfg, Measurement(Status.OK, 1.0, 1.5, 0.1, 0.0))
        c = choose_config(w, dev, db)
        assert c.source == "database" and c.config == cfg and c.median_us == 1.5

    # another driver: neither the recording's nor any database's numbers apply; the default serves
    other = dataclasses.replace(dev, driver_version="999.0")
    with Database(tmp_path / "db") as db:
        c = choose_config(w, other, db)
    assert c.source == "default" and c.config == t.default_config(w, other)


def test_ranked_configs_fastest_first_from_the_first_source_that_has_any(synthetic, tmp_path, monkeypatch):  # noqa: F811
    from autosched.ops.gemv import ranked_configs
    monkeypatch.setenv("AUTOSCHED_RECORDINGS", str(synthetic.dir))
    w, dev = synthetic.workload, synthetic.device
    rec = Recording.load(synthetic.path)
    want = sorted((m.median_us for _, m in rec.entries.values() if m.ok))[:5]
    got = ranked_configs(w, dev, k=5)
    assert [c.median_us for c in got] == want and all(c.source.startswith("recording") for c in got)
    assert len({str(sorted(c.config.items())) for c in got}) == 5

    t = GemvQ4F16Template()
    space = list(t.space(w, dev))
    with Database(tmp_path / "db") as db:
        # the database answers alone once it has a row; a config that failed its check is left out
        for i, med in enumerate((3.0, 1.0, 2.0)):
            db.add(w.key, dev.key, t.family, space[i], Measurement(Status.OK, med, med, 0.0, 0.0))
        db.add(w.key, dev.key, t.family, space[3], Measurement(Status.WRONG, 0.1, 0.1, 0.0, 1.0))
        got = ranked_configs(w, dev, db, k=4)
    assert [c.config for c in got] == [space[1], space[2], space[0]]
    assert all(c.source == "database" for c in got)
