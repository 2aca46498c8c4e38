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
