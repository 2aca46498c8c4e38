"""The public Python API (re-exported by `autosched`): what the command line does, as functions.

    import autosched
    w = autosched.workload("gemv-q4f16", "4096x4096")
    run = autosched.tune(w, trials=200)              # the GPU if there is one, else a replay
    print(run.result.best.median_us, run.result.best_config)
    best = autosched.best_config(w)                  # database -> same-GPU recording -> default
    autosched.export(w, "gemv.cu")

Nothing here parses arguments or prints: progress and notes reach the caller through callbacks,
failures as `AutoschedError` (a ValueError) whose message names the bad input.
"""

from __future__ import annotations

import contextlib
import datetime
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from autosched.atomic import replacing
from autosched.cuda_export import export_cuda
from autosched.device import query
from autosched.errors import AutoschedError
from autosched.registry import family, family_of, template_named, templates_for
from autosched.workloads import WorkloadError, workload_from_key

# ray is imported inside functions: optional / slow to import, a CPU install runs without it.  autosched's
# measuring, tuning, selection, model-file and database modules are imported inside functions too:
# `import autosched` and the command line start without them (start-up time); gpu_count, GpuRunner, tune and
# rank are also looked up at call time, as tests replace them on their modules

GPU_DEFAULT_TRIALS = 500               # a whole space is ~10^4-10^5 configs: hours on one GPU
RUNNERS = ("auto", "gpu", "replay", "ray")   # ray: a Ray cluster (api.tune(cluster=...), --cluster)


def workload(op: str, shape: str, **options):
    """The workload of operator family `op` (its CLI name, e.g. "gemv-q4f16", or workload name) at
    `shape` (the family's shape syntax, e.g. "12288x4096"), with the family's options
    (registry Family.options: e.g. hgemm's layout="nt", dtype="bf16"; None: not given)."""
    try:
        return family(op).parse(shape, **options)
    except WorkloadError as e:
        raise AutoschedError(str(e)) from e


def _as_workload(w):
    if isinstance(w, tuple):
        return workload(*w)
    return w


def _templates(w, template: str | None):
    ts = templates_for(w)
    if template is None:
        return ts
    named = [t for t in ts if t.family == template]
    if not named:
        raise AutoschedError(f"template {template!r} does not serve {w.key}; its templates: "
                             f"{', '.join(t.family for t in ts)}")
    return named


def recordings_for(w, templates=None) -> list:
    """The shipped (and $AUTOSCHED_RECORDINGS) recordings of `w`, one per template that has one."""
    from autosched.measure.recording import find_recording
    out = []
    for t in templates or templates_for(w):
        rec = find_recording(w.key, t.family)
        if rec is not None:
            out.append(rec)
    return out


def parse_gpus(text: str | None) -> list[int] | None:
    """`--gpus`: "all" (or None) for every GPU of the machine, else comma-separated GPU ids."""
    if text is None or text.strip().lower() == "all":
        return None
    try:
        ids = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        ids = []
    if not ids or any(i < 0 for i in ids) or len(set(ids)) != len(ids):
        raise AutoschedError(f"--gpus wants 'all' or distinct GPU ids such as 0,1; got {text!r}")
    return ids


def _gpu_runner(screen, gpus):
    """The GPU runner over `gpus` (None: every GPU here), its refusals as AutoschedErrors."""
    from autosched.measure.gpu import GpuRunner, MixedGpus
    try:
        return GpuRunner(gpus, screen=screen)
    except (MixedGpus, ValueError) as e:
        raise AutoschedError(str(e)) from e


def _gpu_note(run) -> str:
    n = len(run.slots)
    return f"measuring on {'the GPU' if n == 1 else f'{n} GPUs'}"


def open_runner(kind: str = "auto", w=None, templates=None, screen: float | None = None,
                cluster: str | None = None, gpus: list[int] | None = None):
    """(runner, note).  auto: the GPU if there is one, else the replay runner over the recordings of
    `w`'s templates (which answers from what was measured, so `screen` only applies on the GPU).
    gpus: the GPU ids to measure on, one worker each (default: every GPU of the machine; GPUs of
    different models are refused, naming the groups to choose from).
    cluster (an address, "auto" or "local"), or kind "ray": measure on a Ray cluster, one actor per
    GPU, or, on a cluster without GPUs (or with kind "replay"), replay actors."""
    from autosched.device import gpu_count
    from autosched.measure.recording import ReplayRunner
    if kind not in RUNNERS:
        raise AutoschedError(f"unknown runner {kind!r}; choose from {', '.join(RUNNERS)}")
    if cluster is not None or kind == "ray":
        return _ray_runner(kind, w, templates, screen, cluster or "auto")
    if kind == "auto":
        kind = "gpu" if gpu_count() > 0 else "replay"
    if kind == "gpu":
        from autosched.measure.gpu import NoGpu
        try:
            run = _gpu_runner(screen, gpus)
        except NoGpu as e:
            raise AutoschedError(f"{e}: use the replay runner (runner 'replay' or 'auto'), which answers from "
                                 "measurements recorded on a real GPU") from e
        return run, _gpu_note(run) + (f" (screening at {screen:g}x the best)" if screen else "")
    if gpus is not None:
        raise AutoschedError(f"--gpus {','.join(map(str, gpus))} asks for GPUs and the {kind} runner "
                             "uses none")
    recs = _recordings_or_refuse(w, templates, "no CUDA GPU here")
    return ReplayRunner(recs), _replay_note(recs)


def _recordings_or_refuse(w, templates, why: str) -> list:
    """`w`'s recordings of `templates`, or an error that says what would replay instead: the
    templates this shape has recordings of (where only the named one has none), else the shapes the
    operator's templates have recordings of."""
    from autosched.measure.recording import recorded
    recs = recordings_for(w, templates)
    if recs:
        return recs
    if templates is not None:
        others = [r.template for r in recordings_for(w)]
        if others:
            named = ", ".join(t.family for t in templates)
            raise AutoschedError(f"{why} and no recording of {named} for {w.key}: the replay runner answers from "
                                 f"this shape's recordings of {', '.join(others)} (leave the template out, or name "
                                 "one of those)")
    fams = {t.family for t in templates_for(w)}
    shapes = sorted({workload_from_key(wk).shape_str for wk, t in recorded() if t in fams})
    raise AutoschedError(f"{why} and no recording for {w.key}: the replay runner can only answer for recorded "
                         f"shapes (shipped for {', '.join(sorted(fams))}: {', '.join(shapes) or 'none'}; "
                         "`autosched devices` lists every recording)")


def _replay_note(recs) -> str:
    rec = recs[0]
    names = ", ".join(r.name for r in recs)
    return (f"[yellow]REPLAY[/]: no GPU used; answers are real measurements recorded on "
            f"{rec.device.name} ({rec.date}, {sum(len(r.entries) for r in recs)} configs, {names})")


def _ray_runner(kind: str, w, templates, screen, address: str, replay_ok: bool = True):
    """A RayRunner on the cluster at `address`: GPU actors where it has GPUs (kind "replay": replay
    actors anyway), replay actors over `w`'s recordings where it has none."""
    from autosched.measure.ray_runner import RayMissing, RayRunner, connect
    try:
        resources, started = connect(address)
    except RayMissing as e:
        raise AutoschedError(str(e)) from e
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise AutoschedError(f"cannot join the Ray cluster at {address}: {e}") from e
    gpus = int(resources.get("GPU", 0))
    try:
        if kind == "replay" or (gpus == 0 and kind != "gpu" and replay_ok):
            recs = _recordings_or_refuse(w, templates, f"no GPU in the Ray cluster at {address}"
                                         if gpus == 0 else "a replay on the Ray cluster")
            run = RayRunner(address, recordings=recs, own_connection=started)
            return run, (_replay_note(recs) + f" — on {len(run.actors)} Ray replay actors "
                         f"({run.nodes} node{'s' if run.nodes > 1 else ''})")
        if gpus == 0:
            raise AutoschedError(f"no GPU in the Ray cluster at {address} (CPUs {resources.get('CPU', 0):g}): "
                                 "measuring needs GPU nodes (a CPU-only cluster replays: runner 'replay' or 'auto')")
        run = RayRunner(address, screen=screen, own_connection=started)
    except (AutoschedError, RuntimeError) as e:
        if started:             # no Ray instance this call started outlives its refusal
            import ray
            ray.shutdown()
        if isinstance(e, AutoschedError):
            raise
        raise AutoschedError(str(e)) from e     # refused by the runner: GPUs of several kinds, ...
    return run, (f"measuring on {len(run.actors)} GPUs of the Ray cluster at {address} ({run.nodes} "
                 f"node{'s' if run.nodes > 1 else ''}, {run.device_info.name})"
                 + (f" (screening at {screen:g}x the best)" if screen else ""))


@dataclass
class Plan:
    """What a tuning run is about to search, handed to `on_start` before the first measurement."""
    workload: object
    device: object
    runner_note: str
    templates: list[str]
    raw_size: int
    space_size: int
    prune_report: list[tuple[str, int]]
    coverage: list[str]              # what a replay can answer for, per template
    total: int                       # configs the run will evaluate at most
    stale: int = 0                   # rows of this workload in the database from other builds (kept, unused)
    empty: list[str] = field(default_factory=list)   # templates with no config for this shape, and why


@dataclass
class Tuned:
    """A finished tuning run: the tuner's result, and the rule-based default measured beside it."""
    plan: Plan
    result: object                   # tuner.TuneResult
    default_config: dict = field(default_factory=dict)
    default: object = None           # its Measurement (looked up in a replay, measured on a GPU)
    default_template: str = ""       # whose default: what selection serves an untuned shape on this device

    @property
    def replayed(self) -> bool:
        return bool(self.result.best and self.result.best.source.startswith("replay"))


def tune(w, *, runner="auto", db=None, strategy: str = "model", trials: int | None = None,
         time_s: float | None = None, seed: int = 0, screen: float | None = None, jobs: int | None = None,
         build: bool = False, template: str | None = None, cluster: str | None = None,
         gpus: list[int] | None = None, on_start: Callable[[Plan], None] | None = None,
         on_result: Callable | None = None, builder=None) -> Tuned:
    """Search the schedules of workload `w` (or an (op, shape) pair) over every template that serves
    it (or only `template`), writing every measurement to the database `db` (a path or a Database;
    None: the default file), so an interrupted run resumes.

    runner: "gpu", "replay" (answers from shipped recordings of real GPU measurements) or "auto"; or
    an open Runner (`open_runner`'s), which this run uses and leaves open (several shapes tuned in a
    row, as `tune_model` does, then share its GPU workers); `builder` likewise (a Builder left open).
    trials: configs to evaluate (default: 500 on a GPU, every recorded config in a replay).
    build: with the replay runner, compile every config with NVRTC too (the GPU runner always does).
    cluster: the address of a Ray cluster ("auto": the one `ray start` made here, else a local one)
    to measure on, one actor per GPU (replay actors on a cluster without GPUs); the same as runner "ray".
    gpus: GPU ids of this machine to measure on (default all; see `parse_gpus`).
    on_start(Plan) is called once before measuring; on_result(config, Measurement, TuneResult) after
    each config."""
    from autosched.build import Builder
    from autosched.device import gpu_count
    from autosched.selection import default_template
    from autosched.tuner import SearchSpace, measure_configs
    from autosched.tuner import tune as run_tune
    w = _as_workload(w)
    ts = _templates(w, template)
    given = not isinstance(runner, str)
    if given and (cluster is not None or gpus is not None):
        raise AutoschedError("tune: an open runner already has its GPUs or cluster; pass neither `gpus` nor `cluster`")
    own_builder = builder is None
    # the build pool starts while the GPU workers do (Builder.start); a replay without --build needs none
    if own_builder and (build or (not given and cluster is None and runner in ("gpu", "auto") and gpu_count() > 0)):
        builder = Builder(jobs).start()
    try:
        if given:
            run = runner
            note = _gpu_note(run) if run.name == "gpu" else f"measuring on the {run.name} runner"
        else:
            run, note = open_runner(runner, w, ts, screen, cluster, gpus)
        if builder is None and run.needs_binary:        # a Ray cluster's GPU actors: built here
            builder = Builder(jobs)
        with contextlib.nullcontext(run) if given else run, _database(db) as database:
            device = run.device_info
            full = SearchSpace(w, ts, device)          # every template's pruned space, for the plan
            size = full.size()
            coverage = [n for t in ts if t.family not in full.empty
                        and (n := run.coverage_note(w.key, t.family, full.size(t.family)))]
            # what the run searches: a replay only what its recordings hold (sized once, here)
            search = SearchSpace(w, ts, device, run) if run.partial else full
            total = search.size()
            if trials is None and run.needs_binary and strategy != "exhaustive":
                trials = GPU_DEFAULT_TRIALS
            total = min(trials or total, total)
            builds = {t.family: run.build_id(t) for t in ts}
            stale = sum(n for (wk, _, tf), n in database.stale(builds, device.key).items()
                        if wk == w.key and tf in builds)
            plan = Plan(w, device, note, [t.family for t in ts], full.space.raw_size(), size,
                        full.space.prune_report(), coverage, total, stale, full.empty_notes())
            if on_start:
                on_start(plan)
            res = run_tune(w, ts, run, database, strategy=strategy, trials=trials, time_budget_s=time_s,
                           builder=builder, seed=seed, search=search, on_result=on_result)
            out = Tuned(plan, res)
            if res.best:
                # the default an untuned shape is served on this device: on an sm_90 GPU hgemm's is
                # wgmma's, not the first template's (mma.sync)
                t0 = default_template(ts, device)
                out.default_template = t0.family
                out.default_config = t0.default_config(w, device)
                out.default = measure_configs(w, t0, run, [out.default_config], builder)[0]
    finally:
        if builder and own_builder:
            builder.close()
    return out


def record(w, *, out: str | Path | None = None, db=None, time_s: float | None = None,
           strategy: str = "exhaustive", resume_from: str | Path | None = None, screen: float | None = None,
           jobs: int | None = None, template: str | None = None, cluster: str | None = None,
           gpus: list[int] | None = None, on_start: Callable[[Plan], None] | None = None,
           on_result: Callable | None = None):
    """Measure the whole pruned space of `w` for one template on this GPU and write a recording
    (gzip JSON) that the replay runner can answer from.  Returns (path, Recording, TuneResult).

    template: which template (default: the workload's only one; required when it has several).
    resume_from: a recording of an earlier, partial run of this shape on this kind of GPU, whose
    measurements are taken as done.  Needs a GPU (every GPU here, or `gpus`), or a Ray cluster with
    GPUs (`cluster`: its address)."""
    from autosched.build import Builder
    from autosched.device import gpu_count
    from autosched.measure.gpu import NoGpu
    from autosched.measure.protocol import Protocol
    from autosched.measure.recording import recording_from_db
    from autosched.tuner import tune as run_tune
    from autosched.tuner import versions
    w = _as_workload(w)
    ts = _templates(w, template)
    if len(ts) > 1:
        raise AutoschedError(f"a recording holds one template and {w.key} has {len(ts)} "
                             f"({', '.join(t.family for t in ts)}): name one")
    t = ts[0]
    # the build pool starts while the GPU workers do (Builder.start), as in tune
    builder = Builder(jobs).start() if cluster is None and gpu_count() > 0 else Builder(jobs)
    try:
        run = _ray_runner("gpu", w, ts, screen, cluster, replay_ok=False)[0] if cluster else _gpu_runner(screen, gpus)
    except BaseException as e:
        builder.close()
        if isinstance(e, NoGpu):
            raise AutoschedError(f"{e}: recording measures every config on a GPU (`autosched tune` replays "
                                 "the shipped recordings on a CPU)") from e
        raise
    with run, _database(db) as database, builder:
        device = run.device_info
        space = t.space(w, device)
        size = space.size()
        resumed = 0
        if resume_from:
            resumed = import_recording(Path(resume_from), w, t, device, database)
        if on_start:
            on_start(Plan(w, device, f"recording on the GPU; resumed from {resume_from}: {resumed:,} configs already measured"
                          if resume_from else "recording on the GPU", [t.family], space.raw_size(), size,
                          space.prune_report(), [], size))
        res = run_tune(w, t, run, database, strategy=strategy, builder=builder, time_budget_s=time_s,
                       on_result=on_result)
        rec = recording_from_db(database, w, t, device, Protocol().to_json(), versions("gpu"),
                                datetime.date.today().isoformat(), build=run.build_id(t))
        path = Path(out) if out else Path(f"{t.family}-{w.shape_str}.json.gz")
        rec.save(path)
    return path, rec, res


def import_recording(path: Path, w, template, device, db) -> int:
    """Put an earlier recording's measurements of `w` into the database (so a record run on another
    machine goes on where that one stopped); refuses one from another GPU, shape or template."""
    from autosched.measure.recording import Recording
    from autosched.measure.recording import import_recording as add_rows
    try:
        rec = Recording.load(path)
    except (OSError, ValueError) as e:
        raise AutoschedError(str(e)) from e
    if (rec.workload_key, rec.template) != (w.key, template.family):
        raise AutoschedError(f"{path} records {rec.template} {rec.workload_key}, not {template.family} {w.key}")
    if rec.device.key != device.key:
        raise AutoschedError(f"{path} was measured on {rec.device.key}, not on this GPU ({device.key})")
    return add_rows(db, rec)


def best_config(w, *, device=None, db=None, k: int = 1):
    """The config to serve for `w` on `device` (default: GPU 0, or without a GPU the device of
    its recording): the selection chain's first answer (database for this device, then a recording
    taken on the same device, then the rule-based default), as a selection.Candidate with its
    template and source.  k > 1: the k best, fastest first."""
    from autosched.selection import rank
    w = _as_workload(w)
    device = device or target_device(w)
    with _database(db, readonly=True) as database:
        top = rank(w, device, database, k=k)
    return top if k > 1 else top[0]


def target_device(w=None):
    """The GPU a kernel is for: GPU 0 here, else the GPU of `w`'s recording (or of any shipped
    recording), so that limits (shared memory, registers) are checked against a real GPU."""
    from autosched.device import gpu_count
    from autosched.measure.recording import load_shipped
    if gpu_count() > 0:
        return query(0)
    recs = recordings_for(w) if w is not None else []
    if recs:
        return recs[0].device
    shipped = load_shipped()
    if not shipped:
        raise AutoschedError("no GPU and no recording to take the target GPU's limits from")
    return shipped[0][1].device


def export(w, out: str | Path | None = None, *, config: dict | None = None, template: str | None = None,
           db=None, device_key: str | None = None) -> tuple[Path, str]:
    """Write the kernel for `w` as a standalone .cu with a launcher carrying its grid, block and
    shared memory.  The config is `config` (of `template`, default the workload's first), else the
    best known: the database's for `device_key` (or the fastest on any GPU it holds), else the best
    of a shipped recording.  Returns (path, where the config came from)."""
    from autosched.selection import NothingKnown, best_known
    w = _as_workload(w)
    ts = _templates(w, template)
    if config is not None:
        if not isinstance(config, dict):
            raise AutoschedError(f"a config is a JSON object of knob values, got {config!r}")
        t, source = ts[0], "given config"
    else:
        with _database(db, readonly=True) as database:
            try:
                cand = best_known(w, device_key, database, templates=ts)
            except NothingKnown as e:
                raise AutoschedError(f"{e}: run `autosched tune` first or pass a config") from e
        t = next(x for x in ts if x.family == cand.template)
        config, source = cand.config, cand.source
    device = target_device(w)
    path = Path(out or f"{t.family}_{w.shape_str}.cu")
    try:
        export_cuda(w, t, config, device, path, source=source)
    except ValueError as e:        # a config outside the space, or a template with no exporter
        raise AutoschedError(str(e)) from e
    return path, source


def load_model(spec: str):
    """A llama2.c checkpoint (.bin), a Hugging Face Llama directory, or `random:NAME` (seeded random
    weights at one of the seed's sizes): (config, weights, the path it came from or None)."""
    from autosched.models.hf import read_hf
    from autosched.models.llama2c import SEED_CONFIGS, random_weights, read_checkpoint
    if spec.startswith("random:"):
        name = spec.split(":", 1)[1]
        if name not in SEED_CONFIGS:
            raise AutoschedError(f"unknown random model {name!r}; choose from {', '.join(SEED_CONFIGS)}")
        cfg = SEED_CONFIGS[name]
        if cfg.n_params() > 10**9:
            from autosched.engine.weights import random_weights_torch
            return cfg, random_weights_torch(cfg, 0, "cuda"), None
        return cfg, random_weights(cfg, 0), None
    path = Path(spec)
    if not path.exists():
        raise AutoschedError(f"model {path} does not exist (a llama2.c .bin, a Hugging Face directory, or "
                             "random:NAME)")
    cfg, w = read_hf(path) if path.is_dir() else read_checkpoint(path)
    return cfg, w, path


def model_config(spec: str):
    """The LlamaConfig of a model (as load_model takes it) without reading its weights."""
    from autosched.models.hf import read_hf_config
    from autosched.models.llama2c import SEED_CONFIGS, read_header
    if spec.startswith("random:"):
        name = spec.split(":", 1)[1]
        if name not in SEED_CONFIGS:
            raise AutoschedError(f"unknown random model {name!r}; choose from {', '.join(SEED_CONFIGS)}")
        return SEED_CONFIGS[name]
    path = Path(spec)
    if not path.exists():
        raise AutoschedError(f"model {path} does not exist (a llama2.c .bin, a Hugging Face directory, or "
                             "random:NAME)")
    try:
        return read_hf_config(path) if path.is_dir() else read_header(path)
    except OSError as e:
        raise AutoschedError(f"model {path}: cannot read it ({e})") from e
    except ValueError as e:          # HFError, a llama2.c header that is not one: they name the file
        raise AutoschedError(str(e)) from e


def convert(source: str | Path, dest: str | Path, *, force: bool = False):
    """Convert model weights between a llama2.c checkpoint and a Hugging Face Llama directory.  The
    source is read by its kind (a directory: Hugging Face; a file: llama2.c); the output format is
    the destination's: a path ending in .bin, or any destination of a Hugging Face source, gets a
    llama2.c file, any other a Hugging Face directory.  Never writes over its own input, nor over an
    existing path unless `force`; the output is renamed into place when whole, so a conversion cut
    short leaves nothing at `dest`.  Returns (config, what was written)."""
    from autosched.models.hf import read_hf, write_hf
    from autosched.models.llama2c import read_checkpoint, write_checkpoint
    src, dst = Path(source), Path(dest)
    if not src.exists():
        raise AutoschedError(f"{src} does not exist")
    if dst.exists():
        if dst.resolve() == src.resolve() or (src.is_dir() and dst.resolve().is_relative_to(src.resolve())):
            raise AutoschedError(f"{dst} is the source {src} or inside it: a conversion never writes over its input")
        if not force:
            raise AutoschedError(f"{dst} exists: pass force=True (--force) to write over it")
    cfg, weights = read_hf(src) if src.is_dir() else read_checkpoint(src)
    to_llama2c = src.is_dir() or dst.suffix.lower() == ".bin"
    with replacing(dst, folder=not to_llama2c) as out:
        if to_llama2c:
            write_checkpoint(out, cfg, weights)
        else:
            write_hf(out, cfg, weights)
    return cfg, "llama2.c checkpoint" if to_llama2c else "Hugging Face directory"


def devices():
    """(DeviceInfo of each GPU here, [(path, Recording)] of every shipped recording)."""
    from autosched.device import gpu_count
    from autosched.measure.recording import load_shipped
    return [query(i) for i in range(gpu_count())], load_shipped()     # a bad file is skipped with a warning


def current_build(template_name: str) -> str | None:
    """The build id (binaries and NVRTC, identity.build_id) a GPU here would measure `template_name`
    under; None for a template this version no longer has."""
    from autosched.identity import build_id
    try:
        return build_id(template_named(template_name))
    except ValueError:
        return None


def stale_rows(db=None, device_key: str | None = None, recordings=None) -> dict:
    """(workload key, device key, template) -> database rows measured with another build than this
    version's (an edited kernel, another NVRTC, or unknown: rows from before builds were kept).
    They stay in the file and rank nothing.  A replay's rows are of its recording's build, which a
    rerun resumes from, so the builds of `recordings` ([(path, Recording)], default the shipped
    ones) count as current too."""
    from autosched.measure.recording import load_shipped
    replayed: dict[str, set[str]] = {}
    for _, rec in (load_shipped() if recordings is None else recordings):
        replayed.setdefault(rec.template, set()).add(rec.build_id)

    def current(template: str) -> set[str]:
        return {b for b in (current_build(template),) if b} | replayed.get(template, set())
    with _database(db, readonly=True) as database:
        return database.stale(current, device_key)


class _database:
    """A Database from a path (opened and closed here; readonly: for reading only, see Database) or
    an open one (left open)."""

    def __init__(self, db, readonly: bool = False):
        self.db, self.own, self.readonly = db, not hasattr(db, "conn"), readonly

    def __enter__(self):
        if self.own:
            from autosched.database import Database
            self.db = Database(self.db, readonly=self.readonly)
        return self.db

    def __exit__(self, *exc):
        if self.own:
            self.db.close()


__all__ = ["AutoschedError", "Plan", "Tuned", "best_config", "convert", "devices", "export", "family",
           "family_of", "parse_gpus", "current_build", "import_recording", "stale_rows", "load_model", "open_runner",
           "record", "recordings_for", "target_device", "tune", "workload", "model_config"]
