"""SQLite (WAL) store of measurements: one row per (workload, device, template, config).

A tuning run writes each result as it arrives, so a run that is killed and restarted resumes:
`measured()` tells the search which configs to skip.  Every row names the build it timed
(autosched.build.build_id: kernel source hash and NVRTC version); rankings and resume ask for one
build, so timings of an older .cuh stay in the file (`stale()` counts them) but rank nothing.
Verifications (the decode engine's timing of its candidate configs inside its own step) are kept
too, under a key that names everything they depended on.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Union

from autosched import knobs
from autosched.measure.result import Measurement, Status
from autosched.space import config_hash

SCHEMA = """
CREATE TABLE IF NOT EXISTS measurements (
    workload_key TEXT NOT NULL,
    device_key   TEXT NOT NULL,
    template     TEXT NOT NULL,
    config_hash  TEXT NOT NULL,
    config       TEXT NOT NULL,
    status       TEXT NOT NULL,
    min_us       REAL,
    median_us    REAL,
    spread_us    REAL,
    max_abs_err  REAL,
    error        TEXT,
    registers    INTEGER,
    smem_bytes   INTEGER,
    spills       INTEGER,
    source       TEXT,
    cost_s       REAL,
    versions     TEXT,
    timestamp    REAL NOT NULL,
    runs         INTEGER,
    build        TEXT,
    PRIMARY KEY (workload_key, device_key, template, config_hash)
);
CREATE INDEX IF NOT EXISTS by_median ON measurements (workload_key, device_key, template, median_us);
CREATE TABLE IF NOT EXISTS verifications (
    key       TEXT PRIMARY KEY,
    result    TEXT NOT NULL,
    timestamp REAL NOT NULL
);
"""

# column order of every SELECT and INSERT (named, so a database from before a column was added
# still reads: the column is appended by _migrate)
COLUMNS = ("workload_key", "device_key", "template", "config_hash", "config", "status", "min_us",
           "median_us", "spread_us", "max_abs_err", "error", "registers", "smem_bytes", "spills",
           "source", "cost_s", "versions", "timestamp", "runs", "build")
_SELECT = "SELECT " + ", ".join(COLUMNS) + " FROM measurements"

# a query's build: one build id, a mapping template -> build id, or None (every build)
Builds = Union[str, Mapping[str, str], None]


@dataclass(frozen=True)
class Record:
    workload_key: str
    device_key: str
    template: str
    config: dict
    measurement: Measurement
    versions: dict
    timestamp: float
    cost_s: float | None = None     # tuning wall time this measurement took (build + measure share)
    build: str | None = None        # build id timed (autosched.build.build_id); None: not known


def default_db_path() -> Path:
    root = knobs.HOME.get() or os.path.join(
        os.environ.get("XDG_DATA_HOME", os.path.expanduser("~/.local/share")), "autosched")
    return Path(root) / "autosched.db"


# what a measurements table must have to be ours: COLUMNS less those _migrate adds to older files
_OWN_COLUMNS = frozenset(COLUMNS) - {"cost_s", "runs", "build"}
_SQLITE_MAGIC = b"SQLite format 3\x00"
_TRY = "choose another database path (--db, or $AUTOSCHED_HOME for the default)"


class DatabaseError(ValueError):
    """A database file autosched cannot use: the message names the file and the way out.  The file
    is left as it was (it is refused before anything is written to it)."""


class _Unwritable(DatabaseError):
    pass


class Database:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_db_path()
        memory = str(self.path) == ":memory:"
        existed = memory or self.path.exists()
        sides = [] if memory else [self.path.with_name(self.path.name + x) for x in ("-wal", "-shm", "-journal")]
        new_sides = [p for p in sides if not p.exists()]
        if not memory:
            self._check_file()
        try:
            self.conn = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False)
        except sqlite3.Error as e:
            raise DatabaseError(f"{self.path}: cannot open it ({e}): {_TRY}") from e
        try:
            if not memory:
                self._check_contents()
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.executescript(SCHEMA)
            self._migrate()
        except BaseException as e:
            self.conn.close()
            # sqlite creates the file on connect: a refused new path must not leave an empty one
            if not existed and self.path.exists() and self.path.stat().st_size == 0:
                self.path.unlink()
            # a refused connection can leave the -wal and -shm it made: one that could not write
            # (it cannot checkpoint), and one on a damaged file (switching it to WAL mode made them
            # before the damage showed).  An empty -wal holds nothing, so sides this open created
            # go while their -wal is empty; a non-empty one may hold another process's pages
            if not any(_nonempty(p) for p in new_sides if p.name.endswith("-wal")):
                for p in new_sides:
                    p.unlink(missing_ok=True)
            if isinstance(e, sqlite3.OperationalError):        # locked, disk full, cannot open
                raise DatabaseError(f"{self.path}: cannot use it ({e}): {_TRY}") from e
            if isinstance(e, (sqlite3.DatabaseError, UnicodeDecodeError)):   # not a database, malformed
                raise DatabaseError(f"{self.path} is damaged or not an SQLite database ({e}): restore it "
                                    f"from a backup or {_TRY}") from e
            raise

    def _check_file(self) -> None:
        """Refuse, before SQLite touches it, a path that is not a usable database file: SQLite
        would fail later with a bare error (a folder, not SQLite, truncated), or only at the first
        write, after trials have run (read-only).  Read-only comes before any connection because
        opening a WAL file leaves -wal and -shm files beside it even when it cannot be written."""
        p = self.path
        if p.is_dir():
            raise DatabaseError(f"{p} is a folder, not a database file: pass a file path such as "
                                f"{p / 'autosched.db'}")
        if not p.exists():
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise DatabaseError(f"{p}: cannot create its folder ({e.strerror}): {_TRY}") from e
            if not os.access(p.parent, os.W_OK | os.X_OK):
                raise DatabaseError(f"{p}: its folder {p.parent} is not writable, so the database cannot "
                                    f"be created there: make it writable or {_TRY}")
            return
        if not os.access(p, os.R_OK):
            raise DatabaseError(f"{p} cannot be read (permission denied): make it readable or {_TRY}")
        with open(p, "rb") as f:
            head = f.read(100)
        size = p.stat().st_size
        if size and not head.startswith(_SQLITE_MAGIC):
            raise DatabaseError(f"{p} is not an SQLite database (it starts with {head[:16]!r}): it is left "
                                f"as it is; {_TRY}")
        if 0 < size < 100:
            raise DatabaseError(f"{p} is a truncated SQLite database ({size} bytes, less than its header): "
                                f"restore it from a backup or {_TRY}")
        expected = _header_size(head)
        # a file behind its header's page count is whole again once SQLite replays the -wal or
        # rolls back the -journal beside it
        pending = any(_nonempty(p.with_name(p.name + x)) for x in ("-wal", "-journal"))
        if expected and size < expected and not pending:
            raise DatabaseError(f"{p} is a truncated SQLite database ({size:,} of {expected:,} bytes): "
                                f"restore it from a backup or {_TRY}")
        if not os.access(p, os.W_OK):
            raise DatabaseError(f"{p} is read-only: make it writable (chmod u+w) or {_TRY}")
        if not os.access(p.parent, os.W_OK | os.X_OK):
            raise DatabaseError(f"{p}: its folder {p.parent} is not writable, and SQLite writes "
                                f"{p.name}-wal and {p.name}-shm beside the database: make the folder "
                                f"writable or {_TRY}")

    def _check_contents(self) -> None:
        """Refuse another program's SQLite file (our tables would be added to it), and a file that
        cannot be written after all (what os.access does not see): a write rolled back at once."""
        tables = sorted(r[0] for r in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"))
        if tables and "measurements" not in tables:
            raise DatabaseError(f"{self.path} is an SQLite database of another program (tables: "
                                f"{', '.join(tables)}), not an autosched one: it is left as it is; {_TRY}")
        if tables:
            have = {r[1] for r in self.conn.execute("PRAGMA table_info(measurements)")}
            if not _OWN_COLUMNS <= have:
                raise DatabaseError(f"{self.path} has a measurements table that is not autosched's (it lacks "
                                    f"{', '.join(sorted(_OWN_COLUMNS - have))}): it is left as it is; {_TRY}")
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                self.conn.execute(f"PRAGMA user_version={int(version)}")
            finally:
                self.conn.execute("ROLLBACK")
        except sqlite3.OperationalError as e:
            raise _Unwritable(f"{self.path} cannot be written ({e}): make it writable or {_TRY}") from e

    def _migrate(self) -> None:
        have = {r[1] for r in self.conn.execute("PRAGMA table_info(measurements)")}
        # rows from before `build` get NULL: their build is unknown, so they count as stale
        for col, kind in (("cost_s", "REAL"), ("runs", "INTEGER"), ("build", "TEXT")):
            if col not in have:
                with self.conn:
                    self.conn.execute(f"ALTER TABLE measurements ADD COLUMN {col} {kind}")

    def add(self, workload_key: str, device_key: str, template: str, config: dict,
            m: Measurement, versions: dict | None = None, cost_s: float | None = None,
            build: str | None = None) -> None:
        """Insert or replace one measurement, committed at once (a kill loses nothing before it).
        `build`: the build id the runner timed (runner.build_id(template)); None stores an unknown
        build, which no build-filtered query returns.  A config measured again replaces its row,
        stale or not."""
        with self.conn:
            self.conn.execute(
                f"INSERT OR REPLACE INTO measurements ({', '.join(COLUMNS)}) VALUES "
                f"({', '.join('?' * len(COLUMNS))})",
                (workload_key, device_key, template, config_hash(config),
                 json.dumps(config, sort_keys=True), m.status.value, _num(m.min_us), _num(m.median_us),
                 _num(m.spread_us), _num(m.max_abs_err), m.error, m.registers, m.smem_bytes, m.spills,
                 m.source, cost_s, json.dumps(versions or {}, sort_keys=True), time.time(), m.runs, build))

    # The queries below take `build`: a build id, or a mapping template -> build id (for a query
    # over several templates), and return only rows of that build.  build=None returns rows of
    # every build, unknown ones included: only for callers that show what the file holds.

    def measured(self, workload_key: str, device_key: str, template: str, *,
                 build: Builds = None) -> dict[str, Record]:
        """config_hash -> Record of everything already measured for this workload and device."""
        where, args = _build_filter(build)
        rows = self.conn.execute(
            _SELECT + " WHERE workload_key=? AND device_key=? AND template=?" + where,
            (workload_key, device_key, template) + args).fetchall()
        return {r[3]: _record(r) for r in rows}

    def samples(self, device_key: str, template: str, *,
                build: Builds = None) -> list[tuple[dict, dict, float]]:
        """(config, workload params, median us or inf if failed) of every workload measured with
        this template on this device: training data for a cost model."""
        from autosched.workloads import workload_from_key
        where, args = _build_filter(build)
        out, params = [], {}
        for wk, cfg, st, med in self.conn.execute(
                "SELECT workload_key, config, status, median_us FROM measurements "
                "WHERE device_key=? AND template=?" + where, (device_key, template) + args):
            if wk not in params:
                params[wk] = workload_from_key(wk).params
            out.append((json.loads(cfg), params[wk], med if st == "ok" and med is not None else float("inf")))
        return out

    def fastest(self, workload_key: str, device_key: str, template: str | None = None, k: int = 1, *,
                build: Builds = None) -> list[Record]:
        """Up to k measurements that passed their check, fastest first."""
        where, bargs = _build_filter(build)
        q = (_SELECT + " WHERE workload_key=? AND device_key=? AND status='ok'"
             + (" AND template=?" if template else "") + where + " ORDER BY median_us LIMIT ?")
        args = (workload_key, device_key) + ((template,) if template else ()) + bargs + (k,)
        return [_record(r) for r in self.conn.execute(q, args).fetchall()]

    def best(self, workload_key: str, device_key: str, template: str | None = None, *,
             build: Builds = None) -> Record | None:
        top = self.fastest(workload_key, device_key, template, 1, build=build)
        return top[0] if top else None

    def tuning_seconds(self, workload_key: str, device_key: str, template: str, *,
                       build: Builds = None) -> float:
        """Wall time all tuning runs spent on this workload (sum of the per-measurement costs)."""
        where, args = _build_filter(build)
        row = self.conn.execute("SELECT SUM(cost_s) FROM measurements WHERE workload_key=? AND "
                                "device_key=? AND template=?" + where,
                                (workload_key, device_key, template) + args).fetchone()
        return float(row[0] or 0.0)

    def stale(self, current: Callable[[str], str | None] | Mapping[str, str],
              device_key: str | None = None) -> dict[tuple[str, str, str], int]:
        """(workload_key, device_key, template) -> rows whose build is not `current` for their
        template (unknown builds included), for the groups that have any.  The file cannot know
        which build is current, so the caller says: a mapping or a function template -> build id
        (None, or missing from the mapping: no current build, every row of it is stale)."""
        now = current.get if isinstance(current, Mapping) else current
        q = "SELECT workload_key, device_key, template, build, COUNT(*) FROM measurements"
        args: tuple = ()
        if device_key:
            q += " WHERE device_key=?"
            args = (device_key,)
        builds: dict[str, str | None] = {}
        out: dict[tuple[str, str, str], int] = {}
        for wk, dk, tpl, build, n in self.conn.execute(q + " GROUP BY 1, 2, 3, 4", args):
            if tpl not in builds:
                builds[tpl] = now(tpl)
            if build is None or build != builds[tpl]:
                out[(wk, dk, tpl)] = out.get((wk, dk, tpl), 0) + n
        return dict(sorted(out.items()))

    def workloads(self, device_key: str | None = None) -> list[tuple[str, str, str, int]]:
        """(workload_key, device_key, template, rows) for every group in the database."""
        q = "SELECT workload_key, device_key, template, COUNT(*) FROM measurements"
        args: tuple = ()
        if device_key:
            q += " WHERE device_key=?"
            args = (device_key,)
        return self.conn.execute(q + " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3", args).fetchall()

    def add_knob(self, template: str, knob: str, value) -> int:
        """A knob added to a template: rows measured before it existed ran the code path that
        `value` selects now, so they gain knob=value (and a new config hash).  Returns rows changed."""
        rows = self.conn.execute("SELECT rowid, config FROM measurements WHERE template=?", (template,)).fetchall()
        changed = 0
        with self.conn:
            for rowid, text in rows:
                cfg = json.loads(text)
                if knob in cfg:
                    continue
                cfg[knob] = value
                self.conn.execute("UPDATE OR REPLACE measurements SET config=?, config_hash=? WHERE rowid=?",
                                  (json.dumps(cfg, sort_keys=True), config_hash(cfg), rowid))
                changed += 1
        return changed

    def verification(self, key: str) -> tuple[dict, float] | None:
        """(result, timestamp) of a verification stored under `key` (a JSON text that names all it
        depended on), or None."""
        row = self.conn.execute("SELECT result, timestamp FROM verifications WHERE key=?", (key,)).fetchone()
        return (json.loads(row[0]), row[1]) if row else None

    def add_verification(self, key: str, result: dict) -> None:
        with self.conn:
            self.conn.execute("INSERT OR REPLACE INTO verifications (key, result, timestamp) VALUES (?, ?, ?)",
                              (key, json.dumps(result, sort_keys=True), time.time()))

    def close(self) -> None:
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _build_filter(build: Builds) -> tuple[str, tuple]:
    """SQL condition (to append after a WHERE) and its arguments for a query's `build`."""
    if build is None:
        return "", ()
    if isinstance(build, str):
        return " AND build=?", (build,)
    if not build:
        return " AND 0", ()
    pairs = tuple(x for tpl_build in sorted(build.items()) for x in tpl_build)
    return " AND (" + " OR ".join(["(template=? AND build=?)"] * len(build)) + ")", pairs


def _header_size(head: bytes) -> int:
    """Bytes the database has by its 100-byte header, or 0 where the header does not say (the page
    count is valid only when the version-valid-for number matches the change counter)."""
    if len(head) < 100 or head[24:28] != head[92:96]:
        return 0
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    return page * int.from_bytes(head[28:32], "big")


def _nonempty(p: Path) -> bool:
    try:
        return p.stat().st_size > 0
    except OSError:
        return False


def _num(x: float):
    return None if x is None or x != x else float(x)


def _record(r) -> Record:
    m = Measurement(Status(r[5]), *(float("nan") if v is None else v for v in r[6:10]),
                    error=r[10] or "", registers=r[11] or 0, smem_bytes=r[12] or 0, spills=r[13] or 0,
                    source=r[14] or "", runs=r[18] or 0)
    return Record(r[0], r[1], r[2], json.loads(r[4]), m, json.loads(r[16] or "{}"), r[17], r[15], r[19])
