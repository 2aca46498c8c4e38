"""The DietCode benchmark (issue 16): for each dynamic workload, the wall time of one dynamic tuning
run vs tuning 8 sampled Ms of its range separately, the dispatched kernels' speed on those Ms (none
of them a tuning instance of the dynamic run) vs their per-instance-tuned kernels and vs cuBLAS, and
the dispatcher's host overhead per call.  JSON: bench/results/dynamic-<device>-<date>.json.

    python -m autosched.benchmarks.dynamic [--quick]          # on the GPU

Budgets: each per-instance tuning gets as many measurements as the whole dynamic run took (its
probes, the seeds' included, and verification), so the tuning-time ratio is measured at equal search
effort per shape; each row records both counts (dynamic_measurements, and per_instance_trials of
every untuned M).  Per-instance tuning searches the registry's static hgemm templates (those
`autosched tune` uses).

Cold starts: every tuning, the dynamic run of each workload and each per-instance one alike, starts
as a user tuning that alone would: its own fresh database and a Builder whose compile cache
(build.BuildCache) is a fresh folder, all under one temporary directory removed at the end.  Shared,
a per-instance run would reuse what the dynamic run (or an earlier per-instance run) compiled and
measured: an hgemm binary does not depend on M (nor a wgmma one on the shape), so its builds would
be free.  The GPU runner's worker processes are started once, before any timing, and shared (the
same for both sides), and scikit-learn, which both sides' cost models use, is imported before any
timing too; each tuning starts by having them forget the inputs and float64 references
they hold (GpuRunner.forget_inputs), so each side pays for its own: the dynamic run for its row
family's rows up to its largest M (measure/row_family.py), a per-instance run for its M's.  The dispatched kernels are timed through a third builder, also on a fresh
cache, outside every timed tuning.  `--db PATH`: the dynamic runs' databases are kept beside PATH,
one a workload (PATH's stem + the shape), each new.

Summary keys: tuning_time_speedup (the worst workload's), untuned_geomean_vs_per_instance,
geomean_vs_cublas_m_le_256, dispatcher_overhead_ns, and prefill_2048_speedup_vs_stepwise (None
here: benchmarks/prefill.py measures the engine's prefill, issue 16 item 8, and writes the key into
the newest dynamic-*.json of the same device).

The measuring is injected (`Harness`), so the same logic runs on the CPU in tests with the
synthetic runner and a modelled cuBLAS.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from autosched.benchmarks.common import git_commit, write_results
from autosched.benchmarks.hgemm import _checked, _launchable, cublas_operands, cublas_out, paired_ratio, pool_operands
from autosched.build import BuildCache, Builder
from autosched.database import Database
from autosched.dynamic.workload import BERT_BASE, LLAMA2_7B, DynamicWorkload
from autosched.measure.protocol import Protocol, Timer
from autosched.templates.micro_kernels import default_families, dynamic_templates

# torch, cuda.core and sklearn are imported inside functions: optional / slow to import, a CPU install runs
# without them; tune_dynamic, GpuRunner and tune are imported inside functions too: looked up at call time, as
# tests replace them on their modules

SAMPLED = 8


def workloads(quick: bool = False) -> list[DynamicWorkload]:
    """Llama-2-7B's four projections over M in 1..4096 and BERT-base's three dense layers over
    M = 16 x length, length 1..128 (quick: one of each)."""
    llama = [DynamicWorkload.parse("hgemm", s, (1, 4096)) for s in LLAMA2_7B]
    bert = [DynamicWorkload.parse("hgemm", s, (16, 2048), step=16) for s in BERT_BASE]
    return [llama[0], bert[0]] if quick else llama + bert


def untuned_sample(dw: DynamicWorkload, n: int = SAMPLED, seed: int = 0) -> list[int]:
    """n Ms of the range that are not tuning instances, spread log-uniformly (small Ms matter)."""
    rng = random.Random(seed)
    pool = [m for m in dw.ms() if m not in set(dw.instances)]
    out: set[int] = set()
    for i in range(n * 20):
        if len(out) == n:
            break
        u = math.exp(rng.uniform(math.log(dw.lo), math.log(dw.hi)))
        m = min(pool, key=lambda x: abs(x - u))
        out.add(m)
    return sorted(out)


@dataclass
class Harness:
    """What the benchmark measures with.  tune_dynamic(dw) -> DynamicResult; tune_instance(w, budget)
    -> (template family, config, us[, trials]); time_dispatched(dw, result, M) -> us; cublas_us(w) -> us or
    None (or no callable: no cuBLAS figure); cublas_pair(dw, result, M) -> dict or None: the dispatched kernel
    and cuBLAS timed together on the same buffers (vs_cublas, cublas_us, ours_us, the rounds' range), which
    the ratio to cuBLAS is then read from in place of cublas_us(w) / time_dispatched (the GPU harness's)."""
    device: object
    tune_dynamic: Callable
    tune_instance: Callable
    time_dispatched: Callable
    cublas_us: Callable | None
    templates: tuple = ()       # the micro-kernel templates of the dynamic run (for the record)
    # seconds and counts so far (runner.time_split's, the builders' compiled and compile_s): run()
    # records each tuning's differences, where its wall time went
    spent: Callable | None = None
    cublas_pair: Callable | None = None


def _spent_since(h: Harness, before: dict | None) -> dict | None:
    if h.spent is None or before is None:
        return None
    now = h.spent()
    return {k: now[k] - before.get(k, 0) for k in now}


def dispatcher_overhead_ns(dispatcher, ms, repeat: int = 20000) -> float:
    """Host time of one dispatcher call (M -> kernel index), median of 5 loops."""
    ms = list(ms)
    runs = []
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for i in range(repeat):
            dispatcher(ms[i % len(ms)])
        runs.append((time.perf_counter_ns() - t0) / repeat)
    return sorted(runs)[2]


def geomean(xs) -> float | None:
    xs = [x for x in xs if x is not None and x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def run(h: Harness, dws, log=print, sampled: int = SAMPLED, on_row=None, done=()) -> tuple[list, dict]:
    """on_row(rows) after each workload: a run cut short keeps what it finished.  `done`: rows of
    workloads an earlier call of the same run finished (--resume), kept as they are and not run again."""
    rows = list(done)
    finished = {r["workload"] for r in rows}
    for dw in dws:
        if dw.key in finished:
            continue
        before = h.spent() if h.spent else None
        t0 = time.perf_counter()
        res = h.tune_dynamic(dw)
        dyn_s = time.perf_counter() - t0
        dyn_spent = _spent_since(h, before)
        budget = max(1, res.measurements)
        per = []
        for M in untuned_sample(dw, sampled):
            w = dw.at(M)
            before = h.spent() if h.spent else None
            t1 = time.perf_counter()
            got = h.tune_instance(w, budget)
            tune_s = time.perf_counter() - t1
            inst_spent = _spent_since(h, before)
            fam, cfg, inst_us = got[:3]
            trials = got[3] if len(got) > 3 else None
            disp_us = h.time_dispatched(dw, res, M)
            pair = h.cublas_pair(dw, res, M) if h.cublas_pair else None
            cub = pair["cublas_us"] if pair else (h.cublas_us(w) if h.cublas_us else None)
            per.append({"M": M, "per_instance_template": fam, "per_instance_config": cfg,
                        "per_instance_us": inst_us, "per_instance_tune_s": tune_s, "per_instance_trials": trials,
                        "dispatched_kernel": res.dispatcher(M), "dispatched_us": disp_us, "cublas_us": cub,
                        "vs_per_instance": inst_us / disp_us if disp_us else None,
                        "vs_cublas": pair["vs_cublas"] if pair else (cub / disp_us if (cub and disp_us) else None),
                        **({"cublas_paired": pair} if pair else {}), "spent": inst_spent})
        per_total = sum(p["per_instance_tune_s"] for p in per)
        row = {"workload": dw.key, "shape": dw.shape_str, "range": [dw.lo, dw.hi], "step": dw.step,
               "instances": list(dw.instances), "dynamic_tune_s": dyn_s, "dynamic_measurements": res.measurements,
               "dynamic_micro_kernels_probed": res.measured, "dynamic_seeds": getattr(res, "seeds", 0),
               "micro_kernels": [k.config for k in res.kernels], "verification": res.verification,
               "flagged": [v["M"] for v in res.flagged], "per_instance_budget": budget,
               "dynamic_phase_s": getattr(res, "phase_s", {}), "dynamic_spent": dyn_spent,
               "dynamic_rounds": getattr(res, "history", []),
               "per_instance_tune_s": per_total, "tuning_time_speedup": per_total / dyn_s if dyn_s else None,
               "untuned": per, "dispatcher_overhead_ns": dispatcher_overhead_ns(res.dispatcher, dw.ms()),
               "runner": res.runner}
        rows.append(row)
        if on_row:
            on_row(rows)
        log(f"{dw.shape_str} ({dw.range_str}): dynamic {dyn_s:.1f} s vs {len(per)} per-instance {per_total:.1f} s; "
            f"untuned geomean vs per-instance {geomean(p['vs_per_instance'] for p in per) or float('nan'):.3f}")
    return rows, summarize(rows)


def summarize(rows: list) -> dict:
    """The issue's summary keys over every workload's row."""
    return {
        "tuning_time_speedup": min((r["tuning_time_speedup"] for r in rows if r["tuning_time_speedup"]), default=None),
        "untuned_geomean_vs_per_instance": geomean(p["vs_per_instance"] for r in rows for p in r["untuned"]),
        "geomean_vs_cublas_m_le_256": geomean(p["vs_cublas"] for r in rows for p in r["untuned"] if p["M"] <= 256),
        "dispatcher_overhead_ns": max((r["dispatcher_overhead_ns"] for r in rows), default=None),
        "prefill_2048_speedup_vs_stepwise": None,
        "bars": {"tuning_time_speedup": 5.0, "untuned_geomean_vs_per_instance": 0.9, "geomean_vs_cublas_m_le_256": 1.0},
    }


def micro_kernel_templates(device, wgmma: bool = True) -> list:
    """The dynamic run's micro-kernel templates on `device`: the front's default families
    (templates/micro_kernels.default_families: hgemm_dyn everywhere, wgmma's where `wgmma`, every
    switched family while its switch is on), less those the GPU refuses, as the per-instance tuning
    searches every registry template the GPU runs.  The results' settings record which ran."""
    # every workload of the bench is a linear layer's (nt)
    cands = [dynamic_templates()[f]() for f in default_families(wgmma, "nt")]
    return [t for t in cands if getattr(t, "device_refuses", lambda d: None)(device) is None]


def gpu_harness(db_path=None, rounds: int = 4, per_round: int = 12, wgmma: bool = True, row_probe: bool = True):
    """The GPU's: the dynamic run and per-instance tunings through the GpuRunner (worker processes,
    the tuner's protocol), the dispatched kernel timed through the same runner, and again in this
    process beside cuBLAS through torch, the two in alternation on the same buffers (cublas_pair)."""
    from autosched.dynamic.tune import tune_dynamic
    from autosched.measure.gpu import GpuRunner
    from autosched.tuner import tune
    runner = GpuRunner()
    # what either side's first model fit would import, imported before any timing, as the workers
    # are started before it (seconds of process start-up that neither tuning method is made of)
    import sklearn.ensemble  # noqa: F401
    import sklearn.tree  # noqa: F401
    scratch = _Scratch(tempfile.mkdtemp(prefix="autosched-bench-dynamic-"))
    timing_builder = Builder(cache=BuildCache(scratch.path / "timing-build"))
    cands = micro_kernel_templates(runner.device_info, wgmma)
    dyn_t = {t.family: t for t in cands}
    builders: list = []

    def cold(label: str, db_file=None):
        """A fresh database and a Builder on a fresh compile cache: a tuning started from nothing."""
        d = Path(tempfile.mkdtemp(prefix=label + "-", dir=scratch.path))
        if db_file is not None:                 # kept for the record, but new: no earlier run's probes
            for x in ("", "-wal", "-shm", "-journal"):
                Path(str(db_file) + x).unlink(missing_ok=True)
        builders.append(Builder(cache=BuildCache(d / "build")))
        return Database(db_file or d / "tune.db"), builders[-1]

    def spent() -> dict:
        split = getattr(runner, "time_split", dict)()      # a test's stand-in runner may keep none
        return {**split, "compiled": sum(b.compiled for b in builders),
                "compile_s": sum(b.compile_s for b in builders)}

    def dyn(dw):
        runner.forget_inputs()
        db_file = None
        if db_path is not None:
            p = Path(db_path)
            db_file = p.with_name(f"{p.stem}-{dw.shape_str}.db")
        db, builder = cold("dynamic", db_file)
        try:
            return tune_dynamic(dw, cands if len(cands) > 1 else cands[0], runner, db, rounds=rounds,
                                per_round=per_round, builder=builder, row_probe=row_probe)
        finally:
            builder.close()
            db.close()

    def inst(w, budget):
        runner.forget_inputs()
        db, builder = cold("instance")
        try:
            r = tune(w, None, runner, db, strategy="evolutionary-model", trials=budget, builder=builder, seed=1)
        finally:
            builder.close()
            db.close()
        return r.best_template, r.best_knobs, (r.best.median_us if r.best else float("nan")), r.trials

    def dispatched(dw, res, M):
        # the faster median of two measurements, as cuBLAS's below: one rule for both sides of the
        # ratio, so a transient on either side counts the same
        spec = res.dispatcher.spec(dw.at(M), dyn_t, runner.device_info)
        binary = timing_builder.build(spec)
        ms = [runner.measure(spec, binary) for _ in range(2)]
        return min(m.median_us for m in ms) if all(m.ok for m in ms) else float("nan")

    def cublas_pair(dw, res, M):
        # cuBLAS is compared with the dispatched kernel on the same A, B and C: where buffers lie moves
        # both by 0.5-0.7 us at BERT's 7-13 us (checks/placement-2026-11-27.json, the same offsets fast or
        # slow for both), so a ratio over separately allocated buffers was off by up to 8% either way
        import torch

        from cuda.core import Device, Stream
        w = dw.at(M)
        spec = res.dispatcher.spec(w, dyn_t, runner.device_info)
        binary = timing_builder.build(spec)
        dev = Device(0)
        dev.set_current()
        stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
        timer = Timer(dev, stream, Protocol())
        try:
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
            inputs = w.inputs(seed=1234)
            ref, bound = w.reference(inputs), w.error_bound(inputs)
            on_device, out = pool_operands(dev, stream, w, inputs)
            run = _launchable(spec, binary, inputs, out, on_device)
            _checked(lambda: run(stream), w, out, ref, bound, f"dispatched kernel at M = {M}")
            a, b = cublas_operands(w, on_device["A"], on_device["B"])
            cout = cublas_out(w, out)
            _checked(lambda: torch.matmul(a, b, out=cout), w, out, ref, bound, f"cuBLAS at M = {M}")
            p = paired_ratio(timer, lambda: run(stream), lambda: torch.matmul(a, b, out=cout))
            # each also timed as a series of its own, for the record: where a pairing disagrees with a
            # process of its own, this tells the alternation from the process's state
            series = {"ours_us": float(np.median(timer.time(lambda: run(stream)))),
                      "cublas_us": float(np.median(timer.time(lambda: torch.matmul(a, b, out=cout))))}
            return {"vs_cublas": p["pct_of_cublas"] / 100.0, "vs_cublas_range": [p["pct_min"] / 100.0, p["pct_max"] / 100.0],
                    "cublas_us": float(np.median(p["cublas_us"])), "ours_us": float(np.median(p["us"])),
                    "rounds": p["rounds"], "series": series, "host_late": p["host_late"],
                    "late_rounds_redone": p["late_rounds_redone"],
                    "cublas_kernels": _kernel_names(lambda: torch.matmul(a, b, out=cout))}
        finally:
            timer.close()

    return (Harness(runner.device_info, dyn, inst, dispatched, None, templates=tuple(dyn_t), spent=spent,
                    cublas_pair=cublas_pair),
            (scratch, timing_builder, runner))


def _kernel_names(enqueue) -> list[str]:
    """The kernels one enqueue() launches, by torch's profiler: which cuBLAS picked, on the record (its
    768 x 768 times in the quick bench of 2026-11-27 were 1.2 us above those of the same call in a
    process of its own, checks/alloc-pairs-*.json)."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        enqueue()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type.name == "CUDA"]


class _Scratch:
    """The temporary directory of the cold databases and caches; close() removes it."""

    def __init__(self, path):
        self.path = Path(path)

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


PARTIAL = "dynamic-partial.json"


def resumable(partial_path, device_key: str, settings: dict) -> tuple[list, list]:
    """(rows, commits) of a run cut short (its `dynamic-partial.json`): the finished workloads' rows,
    which --resume carries into this call, and the commits they were measured at.  Refused unless they
    were measured on a GPU of this model with the same settings (and so the same protocol of
    comparison)."""
    d = json.loads(Path(partial_path).read_text())
    if not isinstance(d, dict) or "rows" not in d:
        raise ValueError(f"{partial_path}: not a DietCode partial file (no rows)")
    if d.get("device_key") != device_key:
        raise ValueError(f"{partial_path}: measured on {d.get('device_key')!r}, this GPU is {device_key!r}")
    if d.get("settings") != settings:
        raise ValueError(f"{partial_path}: settings {d.get('settings')} differ from this call's {settings}")
    return d["rows"], d.get("commits", [])


def run_benchmark(quick: bool = False, out_dir="bench/results", db_path=None, console=None, *,
                  rounds: int = 4, per_round: int = 12, sampled: int = SAMPLED, wgmma: bool = True,
                  row_probe: bool = True, resume=None):
    log = console.print if console else print
    h, closers = gpu_harness(db_path, rounds=rounds, per_round=per_round, wgmma=wgmma, row_probe=row_probe)
    settings = {"quick": quick, "rounds": rounds, "per_round": per_round, "sampled": sampled,
                "micro_kernel_templates": sorted(h.templates), "row_probe": row_probe,
                "cublas": "paired on the same buffers" if h.cublas_pair else "own buffers",
                # Timer.time_alternating's rounds since 2026-11-27 (the plain first, second rounds before
                # it biased single points by 5-9% either way: checks/slot-bias-2026-11-27.json)
                **({"pairing": "a, b, b, a rounds; late rounds redone"} if h.cublas_pair else {})}
    try:
        done, earlier = resumable(resume, h.device.key, settings) if resume else ([], [])
        if done:
            log(f"resuming: {len(done)} workloads finished in {resume} are kept as measured")
        partial = Path(out_dir) / PARTIAL
        partial.parent.mkdir(parents=True, exist_ok=True)
        # each finished workload's row, with what a resumed call must match
        head = {"device_key": h.device.key, "settings": settings, "commits": sorted({git_commit(), *earlier})}
        rows, summary = run(h, workloads(quick), log, sampled=sampled, done=done, on_row=lambda rs: partial.write_text(
            json.dumps({**head, "rows": rs}, indent=1, default=str)))
        summary["settings"] = {**settings, **({"resumed_rows": len(done)} if done else {})}
    finally:
        for c in reversed(closers):
            c.close()
    extra = {"resumed_from_commits": earlier} if done else None
    path = write_results("dynamic", h.device, rows, summary, out_dir, extra=extra)
    partial.unlink(missing_ok=True)
    log(f"wrote {path}: {summary}")
    return path


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="one Llama and one BERT workload")
    p.add_argument("--out", default="bench/results")
    p.add_argument("--db", default=None)
    p.add_argument("--rounds", type=int, default=4, help="search rounds of the dynamic run (default 4)")
    p.add_argument("--per-round", type=int, default=12, help="micro-kernels probed a round (default 12)")
    p.add_argument("--no-wgmma", action="store_true",
                   help="micro-kernels of hgemm_dyn (mma.sync) only, also on an sm_90 GPU")
    p.add_argument("--no-row-probe", action="store_true",
                   help="probe each micro-kernel at its two grids only, not also on the range's smallest real shape "
                        "(one row of tiles over all of N, which bounds the cost model's partial waves from below; "
                        "on by default)")
    p.add_argument("--sampled", type=int, default=SAMPLED,
                   help=f"untuned Ms per workload, each also tuned on its own (default {SAMPLED})")
    p.add_argument("--resume", default=None, metavar="PARTIAL",
                   help=f"the {PARTIAL} a run cut short left in its --out: its finished workloads are kept as "
                        "measured and only the others run (same GPU model and settings, else refused); the "
                        "results say how many rows were carried over and from which commits")
    a = p.parse_args(argv)
    for name in ("rounds", "per_round", "sampled"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(a, name)}")
    if a.resume is not None and not Path(a.resume).is_file():
        p.error(f"--resume {a.resume}: no such file")
    run_benchmark(a.quick, a.out, a.db, rounds=a.rounds, per_round=a.per_round, sampled=a.sampled,
                  wgmma=not a.no_wgmma, row_probe=not a.no_row_probe, resume=a.resume)


if __name__ == "__main__":
    main()
