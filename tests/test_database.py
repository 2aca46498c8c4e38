"""autosched.database: the SQLite (WAL) store of measurements that makes tuning resumable."""

import hashlib
import json
import math
import os
import sqlite3
import subprocess
from contextlib import contextmanager

import pytest

from autosched.database import Database, DatabaseError, default_db_path
from autosched.measure.result import Measurement, Status
from autosched.space import config_hash
from db_rows import measurement_rows

WK = "gemv_q4f16:N=4096,K=4096"
DEV = "NVIDIA H100 80GB HBM3|sm_90|driver 580.159.04|cuda 13.0"
TPL = "gemv_q4f16"
CFG_A = {"tx": "r", "load": "k", "compute": "k", "vec_c": 2, "vec_load": 4, "tile_s": 1, "tile_r": 32,
         "ts": 4, "tr": 32, "layout_n": 1, "layout_k": 1, "v_shared": 0, "unroll": 4, "hint": 0}
CFG_B = dict(CFG_A, ts=8)
CFG_C = dict(CFG_A, ts=2, hint=1)


def ok(med, **kw):
    return Measurement(Status.OK, 0.98 * med, med, 0.1, 1e-3, **kw)


@pytest.fixture
def db(tmp_path):
    with Database(tmp_path / "sub" / "m.db") as d:
        yield d


def test_creates_parent_folder_and_wal_mode(tmp_path):
    path = tmp_path / "a" / "b" / "m.db"
    with Database(path) as d:
        assert path.exists()
        assert d.conn.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"
    # WAL is persistent: a plain connection opened later sees it too
    conn = sqlite3.connect(str(path))
    assert conn.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"
    conn.close()


def test_round_trip_ok_measurement(db):
    m = ok(12.5, registers=40, smem_bytes=512, spills=2, source="replay:x.json.gz")
    db.add(WK, DEV, TPL, CFG_A, m, {"autosched": "0.1.0", "runner": "replay"})
    got = db.measured(WK, DEV, TPL)
    assert list(got) == [config_hash(CFG_A)]
    r = got[config_hash(CFG_A)]
    assert (r.workload_key, r.device_key, r.template) == (WK, DEV, TPL)
    assert r.config == CFG_A
    # types survive JSON: ints stay ints, strings stay strings
    assert all(type(r.config[k]) is type(v) for k, v in CFG_A.items())
    assert r.measurement.status is Status.OK
    assert r.measurement.min_us == pytest.approx(0.98 * 12.5)
    assert r.measurement.median_us == 12.5
    assert r.measurement.spread_us == 0.1
    assert r.measurement.max_abs_err == 1e-3
    assert (r.measurement.registers, r.measurement.smem_bytes, r.measurement.spills) == (40, 512, 2)
    assert r.measurement.source == "replay:x.json.gz"
    assert r.versions == {"autosched": "0.1.0", "runner": "replay"}
    assert r.timestamp > 0


def test_nan_times_are_null_and_read_back_nan(db):
    m = Measurement(Status.COMPILE_ERROR, error="nvrtc: error: boom")
    db.add(WK, DEV, TPL, CFG_A, m)
    raw = db.conn.execute("SELECT status, min_us, median_us, spread_us, max_abs_err, error "
                          "FROM measurements").fetchall()
    assert raw == [("compile_error", None, None, None, None, "nvrtc: error: boom")]
    r = db.measured(WK, DEV, TPL)[config_hash(CFG_A)]
    assert r.measurement.status is Status.COMPILE_ERROR
    assert all(math.isnan(x) for x in (r.measurement.min_us, r.measurement.median_us,
                                       r.measurement.spread_us, r.measurement.max_abs_err))
    assert r.measurement.error == "nvrtc: error: boom"
    assert r.versions == {}


@pytest.mark.parametrize("status", list(Status))
def test_every_status_round_trips(db, status):
    db.add(WK, DEV, TPL, CFG_A, Measurement(status, 1.0, 2.0, 0.5))
    r = db.measured(WK, DEV, TPL)[config_hash(CFG_A)]
    assert r.measurement.status is status


def test_insert_or_replace_same_config(db):
    db.add(WK, DEV, TPL, CFG_A, ok(30.0))
    db.add(WK, DEV, TPL, CFG_A, Measurement(Status.WRONG, 9.0, 10.0, 0.2, 5.0, error="bad"))
    assert db.conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0] == 1
    r = db.measured(WK, DEV, TPL)[config_hash(CFG_A)]
    assert r.measurement.status is Status.WRONG
    assert r.measurement.median_us == 10.0
    assert r.measurement.error == "bad"
    # key order of the config dict does not make a different row
    db.add(WK, DEV, TPL, dict(reversed(list(CFG_A.items()))), ok(31.0))
    assert db.conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0] == 1
    assert db.measured(WK, DEV, TPL)[config_hash(CFG_A)].measurement.median_us == 31.0


def test_same_config_other_device_or_workload_is_another_row(db):
    db.add(WK, DEV, TPL, CFG_A, ok(30.0))
    db.add(WK, "other-gpu", TPL, CFG_A, ok(20.0))
    db.add("gemv_q4f16:N=1,K=32", DEV, TPL, CFG_A, ok(10.0))
    assert db.conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0] == 3
    assert db.measured(WK, DEV, TPL)[config_hash(CFG_A)].measurement.median_us == 30.0
    assert db.measured(WK, "other-gpu", TPL)[config_hash(CFG_A)].measurement.median_us == 20.0
    assert db.measured(WK, DEV, "another_template") == {}


def test_best_ignores_non_ok_rows(db):
    db.add(WK, DEV, TPL, CFG_A, ok(30.0))
    db.add(WK, DEV, TPL, CFG_B, ok(25.0))
    # faster but failed: must never be "best"
    db.add(WK, DEV, TPL, CFG_C, Measurement(Status.WRONG, 1.0, 1.1, 0.1, 9.0))
    db.add(WK, DEV, TPL, dict(CFG_A, unroll=1), Measurement(Status.COMPILE_ERROR))     # NULL times
    db.add(WK, DEV, TPL, dict(CFG_A, unroll=16), Measurement(Status.LAUNCH_ERROR, 0.5, 0.5, 0.0))
    db.add(WK, DEV, TPL, dict(CFG_A, hint=1), Measurement(Status.NOT_RECORDED))
    b = db.best(WK, DEV, TPL)
    assert b is not None
    assert b.config == CFG_B
    assert b.measurement.median_us == 25.0
    assert b.measurement.status is Status.OK
    assert db.best(WK, DEV).config == CFG_B          # template optional


def test_best_none_when_nothing_ok(db):
    assert db.best(WK, DEV, TPL) is None
    db.add(WK, DEV, TPL, CFG_A, Measurement(Status.WRONG, 1.0, 1.0, 0.0))
    assert db.best(WK, DEV, TPL) is None
    assert db.best(WK, "other-gpu", TPL) is None


def test_best_is_per_device(db):
    db.add(WK, DEV, TPL, CFG_A, ok(30.0))
    db.add(WK, "other-gpu", TPL, CFG_B, ok(5.0))
    assert db.best(WK, DEV, TPL).config == CFG_A
    assert db.best(WK, "other-gpu", TPL).config == CFG_B


def test_survives_close_and_reopen(tmp_path):
    path = tmp_path / "m.db"
    d = Database(path)
    d.add(WK, DEV, TPL, CFG_A, ok(30.0), {"v": 1})
    d.add(WK, DEV, TPL, CFG_B, Measurement(Status.WRONG, 1.0, 2.0, 0.1, 3.0, error="e"))
    d.close()
    assert measurement_rows(path) == 2
    with Database(path) as d2:
        got = d2.measured(WK, DEV, TPL)
        assert set(got) == {config_hash(CFG_A), config_hash(CFG_B)}
        assert got[config_hash(CFG_A)].measurement.median_us == 30.0
        assert got[config_hash(CFG_A)].versions == {"v": 1}
        assert got[config_hash(CFG_B)].measurement.status is Status.WRONG
        assert d2.best(WK, DEV, TPL).config == CFG_A
        # and keeps accepting writes
        d2.add(WK, DEV, TPL, CFG_C, ok(1.0))
    assert measurement_rows(path) == 3


def test_two_connections_see_each_others_commits(tmp_path):
    """Each add is committed at once: a second process (here a second connection) sees it."""
    path = tmp_path / "m.db"
    with Database(path) as a, Database(path) as b:
        a.add(WK, DEV, TPL, CFG_A, ok(30.0))
        assert config_hash(CFG_A) in b.measured(WK, DEV, TPL)


def test_workloads_groups(db):
    db.add(WK, DEV, TPL, CFG_A, ok(30.0))
    db.add(WK, DEV, TPL, CFG_B, ok(31.0))
    db.add(WK, DEV, TPL, CFG_C, Measurement(Status.WRONG))
    db.add(WK, "gpu-b", TPL, CFG_A, ok(3.0))
    db.add("gemv_q4f16:N=8,K=64", DEV, TPL, CFG_A, ok(1.0))
    assert [tuple(g) for g in db.workloads()] == [
        ("gemv_q4f16:N=4096,K=4096", DEV, TPL, 3),
        ("gemv_q4f16:N=4096,K=4096", "gpu-b", TPL, 1),
        ("gemv_q4f16:N=8,K=64", DEV, TPL, 1),
    ]
    assert [tuple(g) for g in db.workloads(DEV)] == [
        ("gemv_q4f16:N=4096,K=4096", DEV, TPL, 3),
        ("gemv_q4f16:N=8,K=64", DEV, TPL, 1),
    ]
    assert db.workloads("no-such-gpu") == []


def test_config_stored_as_sorted_json(db):
    db.add(WK, DEV, TPL, CFG_A, ok(30.0))
    stored, h = db.conn.execute("SELECT config, config_hash FROM measurements").fetchone()
    assert stored == json.dumps(CFG_A, sort_keys=True)
    assert h == config_hash(CFG_A)


def test_memory_database():
    with Database(":memory:") as d:
        d.add(WK, DEV, TPL, CFG_A, ok(30.0))
        assert d.best(WK, DEV, TPL).config == CFG_A


def test_default_path_honours_autosched_home(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOSCHED_HOME", str(tmp_path / "home"))
    assert default_db_path() == tmp_path / "home" / "autosched.db"
    monkeypatch.delenv("AUTOSCHED_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_db_path() == tmp_path / "xdg" / "autosched" / "autosched.db"


def test_runs_round_trip(db):
    db.add(WK, DEV, TPL, CFG_A, ok(3.0, runs=3))
    db.add(WK, DEV, TPL, CFG_B, ok(2.0, runs=100))
    got = db.measured(WK, DEV, TPL)
    assert got[config_hash(CFG_A)].measurement.runs == 3
    assert got[config_hash(CFG_B)].measurement.runs == 100


def test_database_from_before_runs_gains_the_column(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(str(path))
    old_schema = """CREATE TABLE measurements (workload_key TEXT NOT NULL, device_key TEXT NOT NULL,
        template TEXT NOT NULL, config_hash TEXT NOT NULL, config TEXT NOT NULL, status TEXT NOT NULL,
        min_us REAL, median_us REAL, spread_us REAL, max_abs_err REAL, error TEXT, registers INTEGER,
        smem_bytes INTEGER, spills INTEGER, source TEXT, cost_s REAL, versions TEXT, timestamp REAL NOT NULL,
        PRIMARY KEY (workload_key, device_key, template, config_hash))"""
    conn.execute(old_schema)
    conn.execute("INSERT INTO measurements VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                 (WK, DEV, TPL, config_hash(CFG_A), json.dumps(CFG_A, sort_keys=True), "ok", 1.0, 1.5, 0.1,
                  0.0, "", 32, 0, 0, "gpu", 0.5, "{}", 1.0))
    conn.commit()
    conn.close()
    with Database(path) as d:
        r = d.measured(WK, DEV, TPL)[config_hash(CFG_A)]
        assert r.measurement.median_us == 1.5 and r.measurement.runs == 0      # 0: not known
        d.add(WK, DEV, TPL, CFG_B, ok(2.0, runs=3))
        assert d.measured(WK, DEV, TPL)[config_hash(CFG_B)].measurement.runs == 3
        # an old database gains the verifications table too
        assert d.verification("k") is None


def test_verifications_are_stored_under_their_key_and_replaced(tmp_path):
    with Database(tmp_path / "db") as d:
        assert d.verification('{"a": 1}') is None
        d.add_verification('{"a": 1}', {"qkv": [3.0, 2.0]})
        d.add_verification('{"a": 2}', {"qkv": [1.0]})
    with Database(tmp_path / "db") as d:                   # kept across connections
        result, when = d.verification('{"a": 1}')
        assert result == {"qkv": [3.0, 2.0]} and when > 0
        d.add_verification('{"a": 1}', {"qkv": [4.0]})
        assert d.verification('{"a": 1}')[0] == {"qkv": [4.0]} and d.verification('{"a": 2}')[0] == {"qkv": [1.0]}


# -- build identity ---------------------------------------------------------------------------

def test_database_from_before_build_gains_the_column_keeps_its_rows_and_counts_them_stale(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(str(path))
    conn.execute("""CREATE TABLE measurements (workload_key TEXT NOT NULL, device_key TEXT NOT NULL,
        template TEXT NOT NULL, config_hash TEXT NOT NULL, config TEXT NOT NULL, status TEXT NOT NULL,
        min_us REAL, median_us REAL, spread_us REAL, max_abs_err REAL, error TEXT, registers INTEGER,
        smem_bytes INTEGER, spills INTEGER, source TEXT, cost_s REAL, versions TEXT, timestamp REAL NOT NULL,
        runs INTEGER, PRIMARY KEY (workload_key, device_key, template, config_hash))""")
    for cfg, med in ((CFG_A, 1.5), (CFG_B, 2.5)):
        conn.execute("INSERT INTO measurements VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                     (WK, DEV, TPL, config_hash(cfg), json.dumps(cfg, sort_keys=True), "ok", med, med, 0.1,
                      0.0, "", 32, 0, 0, "gpu", 0.5, "{}", 1.0, 100))
    conn.commit()
    conn.close()
    with Database(path) as d:
        assert "build" in {r[1] for r in d.conn.execute("PRAGMA table_info(measurements)")}
        # kept, of an unknown build: shown unfiltered, never as the current build's
        every = d.measured(WK, DEV, TPL)
        assert set(every) == {config_hash(CFG_A), config_hash(CFG_B)}
        assert all(r.build is None for r in every.values())
        assert d.measured(WK, DEV, TPL, build="b1") == {}
        assert d.best(WK, DEV, TPL, build="b1") is None
        assert d.tuning_seconds(WK, DEV, TPL, build="b1") == 0.0
        assert d.stale(lambda t: "b1") == {(WK, DEV, TPL): 2}
        d.add(WK, DEV, TPL, CFG_A, ok(3.0), build="b1")        # measured again: replaces its old row
        assert d.stale({TPL: "b1"}) == {(WK, DEV, TPL): 1}
    assert measurement_rows(path) == 2
    with Database(path) as d:                                   # a second open migrates nothing twice
        assert d.best(WK, DEV, TPL, build="b1").config == CFG_A


def test_rows_of_another_build_rank_nothing_and_are_stale(db):
    db.add(WK, DEV, TPL, CFG_A, ok(1.0), cost_s=5.0, build="old/nvrtc-12.8")    # fastest, but stale
    db.add(WK, DEV, TPL, CFG_B, ok(3.0), cost_s=1.0, build="new/nvrtc-12.9")
    db.add(WK, DEV, TPL, CFG_C, ok(2.0), cost_s=2.0, build="new/nvrtc-12.9")
    db.add(WK, DEV, TPL, dict(CFG_A, hint=1), ok(0.5), cost_s=7.0)              # unknown build
    db.add(WK, "gpu-b", TPL, CFG_A, ok(0.1), build="old/nvrtc-12.8")
    db.add(WK, DEV, "other_tpl", CFG_A, ok(0.2), build="o1")
    new = "new/nvrtc-12.9"
    assert set(db.measured(WK, DEV, TPL, build=new)) == {config_hash(CFG_B), config_hash(CFG_C)}
    assert all(r.build == new for r in db.measured(WK, DEV, TPL, build=new).values())
    assert [r.config for r in db.fastest(WK, DEV, TPL, 5, build=new)] == [CFG_C, CFG_B]
    assert db.best(WK, DEV, TPL, build=new).config == CFG_C
    assert db.tuning_seconds(WK, DEV, TPL, build=new) == 3.0
    assert sorted(med for _, _, med in db.samples(DEV, TPL, build=new)) == [2.0, 3.0]
    # across templates: each template's own build
    assert db.best(WK, DEV, build={TPL: new, "other_tpl": "o1"}).config == CFG_A
    assert db.best(WK, DEV, build={TPL: new, "other_tpl": "o1"}).template == "other_tpl"
    assert db.best(WK, DEV, build={TPL: new}).config == CFG_C
    assert db.best(WK, DEV, build={}) is None
    # build=None is every row, stale ones included
    assert db.best(WK, DEV, TPL).config == dict(CFG_A, hint=1)
    assert len(db.measured(WK, DEV, TPL)) == 4
    current = {TPL: new, "other_tpl": "o1"}
    assert db.stale(current) == {(WK, DEV, TPL): 2, (WK, "gpu-b", TPL): 1}
    assert db.stale(current, DEV) == {(WK, DEV, TPL): 2}
    assert db.stale(current.get, "no-such-gpu") == {}
    # a template with no current build (None, or missing from a mapping): all of its rows are stale
    assert db.stale({TPL: new}) == {(WK, DEV, TPL): 2, (WK, "gpu-b", TPL): 1, (WK, DEV, "other_tpl"): 1}
    assert db.stale(lambda t: None, DEV) == {(WK, DEV, TPL): 4, (WK, DEV, "other_tpl"): 1}


# -- files that are not a usable database: refused with the path and the way out, left as they were

def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def refused(path, match: str) -> DatabaseError:
    """Database(path) raises a DatabaseError naming `path`, and the file and its folder are exactly
    as they were (no byte changed, no -wal, -shm or -journal left beside it)."""
    before = digest(path) if path.is_file() else None
    listing = sorted(os.listdir(path.parent))
    with pytest.raises(DatabaseError, match=match) as e:
        Database(path)
    assert str(path) in str(e.value)
    assert len(str(e.value).splitlines()) <= 2
    assert isinstance(e.value, ValueError)          # the CLI prints any ValueError as `error: ...`
    assert sorted(os.listdir(path.parent)) == listing
    if before is not None:
        assert digest(path) == before
    return e.value


def filled(path, rows: int = 300) -> None:
    with Database(path) as d:
        for i in range(rows):
            d.add(WK, DEV, TPL, dict(CFG_A, ts=i), ok(1.0 + i), {"note": "x" * 200})


def test_text_file_is_refused_and_left_as_it_was(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes, not a database\n" * 50)
    refused(path, "not an SQLite database")


def test_truncated_database_is_refused_and_left_as_it_was(tmp_path):
    path = tmp_path / "m.db"
    filled(path)
    whole = path.read_bytes()
    assert len(whole) > 8 * 4096
    path.write_bytes(whole[:len(whole) // 2])
    refused(path, "truncated")
    path.write_bytes(whole[:60])                    # not even a whole header
    refused(path, "truncated")


def test_malformed_database_is_refused_and_left_as_it_was(tmp_path):
    path = tmp_path / "m.db"
    filled(path, rows=20)
    raw = bytearray(path.read_bytes())
    raw[100:4096] = bytes((i * 37 + 11) % 256 for i in range(100, 4096))    # the schema page, scrambled
    path.write_bytes(bytes(raw))
    refused(path, "damaged")


def test_folder_is_refused(tmp_path):
    (tmp_path / "dbdir").mkdir()
    e = refused(tmp_path / "dbdir", "is a folder")
    assert str(tmp_path / "dbdir" / "autosched.db") in str(e)


def test_another_programs_sqlite_file_is_refused_naming_its_tables(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(str(path))
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER)")
    conn.execute("INSERT INTO customers VALUES (1, 'ada')")
    conn.commit()
    conn.close()
    e = refused(path, "another program")
    assert "customers, orders" in str(e)
    conn = sqlite3.connect(str(path))               # and it gained none of our tables
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY 1")] == \
        ["customers", "orders"]
    conn.close()


def test_another_programs_measurements_table_is_refused(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(str(path))
    conn.execute("CREATE TABLE measurements (sensor TEXT, value REAL, at REAL)")
    conn.commit()
    conn.close()
    e = refused(path, "not autosched's")
    assert "workload_key" in str(e)


def test_empty_file_and_our_own_schema_open(tmp_path):
    path = tmp_path / "empty.db"
    path.write_bytes(b"")                           # e.g. made by `touch`
    with Database(path) as d:
        d.add(WK, DEV, TPL, CFG_A, ok(2.0))
    with Database(path) as d:
        assert d.best(WK, DEV, TPL).config == CFG_A


def test_database_from_before_cost_s_still_opens_and_migrates(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(str(path))
    conn.execute("""CREATE TABLE measurements (workload_key TEXT NOT NULL, device_key TEXT NOT NULL,
        template TEXT NOT NULL, config_hash TEXT NOT NULL, config TEXT NOT NULL, status TEXT NOT NULL,
        min_us REAL, median_us REAL, spread_us REAL, max_abs_err REAL, error TEXT, registers INTEGER,
        smem_bytes INTEGER, spills INTEGER, source TEXT, versions TEXT, timestamp REAL NOT NULL,
        PRIMARY KEY (workload_key, device_key, template, config_hash))""")
    conn.execute("INSERT INTO measurements VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                 (WK, DEV, TPL, config_hash(CFG_A), json.dumps(CFG_A, sort_keys=True), "ok", 1.0, 1.5, 0.1,
                  0.0, "", 32, 0, 0, "gpu", "{}", 1.0))
    conn.commit()
    conn.close()
    with Database(path) as d:
        assert {"cost_s", "runs", "build"} <= {r[1] for r in d.conn.execute("PRAGMA table_info(measurements)")}
        assert d.measured(WK, DEV, TPL)[config_hash(CFG_A)].measurement.median_us == 1.5


@contextmanager
def read_only(path):
    """`path` made unwritable for this process: chmod, or for root (whom permissions do not stop)
    the immutable attribute; skips where neither is possible."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    try:
        subprocess.run(["chattr", "+i", str(path)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("running as root where chattr +i is not available: cannot make a file read-only")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_read_only_database_is_refused_when_opened(tmp_path):
    path = tmp_path / "m.db"
    filled(path, rows=5)
    with read_only(path):
        refused(path, "read-only")


def test_database_in_a_read_only_folder_is_refused_when_opened(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    filled(folder / "m.db", rows=5)
    with read_only(folder):
        refused(folder / "m.db", "not writable")
        # a new database there cannot be made either, and nothing is left behind
        with pytest.raises(DatabaseError, match="not writable"):
            Database(folder / "new.db")
        assert sorted(os.listdir(folder)) == ["m.db"]


def test_cannot_write_probe_catches_what_os_access_misses(tmp_path, monkeypatch):
    """Where the permission bits say writable but the file is not (a mount, a lock, an attribute),
    the write tried and rolled back on open refuses it."""
    path = tmp_path / "m.db"
    filled(path, rows=5)
    monkeypatch.setattr(os, "access", lambda *a, **k: True)
    with read_only(path):
        refused(path, "cannot be written")


def test_cli_prints_a_refused_database_as_an_error(tmp_path, capsys, monkeypatch):
    from autosched.cli import main
    path = tmp_path / "notes.txt"
    path.write_text("not a database\n")
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["devices", "--db", str(path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "error:" in err and "not an SQLite database" in err and "Traceback" not in err
    assert path.read_text() == "not a database\n"


def test_a_gpus_figures_are_kept_beside_its_rows(tmp_path, h100):
    """note_device keeps what the device query told of a device key's GPU (read back equal; noted
    twice, kept once), for a cost model of several GPU models; a read-only open reads them."""
    import dataclasses
    other = dataclasses.replace(h100, name="NVIDIA L40S", cc=(8, 9), sm_count=142)
    with Database(tmp_path / "db") as d:
        assert d.device_infos() == []
        d.note_device(h100)
        d.note_device(other)
        d.note_device(h100)
        assert sorted(x.key for x in d.device_infos()) == sorted([h100.key, other.key])
    with Database(tmp_path / "db", readonly=True) as d:
        assert h100 in d.device_infos() and other in d.device_infos()
