"""Pieces every benchmark shares: the commit measured, a built kernel launchable on torch's
stream, CUDA-graph timing, error text for a results file, the tune-then-time session, and the
re-rank of the database's fastest configs in the benchmark's own process."""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
import subprocess
import traceback
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from autosched import knobs, layouts
from autosched.build import Builder
from autosched.database import Database
from autosched.identity import build_id
from autosched.measure.protocol import Protocol, Timer
from autosched.runtime import TensorMapArg, encode_tensormap, launch, launch_config, load_kernel, ptr, scalar
from autosched.selection import Candidate, fastest, from_database
from autosched.space import config_hash
from autosched.tuner import measure_configs, versions

# torch and cuda.core are imported inside functions: optional / slow to import, a CPU install runs without
# them; GpuRunner and tune are imported inside functions too: looked up at call time, as tests replace them on
# their modules


def git_commit() -> str:
    """The commit measured: $AUTOSCHED_COMMIT (set where the tree is a copy without .git), else git's
    HEAD, with "+dirty" after it where tracked files differ from it (a copy of a working tree whose
    .git is older than the tree: a device's copy reports its session's first commit for every later
    tree), so a results file never names a commit that is not what ran."""
    sha = knobs.COMMIT.get()
    if sha:
        return sha if re.fullmatch(r"[0-9a-f]{40}", sha) else "unknown"
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if not re.fullmatch(r"[0-9a-f]{40}", sha):
        return "unknown"
    return sha + "+dirty" if dirty else sha


class _PoolArray:
    """A cuda.core Buffer seen through __cuda_array_interface__, so torch can wrap it; the tensor
    holds this object, and so the buffer, for as long as it lives."""

    def __init__(self, buf, shape, typestr: str):
        self.buf = buf
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr,
                                         "data": (int(buf.handle), False), "version": 3, "strides": None}


def pool_tensor(device, stream, shape, dtype=np.float32):
    """A torch tensor in the memory the tuner's worker measures in: a buffer of the device's default
    (stream-ordered) memory pool, not torch's caching allocator.  A benchmark that gives its kernel
    and the library it compares against this same tensor times both on the same bytes at the same
    addresses, allocated as the tuning's measurements were."""
    import torch
    dt = np.dtype(dtype)
    buf = device.allocate(max(1, int(np.prod(shape)) * dt.itemsize), stream=stream)
    stream.sync()
    return torch.as_tensor(_PoolArray(buf, shape, dt.str), device="cuda")


class Launchable:
    """A built kernel with its inputs packed in torch tensors, launchable on a cuda.core stream.
    `on_device` gives inputs already on the device (identity layout), used as they are."""

    def __init__(self, spec, binary, inputs: dict, out, copies: int = 1, on_device: dict | None = None):
        on_device = on_device or {}
        for a in spec.args:
            if a.name in on_device and a.layout != "identity":
                raise ValueError(f"input {a.name} of {spec.name_expression} is packed in layout {a.layout}; "
                                 "only an identity-layout input can be passed as a device tensor")
        import torch
        self.kernel = load_kernel(spec, binary)
        self.cfg = launch_config(spec, pdl=False)
        self.out = out
        self.arg_sets = []
        self._keep = []         # the tensors behind the pointers in arg_sets
        # a "tensormap" argument of an input needs that input's buffer as an "input" argument would
        packed = {a.name: layouts.apply(a.layout, a.params() if a.role == "input" else {}, inputs[a.name])
                  for a in spec.args if _reads_input(a) and a.name not in on_device}
        dev_inputs = {k: torch.from_numpy(np.ascontiguousarray(v).view(np.uint8)).cuda() for k, v in packed.items()}
        dev_inputs.update(on_device)
        for c in range(copies):
            # weight copies for the CUDA-graph run (V is shared, like a decode step's activations)
            tensors = {k: (v if (c == 0 or k == "V") else v.clone()) for k, v in dev_inputs.items()}
            maps = {a.name: _tensormap_arg(a, out if a.params().get("of") == "output" else tensors[a.name])
                    for a in spec.args if a.role == "tensormap"}
            # zeroed here once and reused by every launch of this copy: the kernel resets it
            maps.update({a.name: torch.zeros(a.value, dtype=torch.uint8, device="cuda")
                         for a in spec.args if a.role == "workspace"})
            self.arg_sets.append([scalar(a) if a.role == "scalar"
                                  else maps[a.name] if a.role == "tensormap"
                                  else ptr(maps[a.name]) if a.role == "workspace"
                                  else ptr(out) if a.role == "output" else ptr(tensors[a.name])
                                  for a in spec.args])
            self._keep.append((tensors, maps))

    def launch(self, stream, copy: int = 0) -> None:
        launch(stream, self.cfg, self.kernel, *self.arg_sets[copy])


def _reads_input(arg) -> bool:
    return arg.role == "input" or (arg.role == "tensormap" and arg.params().get("of") == "input")


def _tensormap_arg(arg, data):
    """The TMA map of a "tensormap" argument over the torch tensor `data`, passed by value."""
    return TensorMapArg(encode_tensormap(arg.params(), int(data.data_ptr())))


def checked_launch(launch, w, out, ref, stream, what: str, bound=None):
    """One `launch(stream)` into a NaN-poisoned `out`, checked against the float64 reference
    (within `bound` for workloads whose tolerance depends on the inputs): a kernel that fails raises
    here and is never timed."""
    import torch
    out.fill_(float("nan"))
    launch(stream)
    torch.cuda.synchronize()
    chk = w.check(out.cpu().numpy(), ref) if bound is None else w.check(out.cpu().numpy(), ref, bound)
    if not chk.ok:
        raise RuntimeError(f"{what} failed its check: {chk.message}")
    return chk


def err_text(e: Exception) -> str:
    return "".join(traceback.format_exception(e))[-1500:]


def write_results(benchmark: str, device, rows: list, summary: dict, out_dir, extra: dict | None = None,
                  path=None):
    """bench/results/<benchmark>-<device>-<date>[-N].json in the format of BENCHMARKS.md (-N for the
    Nth run of a day).  A run that writes its progress as it goes passes back the `path` it got
    first, so each write replaces its own file."""
    try:
        import torch
        torch_version = torch.__version__
    except ImportError:         # replay studies run on machines without torch
        torch_version = None
    today = datetime.date.today().isoformat()
    doc = {"benchmark": benchmark, "device": device.name, "device_key": device.key, "date": today,
           "commit": git_commit(), "versions": {"cuda": device.cuda_version, "driver": device.driver_version,
                                                "torch": torch_version},
           "device_info": device.to_json(), "protocol": Protocol().to_json(), **(extra or {}),
           "rows": rows, "summary": summary}
    if path is None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        stem = f"{benchmark}-{device.name.replace(' ', '_')}-{today}"
        path = out / f"{stem}.json"
        run = 1
        while path.exists():          # a second run on the same day keeps the first: stem-2, stem-3, ...
            run += 1
            path = out / f"{stem}-{run}.json"
    path = Path(path)
    path.write_text(json.dumps(doc, indent=1))
    return path


def tune_all(workloads, template, runner, db, builder, *, strategy: str, trials: int | None,
             time_per_shape_s: float | None, log=print) -> dict:
    """Tune every workload (the benchmark's tuning phase) and return workload key -> TuneResult,
    with total_tuning_s / total_trials over every run the database holds.  The default config is
    measured through the same runner, so the database and any recording made from it hold it."""
    from autosched.tuner import tune
    device = runner.device_info
    build = runner.build_id(template)
    tuned = {}
    for w in workloads:
        res = tune(w, template, runner, db, strategy=strategy, trials=trials, builder=builder, seed=1,
                   time_budget_s=time_per_shape_s)
        dflt = template.default_config(w, device)
        if config_hash(dflt) not in db.measured(w.key, device.key, template.family, build=build):
            m = measure_configs(w, template, runner, [dflt], builder)[0]
            db.add(w.key, device.key, template.family, dflt, m, versions(runner.name), build=build)
        res.total_tuning_s = db.tuning_seconds(w.key, device.key, template.family, build=build)
        res.total_trials = len(db.measured(w.key, device.key, template.family, build=build))
        tuned[w.key] = res
        best = f"{res.best.median_us:.2f} us" if res.best else "no config passed"
        log(f"tuned {w.shape_str}: {best} after {res.trials} trials in {res.elapsed_s:.0f} s {res.statuses}")
    return tuned



def rerank_configs(w, template, device, db, first: dict, builder, k: int, time_config):
    """Performance verification: the fastest, timed in this process, of the tuning's pick `first`
    and the database's fastest configs of `w`, k in all.  `time_config(spec, binary)` checks one
    kernel against the reference and returns its median time (us), raising if it fails.
    Returns (config, [{config, tuner_us, bench_us | error}]); `first` where every one failed."""
    space = template.space(w, device)

    def norm(c):
        return tuple(sorted(space.validate(c).items()))
    # the local build: `builder` compiles the current source, so only its timings rank here
    recs = [c for c in from_database(w, template, device, db, 4 * k, build=build_id(template))
            if space.contains(c.config)]
    tuner_us = {}
    for c in recs:
        tuner_us.setdefault(norm(c.config), c.median_us)
    todo, seen = [], set()
    for cand in [Candidate(template.family, first, "tuning's pick")] + recs:
        if norm(cand.config) not in seen:
            seen.add(norm(cand.config))
            todo.append(dataclasses.replace(cand, median_us=tuner_us.get(norm(cand.config))))
    todo = todo[:k]
    if not todo:
        return first, []
    specs = [template.render(w, c.config, device) for c in todo]
    futures = [builder.submit(sp) for sp in specs]      # all build in the pool while the first is timed
    job = {id(c): (spec, fut) for c, spec, fut in zip(todo, specs, futures)}

    def time_one(cand):
        spec, fut = job[id(cand)]
        return time_config(spec, fut.result())
    best, timed = fastest(todo, time_one, what="in the benchmark's process")
    tried = [{"config": t.candidate.config, "tuner_us": t.candidate.median_us,
              **({"bench_us": t.us} if t.ok else {"error": err_text(t.error)})} for t in timed]
    return best.config, tried


@contextmanager
def tuned_then_timed(workloads, template, db_path, *, strategy: str, trials: int | None,
                     time_per_shape_s: float | None, log=print):
    """The benchmarks' two phases: tune every workload through the GPU runner (a worker process),
    then, with the worker gone, give this process the GPU (`gpu`, a cuda.core Device), a protocol
    Timer on torch's stream (so cuBLAS and our kernels queue on one), the database and the builder."""
    import torch
    from cuda.core import Device, Stream

    from autosched.measure.gpu import GpuRunner
    with Database(db_path) as db, Builder() as builder:
        with GpuRunner() as runner:
            device = runner.device_info
            tuned = tune_all(workloads, template, runner, db, builder, strategy=strategy, trials=trials,
                             time_per_shape_s=time_per_shape_s, log=log)
        dev = Device(0)
        dev.set_current()
        torch.cuda.init()
        stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
        timer = Timer(dev, stream, Protocol())
        try:
            yield SimpleNamespace(device=device, gpu=dev, tuned=tuned, db=db, builder=builder, stream=stream, timer=timer)
        finally:
            timer.close()
