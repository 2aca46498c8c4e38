"""Which config serves a workload: the one selection path every consumer goes through.

    cands = rank(workload, device, db, k=4)          # fastest first, across every template
    best, timed = fastest(cands, time_one, what="in a CUDA graph")

`rank` reads what is known, in a fixed chain of sources: the tuning database for this exact device
key, then the tuning packs that serve without an import (autosched/packs.py: the folder `packs/` beside
the database, and the package's), then a shipped recording taken on the same device key, then a
recording of the same shape taken
on a sibling GPU (`kinship`: the same GPU model under another driver, or another model of the same
architecture and SM count, such as an H200 beside an H100: the same chip with other memory), then the
config a cost model trained on every other shape measured on this device key predicts fastest
("predicted": search/transfer.py), then the same prediction from a sibling's measurements, then a
model of every other GPU model's recordings that takes the GPU's device-query figures as features
(for a GPU of another architecture or SM count), then the rule-based default of the workload's first template.  The first source that holds any config of the workload's space
answers alone, its candidates from every template merged fastest first (the numbers of one source
were taken by one runner under one protocol, so they compare; numbers of two sources may not).

A ranking's numbers come from the tuning protocol (one launch after an L2 flush), which is not how
every caller runs a kernel: a decode step launches it in a CUDA graph right after another kernel.
`fastest` re-times the few best in the caller's own context (`time_one`) and keeps the fastest, its
source saying how it won.

`best_known` is the export's question, which differs on purpose: the best config measured anywhere
(another device key's numbers included), since the exported source may be built for any GPU.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import Callable, Sequence

from autosched import registry
from autosched.identity import current_builds
from autosched.build_filter import ANY, CURRENT, rows_build
from autosched.measure.recording import find_recording, recording_devices
from autosched.packs import from_packs
from autosched.search.transfer import predicted, predicted_across_gpus


@dataclass(frozen=True)
class Candidate:
    template: str                 # the template family that renders `config`
    config: dict
    source: str                   # what a user is shown: "database", "recording <name>", "predicted ...", "default", ...; then how it was re-timed
    median_us: float | None = None    # the source's own time (tuning protocol), None for a default
    origin: str = "given"         # the source as data (Origin): what code asks, never the text above


class Origin:
    """Where a candidate came from, as data: rank's sources, a caller's own config, the defaults."""
    DATABASE = "database"             # measured on this device key
    PACK = "pack"                     # a tuning pack of this device key (autosched/packs.py)
    RECORDING = "recording"           # a shipped recording of this device key
    SIBLING = "sibling"               # a recording of a sibling GPU (kinship 1 or 2)
    PREDICTED = "predicted"           # the cost model of this device key's measurements
    SIBLING_PREDICTED = "sibling predicted"   # ... of a sibling GPU's
    OTHER_GPUS_PREDICTED = "predicted from other GPUs"   # ... of other GPU models', the GPU as features
    DEFAULT = "default"               # the template's rule-based default
    GIVEN = "given"                   # a config a caller named
    UNTUNED = frozenset({SIBLING, PREDICTED, SIBLING_PREDICTED, OTHER_GPUS_PREDICTED, DEFAULT})   # never measured on this GPU


PREDICTED = "predicted"
SIBLING = "a sibling GPU"   # in the source of a config measured on a sibling, not this GPU


def untuned(candidate: Candidate) -> bool:
    """Whether a candidate was never measured on this GPU (a prediction, a default, a sibling's
    measurement)."""
    return candidate.origin in Origin.UNTUNED


def kinship(here, there) -> int | None:
    """How near measurements taken on GPU `there` (a DeviceInfo) are to GPU `here`: 0 the same
    device key, 1 the same GPU model and architecture under another driver or CUDA, 2 another model
    of the same architecture and SM count (the same chip: an H200 runs an H100's kernels at the same
    occupancy, only its memory is faster); None for anything else, whose numbers are not served."""
    if there.key == here.key:
        return 0
    if there.cc != here.cc or there.sm_count != here.sm_count:
        return None
    return 1 if there.name == here.name else 2


def siblings(device, recordings=None) -> list:
    """The DeviceInfos of the recordings' GPUs that are siblings of `device` (kinship 1 or 2),
    nearest first."""
    found = {}
    for d in recording_devices(recordings):
        k = kinship(device, d)
        if k in (1, 2) and d.key not in found:
            found[d.key] = (k, d)
    return [d for _, d in sorted(found.values(), key=lambda kd: (kd[0], kd[1].key))]


# -- what is known -----------------------------------------------------------------------------

def _db_fastest(db, workload_key: str, device_key: str, template, k: int, build=CURRENT) -> list:
    # The one place the database is asked for measured configs, and so the one place its build
    # filter is decided: by default, only rows measured with this version's kernel source and NVRTC
    b = rows_build(build, template, device_key)
    if b is None:
        return db.fastest(workload_key, device_key, template.family, k)
    return db.fastest(workload_key, device_key, template.family, k, build=b)


def from_database(workload, template, device, db, k: int = 1, *, build=CURRENT) -> list[Candidate]:
    """Up to k configs of `template` that passed, fastest first, measured on this exact device key
    with `build` (default: the current build of the template's kernel; ANY: whatever build)."""
    if db is None:
        return []
    return [Candidate(template.family, r.config, "database", r.measurement.median_us, Origin.DATABASE)
            for r in _db_fastest(db, workload.key, device.key, template, k, build)]


def from_pack(workload, template, device, k: int = 1, files=None) -> list[Candidate]:
    """Up to k configs of `template`, fastest first, from the tuning packs that serve without an
    import (packs.pack_files), measured on this exact device key with its current build."""
    names = current_builds(template, device.key).names
    return [Candidate(template.family, c, f"pack {name}", us, Origin.PACK)
            for c, us, name in from_packs(workload.key, device.key, template.family, names, k, files)]


def _recording(workload, template, device, recordings, near):
    """The recording of this shape and template whose GPU's kinship to `device` is in `near`, if it
    is of the program that GPU runs (a recording that names its build: of other code, it says
    nothing); else None."""
    rec = find_recording(workload.key, template.family, recordings)
    if rec is None or kinship(device, rec.device) not in near:
        return None
    if rec.build and rec.build not in current_builds(template, rec.device.key).names:
        return None
    return rec


def from_recording(workload, template, device, recordings=None, k: int = 1) -> list[Candidate]:
    """Up to k configs of `template`, fastest first, from a recording taken on this exact device key
    (numbers from another GPU or driver are a sibling's at best: from_sibling_recording)."""
    rec = _recording(workload, template, device, recordings, (0,))
    if rec is None:
        return []
    return [Candidate(template.family, c, f"recording {rec.name}", m.median_us, Origin.RECORDING)
            for c, m in rec.fastest(k)]


def from_sibling_recording(workload, template, device, recordings=None, k: int = 1) -> list[Candidate]:
    """Up to k configs of `template`, fastest first, from a recording of this shape taken on a
    sibling GPU (`kinship` 1 or 2); its times are that GPU's."""
    rec = _recording(workload, template, device, recordings, (1, 2))
    if rec is None:
        return []
    return [Candidate(template.family, c, f"recording {rec.name} of {SIBLING} ({rec.device.name}: "
                      f"{rec.device.arch}, {rec.device.sm_count} SMs; untuned on {device.name})", m.median_us,
                      Origin.SIBLING) for c, m in rec.fastest(k)]


def from_prediction(workload, template, device, db=None, recordings=None, k: int = 1, *,
                    build=CURRENT) -> list[Candidate]:
    """Up to k configs of `template`, best predicted first, from a cost model of every other shape
    measured on this device key (recordings and the database); median_us is the model's
    prediction, not a measurement.  [] where too little is known."""
    return [Candidate(template.family, c, f"{PREDICTED} (cost model of the other shapes measured on "
                      f"{device.name}; untuned)", us, Origin.PREDICTED)
            for c, us in predicted(workload, template, device, db, recordings, k, build=build)]


def from_sibling_prediction(workload, template, device, db=None, recordings=None, k: int = 1, *,
                            build=CURRENT) -> list[Candidate]:
    """from_prediction with the nearest sibling GPU's measurements, where this GPU has too few."""
    for sib in siblings(device, recordings):
        found = predicted(workload, template, sib, db, recordings, k, build=build)
        if found:
            return [Candidate(template.family, c, f"{PREDICTED} (cost model of the shapes measured on {SIBLING}, "
                              f"{sib.name}; untuned on {device.name})", us, Origin.SIBLING_PREDICTED)
                    for c, us in found]
    return []


def from_other_gpus_prediction(workload, template, device, db=None, recordings=None, k: int = 1, *,
                               build=CURRENT) -> list[Candidate]:
    """Up to k configs of `template`'s space on this GPU, best predicted first, from a cost model of
    what other GPU models measured (their recordings and database rows), with the GPU's device-query
    figures as features: what a GPU model nobody measured is served before the rule-based default."""
    top, names = predicted_across_gpus(workload, template, device, recordings, k, db, build=build)
    return [Candidate(template.family, c, f"{PREDICTED} (cost model of the measurements of other GPU models: "
                      f"{', '.join(names)}; none on {device.name}; untuned)", us, Origin.OTHER_GPUS_PREDICTED)
            for c, us in top]


def _templates(workload) -> list:
    # looked up at each call, not imported once, so a test can stand a second template beside the real one
    return registry.templates_for(workload)


def default_template(templates, device):
    """Of `templates` (in the registry's order), the first that claims the default on this device
    (Template.default_on), else the first: on an sm_90 GPU hgemm's is wgmma's (95% of cuBLAS untuned
    at 4096^3 on the H100, against 31% for mma.sync, the first listed)."""
    return next((t for t in templates if t.default_on(device)), templates[0])


def default_candidate(workload, device, source: str = "default") -> Candidate:
    """The rule-based default of the workload's default_template on this device."""
    t = default_template(_templates(workload), device)
    return Candidate(t.family, t.default_config(workload, device), source, None, Origin.DEFAULT)


def rank(workload, device, db=None, recordings=None, k: int = 1, *, build=CURRENT) -> list[Candidate]:
    """Up to k candidates, fastest first, from the first source that has any config in its
    template's space: the database (this device key), then the packs beside it, then a same-device
    recording, then a sibling GPU's recording of the shape, then the cost model's prediction from the
    other shapes measured on this device key, then from a sibling's, then from every other GPU
    model's recordings (the GPU as features); the default when none has one.  Every template of the workload is asked, and their candidates merged by
    the source's time.  Database rows count only if measured with `build` (default: the current
    build of each template's kernel)."""
    templates = _templates(workload)
    spaces = {t.family: t.space(workload, device) for t in templates}
    sources = (lambda t: from_database(workload, t, device, db, k, build=build),
               lambda t: from_pack(workload, t, device, k),
               lambda t: from_recording(workload, t, device, recordings, k),
               lambda t: from_sibling_recording(workload, t, device, recordings, k),
               lambda t: from_prediction(workload, t, device, db, recordings, k, build=build),
               lambda t: from_sibling_prediction(workload, t, device, db, recordings, k, build=build),
               lambda t: from_other_gpus_prediction(workload, t, device, db, recordings, k, build=build))
    for source in sources:
        found = [c for t in templates for c in source(t) if spaces[t.family].contains(c.config)]
        if found:
            # stable: equal times keep the registry's template order, then the source's own order
            return sorted(found, key=lambda c: c.median_us)[:k]
    return [default_candidate(workload, device)]


class NothingKnown(LookupError):
    """No measured config of a workload anywhere (database or recording)."""


def best_known(workload, device_key: str | None = None, db=None, recordings=None, *, build=CURRENT,
               templates=None) -> Candidate:
    """The best measured config of `workload` for an export: the database's best on `device_key`
    if given and measured there, else the database's best over every device key it holds, else the
    best of a shipped recording (taken on any device).  Every template of the workload is asked;
    the fastest wins.  Rows of the current build are preferred; where the database holds only
    rows of other builds (replays of a recording, an edited kernel), the best of those serves and
    its source says so.  Raises NothingKnown when none of these has a config that passed."""
    templates = templates or _templates(workload)

    def best_on(dk: str, t, build=build):
        rows = _db_fastest(db, workload.key, dk, t, 1, build)
        return rows[0] if rows else None

    def fastest_row(rows):
        rows = [r for r in rows if r is not None]
        return min(rows, key=lambda r: r.measurement.median_us) if rows else None

    if db is not None:
        families = {t.family: t for t in templates}
        groups = [g for g in db.workloads() if g[0] == workload.key and g[2] in families]
        for b, note in ((build, ""), (ANY, ", measured with another build of the kernel")):
            rec = fastest_row([best_on(device_key, t, b) for t in templates]) if device_key else None
            if rec is None:
                rec = fastest_row([best_on(g[1], families[g[2]], b) for g in groups])
            if rec is not None:
                return Candidate(rec.template, rec.config, f"database best on {rec.device_key}{note}",
                                 rec.measurement.median_us)
            if build == ANY:
                break
    recs = [(t, r) for t in templates if (r := find_recording(workload.key, t.family, recordings)) is not None]
    if not recs:
        raise NothingKnown(f"nothing tuned for {workload.key}")
    bests = [(t, r, b) for t, r in recs if (b := r.best()) is not None]
    if not bests:
        raise NothingKnown(f"recording {recs[0][1].name} holds no config that passed its check")
    t, r, (config, m) = min(bests, key=lambda trb: trb[2][1].median_us)
    return Candidate(t.family, config, f"best of recording {r.name}", m.median_us)


# -- re-timed where it runs --------------------------------------------------------------------

@dataclass(frozen=True)
class Timing:
    """One candidate re-timed by the caller: its time (us) or the exception that stopped it."""
    candidate: Candidate
    us: float | None = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.us is not None


def pick(timed: Sequence[Timing], *, what: str, shown: str = "{:.1f} us",
         fallback: Candidate | None = None) -> Candidate:
    """The fastest of `timed` (the first of equal times), its source annotated with how it won,
    e.g. "database, fastest of 4 in a CUDA graph (10.7 us)"; `shown` formats its time.  When none
    could be timed: `fallback` (else the first candidate, the ranking's own best), its source
    saying that nothing was."""
    if not timed:
        raise ValueError("no candidates to choose from")
    n = len(timed)
    ok = [t for t in timed if t.ok]
    if not ok:
        fb = timed[0].candidate if fallback is None else fallback
        return dataclasses.replace(fb, source=f"{fb.source}; none of {n} could be timed {what}")
    best = min(ok, key=lambda t: t.us)
    failed = "" if len(ok) == n else f"; {n - len(ok)} failed"
    return dataclasses.replace(best.candidate, source=f"{best.candidate.source}, fastest of {n} {what} "
                                                      f"({shown.format(best.us)}{failed})")


def fastest(candidates: Sequence[Candidate], time_one: Callable[[Candidate], float], *, what: str,
            shown: str = "{:.1f} us", fallback: Candidate | None = None,
            strict: bool = False) -> tuple[Candidate, list[Timing]]:
    """Time every candidate with `time_one` (microseconds, in the caller's context), one after
    another in order, and keep the fastest: (the winner as `pick` annotates it, a Timing per
    candidate in order).  A candidate whose timing raises is recorded with its exception, skipped
    and warned about (RuntimeWarning naming it); when all raise, the winner is `fallback` or the
    first candidate (see `pick`), unless `strict`: then every candidate failing is taken for what
    it usually is, a fault of the timing context rather than of the configs, and the first error
    is raised."""
    timed = []
    for c in candidates:
        try:
            timed.append(Timing(c, float(time_one(c))))
        except Exception as e:       # one config that cannot build, launch or pass its check is skipped
            timed.append(Timing(c, error=e))
            warnings.warn(f"{c.template} {c.config} could not be timed {what}: {type(e).__name__}: {e}",
                          RuntimeWarning, stacklevel=2)
    if strict and timed and not any(t.ok for t in timed):
        raise RuntimeError(f"none of the {len(timed)} candidates could be timed {what}; the first failed "
                           f"with {type(timed[0].error).__name__}: {timed[0].error}") from timed[0].error
    return pick(timed, what=what, shown=shown, fallback=fallback), timed
