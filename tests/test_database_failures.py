"""What a user meets when the database fails under a run: a full disk, another process's lock, a
file of a newer autosched.  Each is one line naming the way out (exit 2, no traceback), the file
still opens afterwards and a rerun resumes; commands that only read never lock nor wait."""

import hashlib
import re
import sqlite3
import time

import pytest

import autosched
import autosched.device
from autosched.cli import main
from autosched.database import SCHEMA, SCHEMA_VERSION, Database, DatabaseError, sql_error
from autosched.measure.recording import ReplayRunner
from autosched.measure.result import Measurement, Status
from autosched.templates import GemvQ4F16Template
from autosched.tuner import tune
from synthetic_recording import synthetic  # noqa: F401  (fixture)

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
TUNE = ("tune", "gemv-q4f16", "--shape", "4096x4096", "--runner", "replay", "--strategy", "random", "--trials", "20")


@pytest.fixture
def cli(monkeypatch, capsys, synthetic):  # noqa: F811
    """(rc, stdout, stderr) of the CLI in-process, replaying the synthetic recording, every database
    waiting at most 0.2 s for a lock (tests stay fast)."""
    monkeypatch.setenv("AUTOSCHED_RECORDINGS", str(synthetic.dir))
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.setattr(autosched.device, "gpu_count", lambda: 0)
    init = Database.__init__
    monkeypatch.setattr(Database, "__init__", lambda self, path=None, *, readonly=False, timeout_s=0.2:
                        init(self, path, readonly=readonly, timeout_s=timeout_s))

    def run(*argv):
        capsys.readouterr()
        rc = main(list(argv))
        out, err = capsys.readouterr()
        return rc, " ".join(ANSI.sub("", out).split()), " ".join(ANSI.sub("", err).split())
    return run


def rows(path) -> int:
    return sqlite3.connect(path).execute("SELECT COUNT(*) FROM measurements").fetchone()[0]


def one_line_error(rc: int, err: str, *words: str) -> None:
    assert rc == 2
    assert err.startswith("error:") and "Traceback" not in err
    for w in words:
        assert w in err, (w, err)


@pytest.fixture(scope="module")
def search(synthetic):  # noqa: F811
    """run(database) -> TuneResult: TUNE's search as tuner.tune runs it, its template's space built and
    enumerated once (speed only: both are pure functions of their arguments)."""
    template, rec = GemvQ4F16Template(), synthetic.load()
    space = template.space(synthetic.workload, synthetic.device)
    configs = space.enumerate()
    space.enumerate, space.size = lambda: [dict(c) for c in configs], lambda: len(configs)
    template.space = lambda w, d: space
    return lambda d: tune(synthetic.workload, template, ReplayRunner(rec), d, strategy="random", trials=20, seed=0)


def resume(search, path) -> int:
    """Configs a rerun over `path` takes from the database instead of measuring."""
    with Database(path) as d:
        return search(d).resumed


def test_a_disk_full_mid_tune_is_one_line_and_a_rerun_resumes(cli, search, monkeypatch, tmp_path):
    db = tmp_path / "db"
    with Database(db):
        pass
    # SQLite's own "database or disk is full" (SQLITE_FULL): the file may grow by two pages only
    init = Database.__init__

    def small_disk(self, *a, **k):
        init(self, *a, **k)
        pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
        self.conn.execute(f"PRAGMA max_page_count={pages + 2}")
    monkeypatch.setattr(Database, "__init__", small_disk)
    rc, out, err = cli(*TUNE, "--db", str(db))
    one_line_error(rc, err, str(db), "disk is full", "free space", "--db", "AUTOSCHED_HOME", "rerun resumes")
    assert "make it writable" not in err
    kept = rows(db)
    assert 0 < kept < 20
    monkeypatch.setattr(Database, "__init__", init)          # space freed
    assert resume(search, db) == kept


def test_a_lock_taken_mid_run_is_one_line_and_a_rerun_resumes(search, monkeypatch, tmp_path):
    db = tmp_path / "db"
    add, other = Database.add, sqlite3.connect(db, isolation_level=None)

    def add_then_lock(self, *a, **k):
        if rows(db) == 5:                  # another process starts writing in the middle of the run
            other.execute("BEGIN IMMEDIATE")
        return add(self, *a, **k)
    monkeypatch.setattr(Database, "add", add_then_lock)
    with pytest.raises(DatabaseError) as e, Database(db, timeout_s=0.2) as d:
        search(d)
    msg = str(e.value)
    assert len(msg.splitlines()) == 1 and isinstance(e.value, autosched.AutoschedError)
    for w in (str(db), "locked by another process", "wait for it", "stop it", "rerun resumes"):
        assert w in msg, (w, msg)
    assert "make it writable" not in msg
    other.execute("ROLLBACK")                                # the other process is done
    monkeypatch.setattr(Database, "add", add)
    assert resume(search, db) == 5


def test_a_database_locked_before_the_run_says_wait_not_make_it_writable(tmp_path):
    db = tmp_path / "db"
    Database(db).close()
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    with pytest.raises(DatabaseError, match="locked by another process") as e:
        Database(db, timeout_s=0.1)
    assert "writable" not in str(e.value)


def test_devices_reads_a_locked_database_at_once_and_never_says_cannot_be_written(cli, synthetic, tmp_path):  # noqa: F811
    db = tmp_path / "db"
    with Database(db) as d:
        d.add("gemv_q4f16[M=1]", "dev", "gemv_q4f16", {"a": 1}, Measurement(Status.OK, 1.0, 1.0, 0.0, 0.0))
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")        # in WAL mode a writer's lock never stops a reader
    t0 = time.monotonic()
    rc, out, err = cli("devices", "--db", str(db))
    assert rc == 0, err
    assert time.monotonic() - t0 < 5
    assert "cannot be written" not in out + err


def test_a_new_database_records_its_schema_version(tmp_path):
    Database(tmp_path / "db").close()
    assert sqlite3.connect(tmp_path / "db").execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def _newer_by_version(path):
    with Database(path) as d:
        d.add("gemv_q4f16[M=1]", "dev", "gemv_q4f16", {"a": 1}, Measurement(Status.OK, 1.0, 1.0, 0.0, 0.0))
    c = sqlite3.connect(path)
    c.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    c.close()


def _newer_by_column(path):
    """A file of a later schema that forgot to raise its version: a required column we do not know."""
    c = sqlite3.connect(path)
    c.executescript(SCHEMA.replace("workload_key TEXT NOT NULL,", "shard TEXT NOT NULL, workload_key TEXT NOT NULL,", 1))
    c.close()


@pytest.mark.parametrize("make", [_newer_by_version, _newer_by_column])
def test_a_newer_schema_is_never_written_and_is_read_read_only(cli, tmp_path, make):
    db = tmp_path / "db"
    make(db)
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    rc, out, err = cli(*TUNE, "--db", str(db))
    one_line_error(rc, err, str(db), "newer autosched", "upgrade autosched", "--db")
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
    with pytest.warns(UserWarning, match="newer autosched.*never written"):
        d = Database(db, readonly=True)
    with d:
        assert d.workloads() is not None
        with pytest.raises(DatabaseError, match="read-only"):
            d.add("w", "d", "t", {}, Measurement(Status.OK, 1.0, 1.0, 0.0, 0.0))
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest


def test_a_read_only_open_of_a_missing_file_creates_nothing(tmp_path):
    with Database(tmp_path / "none" / "db", readonly=True) as d:
        assert d.workloads() == []
    assert not (tmp_path / "none").exists()


def test_a_disk_full_in_tune_model_stops_the_run_with_the_way_out(monkeypatch, tmp_path, capsys):
    """Not one shape's failure (the next would fail alike): the run stops, one line, exit 2."""
    from autosched import api
    monkeypatch.setattr(autosched.device, "gpu_count", lambda: 0)
    db = tmp_path / "db"
    calls = []

    def full(w, **kw):
        calls.append(w)
        raise sql_error(kw["db"].path, sqlite3.OperationalError("database or disk is full"))
    monkeypatch.setattr(api, "tune", full)
    rc = main(["tune-model", "random:stories15M", "--runner", "replay", "--budget", "0.05", "--db", str(db)])
    err = " ".join(capsys.readouterr().err.split())
    one_line_error(rc, err, str(db), "disk is full", "free space")
    assert len(calls) == 1
    Database(db).close()                                     # the file still opens


def test_a_file_from_before_builds_is_read_read_only_as_it_is(tmp_path):
    """An old file (no build, runs or cost_s column, no verifications) is read by the read-only
    commands without being migrated or written."""
    path = tmp_path / "old.db"
    c = sqlite3.connect(path)
    old = SCHEMA[:SCHEMA.index("CREATE INDEX")]
    for col in ("    cost_s       REAL,\n", "    runs         INTEGER,\n", "    build        TEXT,\n"):
        old = old.replace(col, "")
    c.execute(old)
    c.execute("INSERT INTO measurements VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
              ("w", "d", "t", "h", "{}", "ok", 1.0, 1.5, 0.1, 0.0, "", 32, 0, 0, "gpu", "{}", 1.0))
    c.commit()
    c.close()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with Database(path, readonly=True) as d:
        assert d.workloads() == [("w", "d", "t", 1)]
        assert d.stale({"t": "b"}) == {("w", "d", "t"): 1}        # its rows' build is not known
        assert d.measured("w", "d", "t")["h"].measurement.median_us == 1.5
        assert d.verification("k") is None
        assert d.device_infos() == []                               # no devices table: none kept
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.db"]
