"""The dynamic-shape API (re-exported by autosched.api and `autosched`):

    dw = autosched.dynamic_workload("hgemm", "Mx4096x4096_bt", m_range=(1, 4096))
    res = autosched.tune_dynamic(dw)                 # on the GPU; runner="synthetic" for a CPU dry run
    res.dispatcher(100)                              # micro-kernel index for M = 100
    autosched.export_dynamic(res, "qkv.cu")          # the kernels and the tree, one .cu

The result is saved as JSON beside the database (export.artifact_path); `dynamic_dispatcher(dw)`
reads it back.  Failures are AutoschedError naming the input.
"""

from __future__ import annotations

from pathlib import Path

from autosched import knobs
from autosched.api import AutoschedError, _database
from autosched.build import Builder
from autosched.database import default_db_path
from autosched.device import DeviceInfo, query
from autosched.dynamic.export import export_cu, load_result, save_result
from autosched.dynamic.synthetic import SyntheticRunner
from autosched.dynamic.workload import DynamicWorkload
from autosched.measure.gpu import NoGpu
from autosched.measure.recording import load_shipped
from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate
from autosched.templates.micro_kernels import default_families, dynamic_templates, refusal, switched_off
from autosched.workloads.base import WorkloadError

# gpu_count, GpuRunner and tune_dynamic are imported inside functions: looked up at call time, as tests
# replace them on their modules

DYNAMIC_RUNNERS = ("auto", "gpu", "synthetic")


def dynamic_workload(op: str, shape: str, m_range, instances=None, weights=None, step: int = 1, **options):
    """A workload whose M ranges over m_range ((lo, hi) or "lo:hi", in steps of `step`); `shape` is the
    family's with the symbol M first ("Mx4096x4096_bt"); instances (the Ms tuned on, wkl_insts) and
    weights (wkl_inst_weights) default to dynamic.default_instances and uniform."""
    try:
        return DynamicWorkload.parse(op, shape, m_range, instances, weights, step,
                                     options.pop("layout", None), options.pop("dtype", None))
    except WorkloadError as e:
        raise AutoschedError(str(e)) from e


def open_dynamic_runner(kind: str = "auto"):
    """(runner, note).  synthetic: modelled times on the H100 of the shipped recordings, for a dry
    run where there is no GPU (no recording can answer a dynamic run's made-up probe shapes)."""
    from autosched.device import gpu_count
    if kind not in DYNAMIC_RUNNERS:
        raise AutoschedError(f"unknown runner {kind!r} for a dynamic run; choose from {', '.join(DYNAMIC_RUNNERS)}")
    if kind == "auto":
        if gpu_count() == 0:
            raise AutoschedError("no CUDA GPU here, and a dynamic run cannot be replayed (its probe shapes are "
                                 "made up per micro-kernel): use runner 'synthetic' (--runner synthetic) for a "
                                 "dry run on modelled times")
        kind = "gpu"
    if kind == "gpu":
        from autosched.measure.gpu import GpuRunner
        try:
            return GpuRunner(), "measuring on the GPU"
        except NoGpu as e:
            raise AutoschedError(f"{e}: use runner 'synthetic' for a dry run") from e
    shipped = load_shipped()
    if shipped:
        device = shipped[0][1].device
    else:
        device = DeviceInfo("NVIDIA H100 80GB HBM3", (9, 0), 132, 1024, 2048, 65536, 65536, 49152, 232448,
                            233472, 52428800, 32, "unknown", "13.0")
    return SyntheticRunner(device), (f"[yellow]SYNTHETIC[/]: no GPU used; times are MODELLED for {device.name}, "
                                     "not measured: a dry run of the pipeline, not a tuning result")


def tune_dynamic(dw, *, runner: str = "auto", db=None, rounds: int = 4, per_round: int = 12,
                 max_kernels: int = 6, seed: int = 0, jobs: int | None = None, build: bool = False,
                 on_start=None, on_progress=None, templates=None, row_probe: bool = True):
    """One tuning run for the whole range of `dw` (a DynamicWorkload): micro-kernels probed and
    written to the database `db`, the selected ones verified on every instance, and the result (the
    kernels, the tree, the verification) saved as JSON beside the database.  build: compile every
    micro-kernel with NVRTC for its register count even where the runner needs no binary.
    templates: the micro-kernel templates sampled (templates/micro_kernels.MICRO_KERNELS, by family);
    default (micro_kernels.default_families) those not on wgmma, plus those on it on an sm_90 GPU
    while knobs.WGMMA_IN_AUTO is on, each switched one while its switch (autosched/knobs.py) is on,
    those reading layout nt only for nt; asking for a switched family by name needs its switch too (a result holding wgmma kernels is served by the wgmma
    backend only; the .cu export launches every family for FP16 nt, hgemm_dyn's elsewhere).
    row_probe: also time each micro-kernel on one row of tiles over all of N (on by default: the
    small-M predictions it bounds were 31-39% too fast without it on an H100)."""
    from autosched.dynamic.tune import tune_dynamic as run
    if not hasattr(dw, "instances"):
        raise AutoschedError(f"tune_dynamic takes a dynamic workload (autosched.dynamic_workload), got {dw!r}")
    for label, v in (("rounds", rounds), ("per_round", per_round), ("max_kernels", max_kernels)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise AutoschedError(f"{label} must be an integer >= 1, got {v!r}")
    known = dynamic_templates()
    if templates is not None:
        templates = [templates] if isinstance(templates, str) else list(templates)
        bad = [t for t in templates if t not in known]
        if bad or not templates:
            raise AutoschedError(f"templates must be among {', '.join(known)}, got {templates!r}")
        for fam in templates:
            # asked for by name while off, its kernels would be tuned into an artifact that
            # ops.HgemmDispatch then refuses to serve
            if switched_off(known[fam]):
                raise AutoschedError(refusal(known[fam]))
    r, note = open_dynamic_runner(runner)
    if r.name == "synthetic":
        db = modelled_db(db)
        note += f"; modelled rows are kept apart from measured ones, in {db}"
    with r, _database(db) as database:
        if templates is None:
            wg_ok = HgemmWgmmaDynTemplate().device_refuses(r.device_info) is None and knobs.WGMMA_IN_AUTO.enabled()
            names = default_families(wg_ok, dw.layout)
        else:
            names = templates
        template = [known[n]() for n in names]
        for t in template:
            why = t.refuses(dw.largest) or (t.device_refuses(r.device_info) if hasattr(t, "device_refuses") else None)
            if why:
                raise AutoschedError(f"{dw.key} on {t.family}: {why}")
        if len(template) == 1:
            template = template[0]
        if on_start:
            on_start(note)
        builder = Builder(jobs) if (r.needs_binary or build) else None
        try:
            res = run(dw, template, r, database, rounds=rounds, per_round=per_round, max_kernels=max_kernels,
                      seed=seed, builder=builder, on_progress=on_progress, row_probe=row_probe)
        except RuntimeError as e:
            raise AutoschedError(str(e)) from e
        finally:
            if builder:
                builder.close()
        res.artifact = save_result(res, database.path)
    return res


def modelled_db(db) -> Path | str:
    """The database a synthetic run writes to, for the measured database `db` (a path, an open
    Database, or None: the default): synthetic/<its name> in its folder, so that no ranking, export
    or serving query ever meets a modelled time (its artifacts go to synthetic/dynamic/ likewise)."""
    path = Path(getattr(db, "path", None) or db or default_db_path())
    return ":memory:" if str(path) == ":memory:" else path.parent / "synthetic" / path.name


def dynamic_dispatcher(dw, *, db=None, device=None):
    """The saved dispatcher of `dw` on `device` (default: this GPU, else the synthetic H100, whose
    results are the modelled ones of a synthetic run), or None."""
    if device is None:
        from autosched.device import gpu_count
        if not gpu_count():
            device, db = open_dynamic_runner("synthetic")[0].device_info, modelled_db(db)
        else:
            device = query()
    with _database(db, readonly=True) as database:
        res = load_result(database.path, dw.key, device.key)
    return res.dispatcher if res is not None else None


def export_dynamic(result, out: str | Path, device=None) -> Path:
    """The result's kernels and decision tree as one standalone .cu (export.export_cu)."""
    if device is None:
        device = open_dynamic_runner("synthetic")[0].device_info if result.runner == "synthetic" else None
    if device is None:
        device = query()
    return export_cu(result, out, device)
