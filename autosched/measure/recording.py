"""Recorded data sets of real GPU measurements, and the replay runner that answers from them.

A recording holds, for one workload on one GPU, every config measured (by `autosched record`) with
its status, times and ptxas resources, plus the DeviceInfo of that GPU, so that on a machine with
no GPU the space is pruned against the GPU the numbers came from.  Format (gzip JSON):

    {"format": "autosched-recording/1", "workload": key, "template": family,
     "device": DeviceInfo, "protocol": {...}, "versions": {...}, "date": ..., "space_size": n,
     "knobs": [names], "columns": [...], "rows": [[knob values..., columns...], ...],
     "errors": {row index: message}, "build": build id}

"build" (autosched.identity.build_id of what was measured; older recordings name a source id, which
identity carries over where it compiles to the same code) came later: a recording without it is
of an unknown build, which Recording.build_id names after the file, so its replayed rows never
pass for measurements of the local build.

What a row may hold (Recording.load refuses anything else, naming the file and the row, since a
replay would otherwise serve it as a real measurement): a value per knob (a number or a string),
a known status, and
  - status "ok": finite positive min_us and median_us (the config passed its check and was timed);
    spread_us and max_abs_err finite and >= 0, or null (not known);
  - any other status: times null (never timed: a compile error, a launch error) or finite and
    >= 0 (a wrong config ran and was timed); max_abs_err null or >= 0, infinite included (an
    output can be that far off);
  - registers, smem_bytes, spills, runs: whole numbers >= 0, or null (read as 0: not known).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import warnings
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Iterable

from autosched import knobs
from autosched.atomic import replacing
from autosched.device import DeviceInfo
from autosched.identity import build_id
from autosched.measure.result import Measurement, Status
from autosched.measure.runner import Runner
from autosched.space import config_hash

FORMAT = "autosched-recording/1"
# "runs" (timed runs behind the times: fewer than the protocol's repeat for a config screened out
# as far slower than the best) came later: a recording without it reads with runs 0 (not known)
COLUMNS = ("status", "min_us", "median_us", "spread_us", "max_abs_err", "registers", "smem_bytes", "spills",
           "runs")


class RecordingError(ValueError):
    """A file that is not a valid recording: the message names the file (and the row)."""


class RecordingWarning(UserWarning):
    """A recording that does not load was skipped where every recording is looked through (the
    message names it and why), so that one bad file blocks neither listing nor tuning."""


_NEEDED = COLUMNS[:8]           # every recording has these; later columns may be missing
_COUNTS = ("registers", "smem_bytes", "spills", "runs")


@dataclass
class Recording:
    workload_key: str
    template: str
    device: DeviceInfo
    knobs: list[str]
    protocol: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)
    date: str = ""
    space_size: int = 0
    entries: dict[str, tuple[dict, Measurement]] = field(default_factory=dict)   # config hash ->
    path: str = ""
    build: str = ""               # build id measured; "" for a recording from before build ids

    def add(self, config: dict, m: Measurement) -> None:
        self.entries[config_hash(config)] = (dict(config), m)

    def lookup(self, config: dict) -> Measurement | None:
        hit = self.entries.get(config_hash(config))
        return hit[1] if hit else None

    def fastest(self, k: int = 1) -> list[tuple[dict, Measurement]]:
        """Up to k configs that passed their check, fastest first, with their measurements."""
        ok = sorted(((c, m) for c, m in self.entries.values() if m.ok), key=lambda cm: cm[1].median_us)
        return ok[:k]

    def best(self) -> tuple[dict, Measurement] | None:
        """The fastest config that passed its check, with its measurement (None if none did)."""
        top = self.fastest(1)
        return top[0] if top else None

    @property
    def name(self) -> str:
        return Path(self.path).name if self.path else f"{self.workload_key}@{self.device.name}"

    @property
    def build_id(self) -> str:
        """The build its measurements are of; for one that does not say, a token naming the
        recording: stable, so a replay resumes from its own rows, and never a local build id."""
        return self.build or f"recording:{self.name}"

    def save(self, path: str | Path) -> None:
        rows, errors = [], {}
        for i, (cfg, m) in enumerate(self.entries.values()):
            rows.append([cfg[k] for k in self.knobs] +
                        [m.status.value, *(_r(x) for x in (m.min_us, m.median_us, m.spread_us)),
                         _r(m.max_abs_err, 6), m.registers, m.smem_bytes, m.spills, m.runs])
            if m.error:
                errors[str(i)] = m.error[:500]
        doc = {"format": FORMAT, "workload": self.workload_key, "template": self.template,
               "device": self.device.to_json(), "device_key": self.device.key,
               "protocol": self.protocol, "versions": self.versions, "date": self.date,
               "space_size": self.space_size, "knobs": self.knobs, "columns": list(COLUMNS),
               "rows": rows, "errors": errors, "build": self.build}
        with replacing(path) as tmp, gzip.open(tmp, "wt") as f:
            json.dump(doc, f, separators=(",", ":"))

    @classmethod
    def load(cls, path: str | Path) -> "Recording":
        """The recording in `path`; RecordingError (a ValueError) naming the file, and the row,
        for one that is not readable or holds what no measurement can (see the module's doc)."""
        try:
            with gzip.open(path, "rt") as f:
                doc = json.load(f)
        except (OSError, EOFError, UnicodeDecodeError) as e:    # not gzip, or truncated
            raise RecordingError(f"{path}: not a readable autosched recording ({e})") from e
        except ValueError as e:                                 # not JSON
            raise RecordingError(f"{path}: not an autosched recording (not JSON: {e})") from e
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            fmt = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
            raise RecordingError(f"{path}: not an autosched recording (format {fmt!r})")

        def bad(what: str) -> RecordingError:
            return RecordingError(f"{path}: {what}; record it again (autosched record) or remove it")

        missing = [k for k in ("workload", "template", "device", "knobs", "rows") if k not in doc]
        if missing:
            raise bad(f"an incomplete recording (no {', '.join(missing)})")
        knobs, columns = doc["knobs"], doc.get("columns", list(COLUMNS[:8]))
        for key, ok in (("workload", isinstance(doc["workload"], str)), ("template", isinstance(doc["template"], str)),
                        ("knobs", _names(knobs)), ("columns", _names(columns)),
                        ("rows", isinstance(doc["rows"], list)), ("errors", isinstance(doc.get("errors", {}), dict)),
                        ("protocol", isinstance(doc.get("protocol", {}), dict)),
                        ("versions", isinstance(doc.get("versions", {}), dict)),
                        ("space_size", _count(doc.get("space_size", 0))),
                        ("build", isinstance(doc.get("build") or "", str))):
            if not ok:
                raise bad(f"its {key} is not what a recording holds")
        lacking = [c for c in _NEEDED if c not in columns]
        if lacking:
            raise bad(f"its rows lack the columns {', '.join(lacking)}")
        try:
            device = DeviceInfo.from_json(doc["device"])
        except (TypeError, KeyError, ValueError) as e:
            raise bad(f"its device is not readable ({type(e).__name__}: {e})") from e
        rec = cls(doc["workload"], doc["template"], device, knobs, doc.get("protocol", {}), doc.get("versions", {}),
                  doc.get("date", ""), doc.get("space_size", 0), path=str(path), build=doc.get("build") or "")
        nk, width = len(knobs), len(knobs) + len(columns)
        errors = doc.get("errors", {})
        for i, row in enumerate(doc["rows"]):
            if not isinstance(row, list) or len(row) != width:
                n = len(row) if isinstance(row, list) else type(row).__name__
                raise bad(f"row {i} has {n} values, not {nk} knobs + {len(columns)} columns")
            cfg = dict(zip(knobs, row[:nk]))
            v = dict(zip(columns, row[nk:]))
            problem = _row_problem(cfg, v, errors.get(str(i), ""))
            if problem:
                raise bad(f"row {i} {problem}")
            m = Measurement(Status(v["status"]), _f(v["min_us"]), _f(v["median_us"]), _f(v["spread_us"]),
                            _f(v["max_abs_err"]), errors.get(str(i), ""), v["registers"] or 0,
                            v["smem_bytes"] or 0, v["spills"] or 0, source=f"replay:{rec.name}",
                            runs=v.get("runs") or 0)
            rec.add(cfg, m)
        return rec


_STATUSES = {s.value for s in Status}


def _names(x) -> bool:
    return isinstance(x, list) and all(isinstance(n, str) for n in x) and len(set(x)) == len(x)


def _count(x) -> bool:
    return x is None or (isinstance(x, int) and not isinstance(x, bool) and x >= 0)


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _row_problem(cfg: dict, v: dict, error) -> str | None:
    """What is wrong with one row (its knob values, its columns by name), or None."""
    for k, x in cfg.items():
        if not isinstance(x, (str, int, float)) or (isinstance(x, float) and not math.isfinite(x)):
            return f"gives knob {k} the value {x!r} (a knob takes a number or a string)"
    status = v["status"]
    if not isinstance(status, str) or status not in _STATUSES:
        return f"has the unknown status {status!r} (known: {', '.join(sorted(_STATUSES))})"
    for c in ("min_us", "median_us", "spread_us", "max_abs_err"):
        x = v[c]
        if x is not None and not _number(x):
            return f"has {c} {x!r}, not a number"
    known = {c: v[c] for c in ("min_us", "median_us", "spread_us", "max_abs_err")
             if v[c] is not None and not math.isnan(v[c])}
    if status == Status.OK.value:
        for c in ("min_us", "median_us"):
            if not (c in known and math.isfinite(known[c]) and known[c] > 0):
                return f"has status ok but {c} {v[c]!r}: a passing config needs a finite time > 0"
    for c, x in known.items():
        finite = math.isfinite(x) or (c == "max_abs_err" and status != Status.OK.value)
        if x < 0 or not finite:
            return f"has {c} {x!r}: it must be finite and >= 0, or null when not known"
    for c in _COUNTS:
        if not _count(v.get(c)):
            return f"has {c} {v.get(c)!r}, not a whole number >= 0"
    if not isinstance(error, str):
        return f"has the error message {error!r}, not a text"
    return None


def _r(x, digits: int = 4):
    return None if x is None or x != x else round(float(x), digits)


def _f(x):
    return float("nan") if x is None else float(x)


def recording_from_db(db, workload, template, device: DeviceInfo, protocol: dict, versions: dict,
                      date: str, build: str | None = None) -> Recording:
    """The database's measurements of one workload on one GPU and one build, as a recording of
    that build (configs no longer in the template's space are left out).  `build` defaults to
    the local build, the one the GPU runner measures."""
    if build is None:
        build = build_id(template)
    space = template.space(workload, device)
    rec = Recording(workload.key, template.family, device, space.names, protocol, versions, date, space.size(),
                    build=build)
    for r in db.measured(workload.key, device.key, template.family, build=build).values():
        if space.contains(r.config):
            rec.add(r.config, r.measurement)
    return rec


def import_recording(db, recording: Recording) -> int:
    """Put a recording's measurements into the database under its workload, device, template and
    build id (so a record run goes on where another machine's stopped, and only where that build
    is the one now measured).  Returns the rows added."""
    build = recording.build_id
    for cfg, m in recording.entries.values():
        db.add(recording.workload_key, recording.device.key, recording.template, cfg,
               replace(m, source=f"gpu (recording {recording.name})"), recording.versions, build=build)
    return len(recording.entries)


def shipped_recordings() -> list[Path]:
    """Recordings in the folders of $AUTOSCHED_RECORDINGS (':'-separated), then those that ship
    inside the package (autosched/data/recordings/*.json.gz)."""
    dirs = [Path(d) for d in knobs.RECORDINGS.get().split(os.pathsep) if d]
    dirs.append(Path(str(resources.files("autosched.data").joinpath("recordings"))))
    out = []
    for d in dirs:
        if d.is_dir():
            out += sorted(p for p in d.iterdir() if p.name.endswith(".json.gz"))
    return out


# a recording file read once per process, (path, mtime, size) -> its Recording, and its header once
# -> (workload key, template): one answer (best_config of an hgemm shape) looks several up, and each
# lookup used to load every shipped file's rows, a minute in all
_LOADED: dict[tuple, Recording] = {}
_KEYS: dict[tuple, tuple] = {}
_DEVICES: dict[tuple, DeviceInfo] = {}


def _file_key(path) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (str(path), st.st_mtime_ns, st.st_size)


def _load_or_skip(path) -> Recording | None:
    key = _file_key(path)
    if key in _LOADED:
        return _LOADED[key]
    try:
        rec = Recording.load(path)
    except ValueError as e:
        warnings.warn(f"skipped a recording that does not load: {e}", RecordingWarning, stacklevel=3)
        return None
    if key is not None:
        _LOADED[key] = rec
    return rec


def _holds(path) -> tuple | None:
    """(workload key, template) a recording file says it holds, read without its rows; None where
    the file does not say (load it to learn why)."""
    key = _file_key(path)
    if key not in _KEYS:
        try:
            with gzip.open(path, "rt") as f:
                doc = json.load(f)
            holds = (doc.get("workload"), doc.get("template"))
        except (OSError, EOFError, ValueError, AttributeError):
            return None
        if not all(isinstance(x, str) for x in holds):
            return None
        _KEYS[key] = holds
        try:
            _DEVICES[key] = DeviceInfo.from_json(doc["device"])
        except (KeyError, TypeError, ValueError):
            pass            # a recording whose device does not read says so when it is loaded
    return _KEYS[key]


def recording_devices(paths=None) -> list[DeviceInfo]:
    """The GPUs the recordings of shipped_recordings() (or of `paths`: files or Recordings) were
    taken on, read from their headers, each device key once."""
    out = {}
    for p in (shipped_recordings() if paths is None else paths):
        if isinstance(p, Recording):
            out.setdefault(p.device.key, p.device)
            continue
        if _holds(p) is not None and (d := _DEVICES.get(_file_key(p))) is not None:
            out.setdefault(d.key, d)
    return list(out.values())


def load_shipped(paths=None) -> list[tuple[Path, Recording]]:
    """(path, Recording) of every recording of shipped_recordings() (or of `paths`); one that does
    not load is skipped with a RecordingWarning naming it, so one bad file hides only itself."""
    out = []
    for p in (shipped_recordings() if paths is None else paths):
        rec = _load_or_skip(p)
        if rec is not None:
            out.append((Path(p), rec))
    return out


def recorded(paths=None) -> list[tuple[str, str]]:
    """(workload key, template) of every recording of shipped_recordings() (or of `paths`) that says,
    read from their headers, not their rows: what a refusal lists without loading them all."""
    return [h for p in (shipped_recordings() if paths is None else paths) if (h := _holds(p)) is not None]


def find_recording(workload_key: str, template: str, paths=None) -> Recording | None:
    """The first recording of `workload_key` by `template` among `paths` (default: the shipped
    ones); a recording that does not load is skipped with a RecordingWarning."""
    for p in (paths or shipped_recordings()):
        holds = _holds(p)
        if holds is not None and holds != (workload_key, template):
            continue
        rec = _load_or_skip(p)
        if rec is not None and rec.workload_key == workload_key and rec.template == template:
            return rec
    return None


class ReplayRunner(Runner):
    """Answers measurements from recordings: the real search runs against real GPU numbers on a
    machine with no GPU.  Several recordings (of the templates of one workload, or of several
    workloads) may serve one runner, all taken on the same kind of GPU; configs no recording holds
    come back as NOT_RECORDED."""

    name = "replay"
    needs_binary = False
    partial = True

    def __init__(self, recordings: "Recording | Iterable[Recording]"):
        recs = [recordings] if isinstance(recordings, Recording) else list(recordings)
        if not recs:
            raise ValueError("a replay runner needs at least one recording")
        keys = {r.device.key for r in recs}
        if len(keys) > 1:
            raise ValueError(f"recordings of different GPUs in one replay runner: {sorted(keys)}")
        self.recordings = {(r.workload_key, r.template): r for r in recs}
        self.recording = recs[0]          # the first: its GPU is the runner's

    @property
    def device_info(self) -> DeviceInfo:
        return self.recording.device

    def _for(self, workload_key: str, template: str) -> "Recording | None":
        return self.recordings.get((workload_key, template))

    def build_id(self, template) -> str:
        """A replay answers with a recording's measurements, so it measures that recording's build."""
        family = getattr(template, "family", template)
        rec = next((r for (_, t), r in self.recordings.items() if t == family), self.recording)
        return rec.build_id

    def covers(self, workload_key: str, template: str, config: dict) -> bool:
        rec = self._for(workload_key, template)
        return rec is not None and rec.lookup(config) is not None

    def coverage_note(self, workload_key: str, template: str, space_size: int) -> str | None:
        rec = self._for(workload_key, template)
        if rec is None:
            return f"no recording of {template} for {workload_key}: the replay searches none of its configs"
        n = len(rec.entries)
        if n >= space_size:
            return f"the recording covers the whole pruned space ({space_size:,} configs)"
        how = rec.versions.get("source", "measured on the GPU")
        return (f"the recording covers {n:,} of the {space_size:,} configs of the pruned space ({how}); "
                f"the replay searches those")

    def measure(self, spec, binary=None) -> Measurement:
        rec = self._for(spec.workload_key, spec.family)
        if rec is None:
            have = ", ".join(f"{t} {w}" for w, t in self.recordings)
            return Measurement(Status.NOT_RECORDED, error=f"no recording of {spec.family} {spec.workload_key} "
                               f"(recordings: {have})", source=f"replay:{self.recording.name}")
        if binary is not None and hasattr(binary, "result"):
            binary = binary.result()
        if binary is not None and not binary.ok:
            return Measurement(Status.COMPILE_ERROR, error=binary.error or "", source=f"replay:{rec.name}")
        m = rec.lookup(dict(spec.config))
        if m is None:
            return Measurement(Status.NOT_RECORDED, error="config not in the recording",
                               source=f"replay:{rec.name}")
        return m

    def measure_stream(self, items):
        for tag, spec, binary in items:
            yield tag, self.measure(spec, binary)
