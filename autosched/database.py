"""SQLite (WAL) store of measurements: one row per (workload, device, template, config).

A tuning run writes each result as it arrives, so a run that is killed and restarted resumes:
`measured()` tells the search which configs to skip.  Every row names the build it timed
(autosched.identity.build_id: the hash of the binaries and the NVRTC that made them); rankings and
resume ask for one build (with its aliases, the older ids of the same binaries), so timings of other
code stay in the file (`stale()` counts them) but rank nothing.
Verifications (the decode engine's timing of its candidate configs inside its own step) are kept
too, under a key that names everything they depended on.

The file records its schema (PRAGMA user_version = SCHEMA_VERSION): one of a newer autosched is
never written (refused for writing, opened read-only for reading).  Every SQLite failure (a full
disk, another process's lock) reaches the caller as a DatabaseError naming the way out; what was
committed before it stays, so a rerun resumes.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Collection, Mapping, Union
from urllib.parse import quote

from autosched.device import DeviceInfo
from autosched.errors import AutoschedError
from autosched import knobs
from autosched.measure.result import Measurement, Status
from autosched.space import config_hash
from autosched.workloads import workload_from_key

# PRAGMA user_version of the files this autosched writes; a higher one is a newer autosched's, whose
# rows (a NOT NULL column we do not fill, say) we could corrupt.  0: a file from before it was kept
SCHEMA_VERSION = 1

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
CREATE TABLE IF NOT EXISTS devices (
    device_key TEXT PRIMARY KEY,
    info       TEXT NOT NULL
);
"""

# column order of every SELECT and INSERT (named, so a database from before a column was added
# still reads: the column is appended by _migrate)
COLUMNS = ("workload_key", "device_key", "template", "config_hash", "config", "status", "min_us",
           "median_us", "spread_us", "max_abs_err", "error", "registers", "smem_bytes", "spills",
           "source", "cost_s", "versions", "timestamp", "runs", "build")
_SELECT = "SELECT " + ", ".join(COLUMNS) + " FROM measurements"

# a query's build: one build id, several (a tuple: any of them), a mapping template -> build id, or
# None (every build)
Builds = Union[str, tuple, Mapping[str, str], None]


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
    build: str | None = None        # build id timed (autosched.identity.build_id); None: not known


def default_db_path() -> Path:
    root = knobs.HOME.get() or os.path.join(
        os.environ.get("XDG_DATA_HOME", os.path.expanduser("~/.local/share")), "autosched")
    return Path(root) / "autosched.db"


# what a measurements table must have to be ours: COLUMNS less those _migrate adds to older files
_OWN_COLUMNS = frozenset(COLUMNS) - {"cost_s", "runs", "build"}
_SQLITE_MAGIC = b"SQLite format 3\x00"
_TRY = "choose another database path (--db, or $AUTOSCHED_HOME for the default)"
_UPGRADE = "upgrade autosched (pip install -U autosched) to write to it"


class DatabaseError(AutoschedError):
    """A database file autosched cannot use, or an SQLite failure while using it: the message names
    the file and the way out.  A refused file is left as it was."""


def sql_error(path, e: sqlite3.Error) -> DatabaseError:
    """The DatabaseError for SQLite's `e` on the database at `path`, naming what gets past it: SQLite
    rolls back the failed write, so every earlier row is kept and a rerun resumes from them."""
    code = getattr(e, "sqlite_errorname", "") or ""
    text = str(e)
    kept = "rows written so far are kept and a rerun resumes from them"
    if code == "SQLITE_FULL" or "disk is full" in text:
        return DatabaseError(f"{path}: the disk is full ({text}): free space on it and run again ({kept}), or "
                             f"{_TRY}")
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text:
        return DatabaseError(f"{path} is locked by another process ({text}): wait for it to finish, or stop it, "
                             f"and run again ({kept}); or {_TRY}")
    if code.startswith("SQLITE_READONLY") or "readonly" in text:
        return DatabaseError(f"{path} cannot be written ({text}): make it and its folder writable, or {_TRY}")
    return DatabaseError(f"{path}: cannot use it ({text}): {_TRY}")


def _guarded(method):
    """`method` with SQLite's operational failures (full disk, lock, I/O) raised as DatabaseErrors."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.OperationalError as e:
            raise sql_error(self.path, e) from e
    return run


class Database:
    """The measurement store at `path` (None: default_db_path()).  readonly: open it for reading
    only, taking no lock and creating nothing (a missing file reads as empty), as commands that only
    show or serve do; a file of a newer schema is opened so, with a warning, and refused otherwise.
    timeout_s: how long a statement waits for another process's lock before it fails."""

    def __init__(self, path: str | Path | None = None, *, readonly: bool = False, timeout_s: float = 30.0):
        self.path = Path(path) if path else default_db_path()
        self.readonly = readonly
        memory = str(self.path) == ":memory:"
        if readonly and not memory:
            self._open_readonly(timeout_s)
            return
        existed = memory or self.path.exists()
        sides = [] if memory else [self.path.with_name(self.path.name + x) for x in ("-wal", "-shm", "-journal")]
        new_sides = [p for p in sides if not p.exists()]
        if not memory:
            self._check_file()
        try:
            self.conn = sqlite3.connect(str(self.path), timeout=timeout_s, check_same_thread=False)
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
                raise sql_error(self.path, e) from e
            if isinstance(e, (sqlite3.DatabaseError, UnicodeDecodeError)):   # not a database, malformed
                raise DatabaseError(f"{self.path} is damaged or not an SQLite database ({e}): restore it "
                                    f"from a backup or {_TRY}") from e
            raise

    def _open_readonly(self, timeout_s: float) -> None:
        """Open for reading: SQLite's read-only mode, so nothing is created, migrated or locked for
        writing; a missing file is an empty in-memory database."""
        if not self.path.exists():
            self.conn = sqlite3.connect(":memory:", check_same_thread=False)
            self.conn.executescript(SCHEMA)
            return
        self._check_file(writable=False)
        try:
            self.conn = sqlite3.connect(f"file:{quote(str(self.path.resolve()))}?mode=ro", uri=True,
                                        timeout=timeout_s, check_same_thread=False)
            self._check_tables()
            newer = self._newer()
            self._read_as_current()
        except sqlite3.OperationalError as e:
            raise sql_error(self.path, e) from e
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
            raise DatabaseError(f"{self.path} is damaged or not an SQLite database ({e}): restore it "
                                f"from a backup or {_TRY}") from e
        if newer:
            warnings.warn(f"{self.path} {newer}: it is read, never written; {_UPGRADE}", stacklevel=3)

    def _read_as_current(self) -> None:
        """Make an older file read as _migrate would make it, in this connection's TEMP schema (which
        SQLite searches first), the file untouched: empty tables where it has none, NULL for the
        columns it predates."""
        main = {r[0] for r in self.conn.execute("SELECT name FROM main.sqlite_master WHERE type='table'")}
        if "measurements" not in main:
            self.conn.executescript(SCHEMA.replace("CREATE TABLE", "CREATE TEMP TABLE"))
            return
        for table in ("verifications", "devices"):
            if table not in main:
                start = SCHEMA.index(f"CREATE TABLE IF NOT EXISTS {table}")
                self.conn.executescript(SCHEMA[start:SCHEMA.index(";", start) + 1]
                                        .replace("CREATE TABLE", "CREATE TEMP TABLE"))
        have = {r[1] for r in self.conn.execute("PRAGMA main.table_info(measurements)")}
        missing = [c for c in COLUMNS if c not in have]
        if missing:
            self.conn.execute("CREATE TEMP VIEW measurements AS SELECT *, "
                              + ", ".join(f"NULL AS {c}" for c in missing) + " FROM main.measurements")

    def _check_file(self, writable: bool = True) -> None:
        """Refuse, before SQLite touches it, a path that is not a usable database file: SQLite
        would fail later with a bare error (a folder, not SQLite, truncated), or only at the first
        write, after trials have run (read-only).  Read-only comes before any connection because
        opening a WAL file leaves -wal and -shm files beside it even when it cannot be written.
        writable=False: only what reading needs."""
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
        if not writable:
            return
        if not os.access(p, os.W_OK):
            raise DatabaseError(f"{p} is read-only: make it writable (chmod u+w) or {_TRY}")
        if not os.access(p.parent, os.W_OK | os.X_OK):
            raise DatabaseError(f"{p}: its folder {p.parent} is not writable, and SQLite writes "
                                f"{p.name}-wal and {p.name}-shm beside the database: make the folder "
                                f"writable or {_TRY}")

    def _check_contents(self) -> None:
        """Refuse another program's SQLite file (our tables would be added to it), a newer
        autosched's, and a file that cannot be written after all (what os.access does not see): a
        write rolled back at once."""
        self._check_tables()
        newer = self._newer()
        if newer:
            raise DatabaseError(f"{self.path} {newer}: it is left as it is; {_UPGRADE}, or {_TRY}")
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.execute(f"PRAGMA user_version={int(version)}")
        finally:
            self.conn.execute("ROLLBACK")

    def _check_tables(self) -> None:
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

    def _newer(self) -> str | None:
        """Why the file is a newer autosched's (a higher schema version, or a NOT NULL column without
        a default that our rows would leave empty), or None."""
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            return f"was written by a newer autosched (schema version {version}; this one knows up to {SCHEMA_VERSION})"
        unknown = [r[1] for r in self.conn.execute("PRAGMA table_info(measurements)")
                   if r[1] not in COLUMNS and r[3] and r[4] is None]
        if unknown:
            return (f"was written by a newer autosched (its measurements have required column"
                    f"{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}, unknown to this one)")
        return None

    def _migrate(self) -> None:
        have = {r[1] for r in self.conn.execute("PRAGMA table_info(measurements)")}
        # rows from before `build` get NULL: their build is unknown, so they count as stale
        for col, kind in (("cost_s", "REAL"), ("runs", "INTEGER"), ("build", "TEXT")):
            if col not in have:
                with self.conn:
                    self.conn.execute(f"ALTER TABLE measurements ADD COLUMN {col} {kind}")
        if self.conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
            self.conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _writing(self) -> None:
        if self.readonly:
            raise DatabaseError(f"{self.path} was opened read-only: open it without readonly to write to it")

    @_guarded
    def add(self, workload_key: str, device_key: str, template: str, config: dict,
            m: Measurement, versions: dict | None = None, cost_s: float | None = None,
            build: str | None = None) -> None:
        """Insert or replace one measurement, committed at once (a kill loses nothing before it).
        `build`: the build id the runner timed (runner.build_id(template)); None stores an unknown
        build, which no build-filtered query returns.  A config measured again replaces its row,
        stale or not."""
        self._writing()
        with self.conn:
            self.conn.execute(
                f"INSERT OR REPLACE INTO measurements ({', '.join(COLUMNS)}) VALUES "
                f"({', '.join('?' * len(COLUMNS))})",
                (workload_key, device_key, template, config_hash(config),
                 json.dumps(config, sort_keys=True), m.status.value, _num(m.min_us), _num(m.median_us),
                 _num(m.spread_us), _num(m.max_abs_err), m.error, m.registers, m.smem_bytes, m.spills,
                 m.source, cost_s, json.dumps(versions or {}, sort_keys=True), time.time(), m.runs,
                 None if build is None else str(build)))

    @_guarded
    def note_device(self, info) -> None:
        """Keep what the device query told of the GPU behind a device key (DeviceInfo), so that a
        cost model of several GPU models can read this key's rows with its GPU's figures."""
        self._writing()
        with self.conn:
            self.conn.execute("INSERT OR REPLACE INTO devices (device_key, info) VALUES (?, ?)",
                              (info.key, json.dumps(info.to_json(), sort_keys=True)))

    @_guarded
    def device_infos(self) -> list:
        """The DeviceInfo of every device key note_device kept (a file from before it: none)."""
        out = []
        for (doc,) in self.conn.execute("SELECT info FROM devices ORDER BY device_key"):
            try:
                out.append(DeviceInfo.from_json(json.loads(doc)))
            except (ValueError, TypeError):
                continue            # a row another version wrote: its rows are left out, nothing else
        return out

    # The queries below take `build`: a build id, or a mapping template -> build id (for a query
    # over several templates), and return only rows of that build (or of its aliases: the older
    # ids of the same binaries, identity.BuildId).  build=None returns rows of
    # every build, unknown ones included: only for callers that show what the file holds.

    @_guarded
    def measured(self, workload_key: str, device_key: str, template: str, *,
                 build: Builds = None) -> dict[str, Record]:
        """config_hash -> Record of everything already measured for this workload and device."""
        where, args = build_filter(build)
        rows = self.conn.execute(
            _SELECT + " WHERE workload_key=? AND device_key=? AND template=?" + where,
            (workload_key, device_key, template) + args).fetchall()
        return {r[3]: _record(r) for r in rows}

    @_guarded
    def samples(self, device_key: str, template: str, *,
                build: Builds = None) -> list[tuple[dict, dict, float]]:
        """(config, workload params, median us or inf if failed) of every workload measured with
        this template on this device: training data for a cost model."""
        where, args = build_filter(build)
        out, params = [], {}
        for wk, cfg, st, med in self.conn.execute(
                "SELECT workload_key, config, status, median_us FROM measurements "
                "WHERE device_key=? AND template=?" + where, (device_key, template) + args):
            if wk not in params:
                params[wk] = workload_from_key(wk).params
            out.append((json.loads(cfg), params[wk], med if st == "ok" and med is not None else float("inf")))
        return out

    @_guarded
    def fastest(self, workload_key: str, device_key: str, template: str | None = None, k: int = 1, *,
                build: Builds = None) -> list[Record]:
        """Up to k measurements that passed their check, fastest first."""
        where, bargs = build_filter(build)
        q = (_SELECT + " WHERE workload_key=? AND device_key=? AND status='ok'"
             + (" AND template=?" if template else "") + where + " ORDER BY median_us LIMIT ?")
        args = (workload_key, device_key) + ((template,) if template else ()) + bargs + (k,)
        return [_record(r) for r in self.conn.execute(q, args).fetchall()]

    def best(self, workload_key: str, device_key: str, template: str | None = None, *,
             build: Builds = None) -> Record | None:
        top = self.fastest(workload_key, device_key, template, 1, build=build)
        return top[0] if top else None

    @_guarded
    def tuning_seconds(self, workload_key: str, device_key: str, template: str, *,
                       build: Builds = None) -> float:
        """Wall time all tuning runs spent on this workload (sum of the per-measurement costs)."""
        where, args = build_filter(build)
        row = self.conn.execute("SELECT SUM(cost_s) FROM measurements WHERE workload_key=? AND "
                                "device_key=? AND template=?" + where,
                                (workload_key, device_key, template) + args).fetchone()
        return float(row[0] or 0.0)

    @_guarded
    def stale(self, current: Callable[[str], str | Collection[str] | None] | Mapping[str, str],
              device_key: str | None = None) -> dict[tuple[str, str, str], int]:
        """(workload_key, device_key, template) -> rows whose build is not `current` for their
        template (unknown builds included), for the groups that have any.  The file cannot know
        which build is current, so the caller says: a mapping or a function template -> build id,
        or the build ids (a local build and the recordings a replay answers from); None, or missing
        from the mapping: no current build, every row of it is stale."""
        now = current.get if isinstance(current, Mapping) else current
        q = "SELECT workload_key, device_key, template, build, COUNT(*) FROM measurements"
        args: tuple = ()
        if device_key:
            q += " WHERE device_key=?"
            args = (device_key,)
        builds: dict[str, Collection[str]] = {}
        out: dict[tuple[str, str, str], int] = {}
        for wk, dk, tpl, build, n in self.conn.execute(q + " GROUP BY 1, 2, 3, 4", args):
            if tpl not in builds:
                b = now(tpl)
                builds[tpl] = () if b is None else _names(b) if isinstance(b, str) else _all_names(b)
            if build is None or build not in builds[tpl]:
                out[(wk, dk, tpl)] = out.get((wk, dk, tpl), 0) + n
        return dict(sorted(out.items()))

    @_guarded
    def workloads(self, device_key: str | None = None) -> list[tuple[str, str, str, int]]:
        """(workload_key, device_key, template, rows) for every group in the database."""
        q = "SELECT workload_key, device_key, template, COUNT(*) FROM measurements"
        args: tuple = ()
        if device_key:
            q += " WHERE device_key=?"
            args = (device_key,)
        return self.conn.execute(q + " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3", args).fetchall()

    @_guarded
    def add_knob(self, template: str, knob: str, value) -> int:
        """A knob added to a template: rows measured before it existed ran the code path that
        `value` selects now, so they gain knob=value (and a new config hash).  Returns rows changed."""
        rows = self.conn.execute("SELECT rowid, config FROM measurements WHERE template=?", (template,)).fetchall()
        changed = 0
        self._writing()
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

    @_guarded
    def verification(self, key: str) -> tuple[dict, float] | None:
        """(result, timestamp) of a verification stored under `key` (a JSON text that names all it
        depended on), or None."""
        row = self.conn.execute("SELECT result, timestamp FROM verifications WHERE key=?", (key,)).fetchone()
        return (json.loads(row[0]), row[1]) if row else None

    @_guarded
    def add_verification(self, key: str, result: dict) -> None:
        self._writing()
        with self.conn:
            self.conn.execute("INSERT OR REPLACE INTO verifications (key, result, timestamp) VALUES (?, ?, ?)",
                              (key, json.dumps(result, sort_keys=True), time.time()))

    def close(self) -> None:
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _names(build) -> tuple:
    # a build id answers for itself and its aliases (identity.BuildId); a plain string for itself
    return tuple(map(str, getattr(build, "names", (build,))))


def _all_names(builds) -> tuple:
    return tuple(n for b in builds for n in _names(b))


def build_filter(build: Builds) -> tuple[str, tuple]:
    """SQL condition (to append after a WHERE) and its arguments for a query's `build`."""
    if build is None:
        return "", ()
    if isinstance(build, str):
        names = _names(build)
        return f" AND build IN ({', '.join('?' * len(names))})", names
    if isinstance(build, tuple) and build:
        names = _all_names(build)
        return f" AND build IN ({', '.join('?' * len(names))})", names
    if not build:
        return " AND 0", ()
    conds, args = [], []
    for tpl, b in sorted(build.items()):
        names = _names(b)
        conds.append(f"(template=? AND build IN ({', '.join('?' * len(names))}))")
        args += [tpl, *map(str, names)]
    return " AND (" + " OR ".join(conds) + ")", tuple(args)


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
