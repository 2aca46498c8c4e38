"""Tuning packs: the winners of a database as a small versioned file that travels between machines,
in the manner of vLLM's per-device config files and PyTorch TunableOp's results file, but keyed by
everything a measurement depends on (device key, workload, template, build) and carrying its time
and provenance.

    n = export_pack(db, "h200.pack.json")                 # the best `top` configs of every group
    added, kept = import_pack(db, "h200.pack.json")       # into another database: rank serves them
    merge_packs(["a.pack.json", "b.pack.json"], "ab.pack.json")     # the faster measured config wins
    dump(db, "rows.csv")                                  # every row, for analysis (CSV or JSON)

Packs also serve without an import: every pack in the folder `packs/` beside the default database
(and any shipped in the package, `autosched/data/packs/`) is a source of selection.rank, after the
database and before the recordings (`from_packs`), for its own device key and current builds only.

An imported entry is a measurement row like any other, its source saying which pack it came from:
the database's own rules decide what it serves, so a pack of another GPU model or of another build
of a kernel is kept but ranks nothing there (as the database's stale rows), and where a database
already measured a config faster, its own row stays.
"""

from __future__ import annotations

import csv
import json
import math
import time
import warnings
from pathlib import Path

from autosched.atomic import replacing
from autosched.database import default_db_path
from autosched.errors import AutoschedError
from autosched.measure.result import Measurement, Status
from autosched.space import config_hash

SHIPPED_PACKS = Path(__file__).parent / "data" / "packs"
_READ: dict = {}       # (path, mtime, size) -> entries: a pack file read once per process

FORMAT = "autosched-pack"
VERSION = 1
FIELDS = ("device_key", "workload", "template", "build", "config", "median_us", "min_us", "spread_us",
          "runs", "source", "measured_at")


class PackError(AutoschedError):
    """A pack file that cannot be read, named with the reason."""


def _entry(rec) -> dict:
    m = rec.measurement
    return {"device_key": rec.device_key, "workload": rec.workload_key, "template": rec.template,
            "build": rec.build, "config": rec.config, "median_us": m.median_us, "min_us": m.min_us,
            "spread_us": None if math.isnan(m.spread_us) else m.spread_us, "runs": m.runs,
            "source": m.source, "measured_at": rec.timestamp}


def pack_entries(db, device_key: str | None = None, top: int = 1) -> list[dict]:
    """The `top` fastest passing configs of every (device key, workload, template, build) group
    of `db` (one device key's only, if given), as pack entries."""
    if top < 1:
        raise AutoschedError(f"a pack keeps at least one config a group, got top={top}")
    out = []
    for wk, dk, tpl, _ in db.workloads(device_key):
        by_build: dict = {}
        for rec in db.measured(wk, dk, tpl).values():
            if rec.measurement.ok and rec.build is not None:
                by_build.setdefault(rec.build, []).append(rec)
        for build in sorted(by_build):
            best = sorted(by_build[build], key=lambda r: r.measurement.median_us)[:top]
            out += [_entry(r) for r in best]
    return out


def write_pack(entries: list[dict], path, note: str = "") -> Path:
    """The pack file (JSON), written whole or not at all."""
    path = Path(path)
    doc = {"format": FORMAT, "version": VERSION, "created": time.time(), "note": note,
           "entries": sorted(entries, key=lambda e: (e["device_key"], e["workload"], e["template"], e["build"],
                                                     e["median_us"]))}
    with replacing(path) as tmp:
        tmp.write_text(json.dumps(doc, indent=1, sort_keys=True))
    return path


def export_pack(db, path, device_key: str | None = None, top: int = 1) -> int:
    """Write `db`'s winners to `path`; the number of entries."""
    entries = pack_entries(db, device_key, top)
    write_pack(entries, path, note=f"exported from {db.path}")
    return len(entries)


def read_pack(path) -> list[dict]:
    """The entries of a pack file, checked: its format and version, and every entry's fields."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise PackError(f"{path}: no such pack file") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise PackError(f"{path} is not a pack file (not readable JSON: {e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise PackError(f"{path} is not an autosched pack (its format field is not {FORMAT!r})")
    if not isinstance(doc.get("version"), int) or doc["version"] > VERSION:
        raise PackError(f"{path} is a pack of version {doc.get('version')!r}; this autosched reads version "
                        f"{VERSION} and older: upgrade autosched to read it")
    entries = doc.get("entries")
    if not isinstance(entries, list):
        raise PackError(f"{path}: its entries are not a list")
    for i, e in enumerate(entries):
        bad = [f for f in FIELDS if f not in e] if isinstance(e, dict) else list(FIELDS)
        if not bad and not (isinstance(e["config"], dict) and isinstance(e["median_us"], (int, float))
                            and math.isfinite(e["median_us"]) and e["median_us"] > 0):
            bad = ["config or median_us"]
        if bad:
            raise PackError(f"{path}: entry {i} lacks or has an unreadable {', '.join(bad)}")
    return entries


def import_pack(db, path) -> tuple[int, int]:
    """Add the pack's entries to `db` as measured rows whose source names the pack; a config the
    database already measured at least as fast keeps its own row.  (added, kept)."""
    name = Path(path).name
    added = kept = 0
    for e in read_pack(path):
        have = db.measured(e["workload"], e["device_key"], e["template"], build=e["build"])
        own = have.get(config_hash(e["config"]))
        if own is not None and own.measurement.ok and own.measurement.median_us <= e["median_us"]:
            kept += 1
            continue
        spread = e["spread_us"] if e["spread_us"] is not None else float("nan")
        m = Measurement(Status.OK, e["min_us"] if e["min_us"] is not None else e["median_us"], e["median_us"], spread,
                        source=f"pack {name}: {e['source']}", runs=e["runs"] or 0)
        db.add(e["workload"], e["device_key"], e["template"], e["config"], m, build=e["build"])
        added += 1
    return added, kept


def merge_packs(paths, out) -> int:
    """One pack of several: per (device key, workload, template, build, config) the faster entry;
    the number of entries written."""
    best: dict = {}
    for p in paths:
        for e in read_pack(p):
            key = (e["device_key"], e["workload"], e["template"], e["build"], json.dumps(e["config"], sort_keys=True))
            if key not in best or e["median_us"] < best[key]["median_us"]:
                best[key] = e
    write_pack(list(best.values()), out, note="merged from " + ", ".join(Path(p).name for p in paths))
    return len(best)


def dump(db, path, fmt: str | None = None) -> int:
    """Every row of `db` (every build and status) to `path` as CSV or JSON (by `fmt`, else by the
    suffix); the number of rows."""
    path = Path(path)
    fmt = fmt or path.suffix.lstrip(".").lower()
    if fmt not in ("csv", "json"):
        raise AutoschedError(f"dump writes csv or json; {path} names neither (pass --format csv or json)")
    rows = [{**_entry(rec), "status": rec.measurement.status.value}
            for wk, dk, tpl, _ in db.workloads() for rec in db.measured(wk, dk, tpl).values()]
    if fmt == "csv":
        rows = [{**r, "config": json.dumps(r["config"], sort_keys=True)} for r in rows]
    with replacing(path) as tmp:
        if fmt == "json":
            tmp.write_text(json.dumps(rows, indent=1))
        else:
            with open(tmp, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["device_key"])
                w.writeheader()
                w.writerows(rows)
    return len(rows)


def pack_files() -> list[Path]:
    """The packs that serve without an import: the folder `packs/` beside the default database, then
    those shipped in the package."""
    out = []
    for d in (default_db_path().parent / "packs", SHIPPED_PACKS):
        if d.is_dir():
            out += sorted(p for p in d.iterdir() if p.suffix == ".json")
    return out


def _entries_of(path: Path) -> list[dict]:
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _READ:
        try:
            _READ[key] = read_pack(path)
        except PackError as e:           # one bad pack hides only itself, and says why
            warnings.warn(f"skipped a pack that does not read: {e}", RuntimeWarning, stacklevel=3)
            _READ[key] = []
    return _READ[key]


def from_packs(workload_key: str, device_key: str, template: str, builds, k: int = 1,
               files=None) -> list[tuple[dict, float, str]]:
    """Up to k (config, median us, pack name) of the packs (`files`, default pack_files()) for this
    workload, device key and template, measured with one of `builds`, fastest first (a config in
    several packs: its fastest time)."""
    best: dict = {}
    for path in (pack_files() if files is None else files):
        for e in _entries_of(Path(path)):
            if (e["workload"], e["device_key"], e["template"]) == (workload_key, device_key, template) \
                    and e["build"] in builds:
                h = config_hash(e["config"])
                if h not in best or e["median_us"] < best[h][1]:
                    best[h] = (e["config"], e["median_us"], Path(path).name)
    return sorted(best.values(), key=lambda t: t[1])[:k]
