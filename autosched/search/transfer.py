"""Knowledge that transfers between shapes: what a template measured on one GPU model, every shape.

    samples = prior_samples(device.key, template, db)           # recordings + database rows
    top = predicted(workload, template, device, db, k=4)        # [(config, predicted us)], best first

The training data is everything measured with a template on one device key: the shipped recordings
(each a set of real measurements of one shape) and the database's rows of the current build.  The
cost model (search/cost_model.py) sees the shape (the workload's parameters) and what the template
derives from a config on it (blocks, waves, ...), so it predicts for a shape it never saw.  Two
uses:

  - the tuner's prior: a model-guided search of a new shape ranks its first batch by the model
    (tuner.tune hands it these samples);
  - the selection chain's "predicted" source (selection.from_prediction): with no trial at all, an
    unseen shape is served the config the model predicts fastest, not the rule-based default.

A prediction is memoized in the process and cached on disk (<cache>/predicted/, beside the build
cache) under a fingerprint of its training data, so an engine's start pays for a fit only when what
is known has changed.  Recordings of any build train the model (a kernel edit moves times a
little, not the shape of the space); database rows count only under the build asked for.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
from pathlib import Path

import numpy as np

from autosched.build import default_cache_dir
from autosched.build_filter import rows_build
from autosched.database import build_filter
from autosched.identity import current_builds
from autosched.measure.recording import Recording, _load_or_skip, shipped_recordings
from autosched.measure.result import Status
from autosched.search.cost_model import CostModel, Featurizer
from autosched.workloads import workload_from_key

# sklearn is imported inside functions: slow to import, and only a few functions need it

MIN_SAMPLES = 64           # configs that passed, across...
MIN_SHAPES = 2             # ...this many shapes at least, or nothing is predicted
PER_SHAPE_CAP = 4000       # rows of one shape kept for a fit (the fastest 500 always among them)
CACHE_VERSION = 1          # bump when the features or the model change: old cached answers are stale
CACHE_TOP = 16             # configs a cached prediction keeps

_recordings: dict = {}     # (path, mtime, size) -> Recording | None
_models: dict = {}         # (fingerprint, knob columns) -> fitted CostModel (or None: too little to fit)
_answers: dict = {}        # (fingerprint, workload key) -> [(config, us)]


# a recording's file name as `autosched record` writes it and the package ships it:
# <template>-<shape>[-<GPU>].json.gz, the shape starting with a digit
_NAMED = re.compile(r"^([a-z][a-z0-9_]*)-\d")


def may_hold(r, family: str) -> bool:
    """False where a recording file's name says it holds another template than `family` (it is then
    not read at all: loading every shipped file took a tuning's first second); True otherwise,
    names that follow no pattern included."""
    if isinstance(r, Recording):
        return r.template == family
    m = _NAMED.match(Path(r).name)
    return m is None or m.group(1) == family


def _recording(path):
    st = os.stat(path)
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _recordings:
        _recordings[key] = _load_or_skip(path)
    return _recordings[key]


def _of_family(family: str, recordings=None, exclude=()):
    """The Recordings of `family` among `recordings` (paths: default the shipped ones; or Recording
    objects), but those of the workload keys in `exclude`; files named for another template unread."""
    for r in (shipped_recordings() if recordings is None else recordings):
        if not may_hold(r, family):
            continue
        rec = r if isinstance(r, Recording) else _recording(r)
        if rec is not None and rec.template == family and rec.workload_key not in exclude:
            yield rec


def recordings_of(device_key: str, family: str, recordings=None, exclude=()) -> list:
    """The recordings (paths: default the shipped ones; or Recording objects) of `family` taken on
    `device_key`, leaving out those of the workload keys in `exclude`."""
    return [rec for rec in _of_family(family, recordings, exclude) if rec.device.key == device_key]


def recorded_samples(recs) -> list[tuple[dict, dict, float]]:
    """(config, workload params, median us or inf for a failed config) of the recordings `recs`,
    at most PER_SHAPE_CAP of a shape (its fastest 500 and a seeded sample of the rest)."""
    out = []
    for rec in recs:
        params = workload_from_key(rec.workload_key).params
        rows = [(c, params, m.median_us if m.ok else math.inf) for c, m in rec.entries.values()
                if m.status != Status.NOT_RECORDED]
        if len(rows) > PER_SHAPE_CAP:
            rows.sort(key=lambda r: r[2])
            rest = rows[500:]
            rows = rows[:500] + random.Random(len(rows)).sample(rest, PER_SHAPE_CAP - 500)
        out += rows
    return out


def nearest_recordings(device, family: str, recordings=None, exclude=()) -> list:
    """Where `device` has no recording of `family`: those of the nearest other GPU that has (the same
    model under another driver, then the same chip (architecture and SM count), then the GPU model
    with the most recorded shapes), a warm start for a search on a GPU nobody measured; [] where
    there is none."""
    by_key: dict = {}
    for rec in _of_family(family, recordings, exclude):
        by_key.setdefault(rec.device.key, []).append(rec)
    if device.key in by_key or not by_key:
        return by_key.get(device.key, [])

    def nearness(recs):
        d = recs[0].device
        same_chip = d.cc == device.cc and d.sm_count == device.sm_count
        return (0 if d.name == device.name and same_chip else 1 if same_chip else 2, -len(recs), d.key)
    return min(by_key.values(), key=nearness)


def _db_rows(db, device_key: str, template, build) -> list:
    if db is None or not hasattr(db, "samples"):
        return []
    return db.samples(device_key, template.family, build=rows_build(build, template, device_key))


def prior_samples(device_key: str, template, db=None, recordings=None, *, exclude=(), build="current") -> list:
    """Everything measured with `template` on `device_key`: the recordings' rows (but those of the
    workload keys in `exclude`) and the database's rows of `build` (selection.CURRENT: this
    version's kernel; ANY: every build)."""
    return (recorded_samples(recordings_of(device_key, template.family, recordings, exclude))
            + _db_rows(db, device_key, template, build))


# a shape's size in microseconds at nominal rates: the scale the cost model's times are divided by
# (search/cost_model.CostModel.scale).  Only its proportions between shapes matter to the trees,
# so round figures of a current GPU serve every GPU: 3 TB/s, 50 TFLOP/s, 3 us a launch
_BW_B_PER_US, _FLOP_PER_US, _LAUNCH_US = 3e6, 5e7, 3.0
_scales: dict = {}


def scale_for(workload_name: str):
    """params -> the nominal size in us of the `workload_name` workload at those params."""

    def scale(params: dict) -> float:
        key = (workload_name, tuple(sorted(params.items())))
        if key not in _scales:
            w = workload_from_key(f"{workload_name}:" + ",".join(f"{k}={v}" for k, v in sorted(params.items())))
            _scales[key] = max(w.bytes_moved() / _BW_B_PER_US, w.flops() / _FLOP_PER_US) + _LAUNCH_US
        return _scales[key]
    return scale


def _can_fit() -> bool:
    """Whether scikit-learn (the cost model's trees) is installed: without it nothing is predicted."""
    try:
        import sklearn  # noqa: F401
    except ImportError:
        return False
    return True


def enough(samples) -> bool:
    ok = [s for s in samples if math.isfinite(s[2])]
    return len(ok) >= MIN_SAMPLES and len({tuple(sorted(p.items())) for _, p, _ in ok}) >= MIN_SHAPES


def fit(samples, template, device, space, seed: int = 0):
    """A CostModel fitted on `samples` with `space`'s knob columns and the template's derived
    features, or None where there is too little to learn from."""
    if not enough(samples):
        return None
    model = CostModel(Featurizer(space, {}, lambda c, p: template.derived_features(c, p, device)), seed=seed,
                      scale=scale_for(template.workload_name))
    return model if model.fit(samples) else None


def rank_configs(model, workload, configs: list[dict], k: int, params: dict | None = None) -> list[tuple[dict, float]]:
    """The k configs of `configs` the model predicts fastest on `workload` (its params, or `params`:
    the workload's with more columns), with their predicted us."""
    if not configs:
        return []
    pred = model.predict(configs, workload.params if params is None else params)
    order = np.argsort(pred, kind="stable")[:k]
    return [(configs[i], float(pred[i])) for i in order]


def _fingerprint(device, template, recs, db, build) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([CACHE_VERSION, device.key, template.family, current_builds(template, device.key).names,
                         sorted((r.name, r.build_id, len(r.entries)) for r in recs)]).encode())
    if db is not None and hasattr(db, "conn"):
        b = rows_build(build, template, device.key)
        where, bargs = build_filter(b)
        q = "SELECT COUNT(*), MAX(rowid) FROM measurements WHERE device_key=? AND template=?" + where
        h.update(json.dumps(list(db.conn.execute(q, (device.key, template.family) + bargs).fetchone())).encode())
    return h.hexdigest()[:24]


def cache_dir() -> Path:
    return default_cache_dir().parent / "predicted"


def predicted(workload, template, device, db=None, recordings=None, k: int = 1, *,
              build="current") -> list[tuple[dict, float]]:
    """Up to k configs of `template`'s space for `workload`, best predicted first, with their
    predicted us, from a model of everything measured on `device`'s key (but `workload` itself);
    [] where too little is known (or scikit-learn is missing)."""
    if not _can_fit():
        return []
    recs = recordings_of(device.key, template.family, recordings, exclude=(workload.key,))
    fp = _fingerprint(device, template, recs, db, build)
    key = (fp, workload.key)
    if key not in _answers:
        path = cache_dir() / f"{fp}-{hashlib.sha256(workload.key.encode()).hexdigest()[:16]}.json"
        got = _read_cache(path, workload.key)
        if got is None:
            space = template.space(workload, device)
            # the knob columns are the space's: one model per set of them (the same for every shape
            # of a template whose knobs take fixed values)
            mkey = (fp, tuple((kn.name, tuple(kn.values)) for kn in space.knobs))
            if mkey not in _models:
                samples = recorded_samples(recs) + _db_rows(db, device.key, template, build)
                samples = [s for s in samples if s[1] != workload.params]     # what it knows of others
                _models[mkey] = fit(samples, template, device, space)
            model = _models[mkey]
            got = [] if model is None else rank_configs(model, workload, space.enumerate(), CACHE_TOP)
            _write_cache(path, workload.key, got)
        _answers[key] = got
    return _answers[key][:k]


# -- across GPU models ---------------------------------------------------------------------------
# What the device query tells of a GPU, as cost-model columns: measurements of every GPU model train
# one model, which predicts for a GPU model with no measurements of its own.
GPU_FEATURES = ("gpu.sm_count", "gpu.cc", "gpu.smem_per_sm_kb", "gpu.l2_mb", "gpu.regs_per_sm_k",
                "gpu.threads_per_sm")
GPU_ID = "gpu.id"          # which GPU a sample was measured on (not a column: the derived features' device)


def gpu_params(info) -> dict[str, float]:
    """A DeviceInfo's cost-model columns (GPU_FEATURES)."""
    return {"gpu.sm_count": info.sm_count, "gpu.cc": 10 * info.cc[0] + info.cc[1],
            "gpu.smem_per_sm_kb": info.smem_per_sm / 1024, "gpu.l2_mb": info.l2_bytes / 2 ** 20,
            "gpu.regs_per_sm_k": info.regs_per_sm / 1024, "gpu.threads_per_sm": info.max_threads_per_sm}


def _shape(params: dict) -> dict:
    return {k: v for k, v in params.items() if not k.startswith("gpu.")}


def across_gpus(template, device, recordings=None, exclude=(), db=None, build="current") -> tuple[list, list]:
    """(samples, devices): the rows of every recording of `template` taken on another GPU model than
    `device`'s, and the database's rows of `build` on every other GPU model whose figures it kept
    (Database.note_device), but those of the workload keys in `exclude`; each sample's params carry
    its GPU's columns and its index in `devices`."""
    by_key: dict = {}
    for rec in _of_family(template.family, recordings, exclude):
        if rec.device.name != device.name:
            by_key.setdefault(rec.device.key, [rec.device, []])[1].extend(recorded_samples([rec]))
    if db is not None and hasattr(db, "device_infos"):
        skip = [workload_from_key(k).params for k in exclude]
        for info in db.device_infos():
            if info.name != device.name:
                rows = [s for s in _db_rows(db, info.key, template, build) if s[1] not in skip]
                by_key.setdefault(info.key, [info, []])[1].extend(rows)
    devices, samples = [], []
    for info, rows in by_key.values():
        if not rows:
            continue
        extra = {**gpu_params(info), GPU_ID: len(devices)}
        devices.append(info)
        samples += [(c, {**p, **extra}, us) for c, p, us in rows]
    return samples, devices


def fit_across(samples, devices: list, template, space, target=None, seed: int = 0):
    """A CostModel with the GPU's columns beside the shape's: each sample's derived features (blocks,
    waves, occupancy) on the GPU it was measured on, and a prediction's on `target` (its rows' GPU_ID
    len(devices)).  None where there is too little to learn from."""
    if not enough([(c, _shape(p), us) for c, p, us in samples]):
        return None
    known = [*devices, target]

    def derive(c, p):
        return template.derived_features(c, _shape(p), known[int(p[GPU_ID])])

    model = CostModel(Featurizer(space, dict.fromkeys(GPU_FEATURES, 0), derive), seed=seed,
                      scale=lambda p: scale_for(template.workload_name)(_shape(p)))
    return model if model.fit(samples) else None


def rank_across(samples, devices: list, template, workload, device, configs: list[dict], k: int) -> list:
    """The k configs of `configs` a model of `samples` (across_gpus: other GPU models') predicts
    fastest on `workload` on `device`, with their predicted us; [] where there is too little to fit."""
    model = fit_across(samples, devices, template, template.space(workload, device), target=device)
    if model is None:
        return []
    return rank_configs(model, workload, configs, k, {**workload.params, **gpu_params(device), GPU_ID: len(devices)})


def predicted_across_gpus(workload, template, device, recordings=None, k: int = 1, db=None, *,
                          build="current") -> tuple[list, list]:
    """(top, names): up to k configs of `template`'s space on `device` for `workload`, best predicted
    first with their predicted us, from a model of what other GPU models measured (their recordings
    and database rows), and the names of those GPU models; ([], []) where too little is known or
    scikit-learn is missing."""
    if not _can_fit():
        return [], []
    samples, devices = across_gpus(template, device, recordings, exclude=(workload.key,), db=db, build=build)
    if not devices:
        return [], []
    h = hashlib.sha256(json.dumps([CACHE_VERSION, "across", device.key, template.family,
                                   current_builds(template, device.key).names, len(samples),
                                   sum(s[2] for s in samples if math.isfinite(s[2])),
                                   sorted(d.key for d in devices), workload.key]).encode()).hexdigest()[:24]
    names = sorted({d.name for d in devices})
    if h not in _answers:
        path = cache_dir() / f"across-{h}.json"
        got = _read_cache(path, workload.key)
        if got is None:
            got = rank_across(samples, devices, template, workload, device,
                              template.space(workload, device).enumerate(), CACHE_TOP)
            _write_cache(path, workload.key, got)
        _answers[h] = got
    return _answers[h][:k], names


def _read_cache(path: Path, workload_key: str):
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("workload") != workload_key or not isinstance(doc.get("top"), list):
        return None
    return [(c, float(us)) for c, us in doc["top"]]


def _write_cache(path: Path, workload_key: str, top) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"workload": workload_key, "top": [[c, us] for c, us in top]}))
        os.replace(tmp, path)
    except OSError:
        pass                # a read-only cache costs a fit next time, nothing else
