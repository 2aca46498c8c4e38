"""`autosched bench hgemm`: every tensor-core GEMM template, each tuned on its own, vs cuBLAS (through
torch) on the shapes issue 15 asks to be measured, in one process under one protocol.

For each shape, each template that serves it (registry order; a template may refuse a shape, e.g.
wgmma one with N % 8, or a GPU without wgmma, and a template whose space holds no config for it is
passed over: split-K where the tiles fill the GPU already) is tuned separately with its own share of
the shape's time (model-guided; the database keeps every measurement, so a rerun resumes and a trial count it
already holds measures nothing new).  Then, with the tuner's worker gone, this process times per
template the best few configs of the database afresh (re-rank), the template's default, and cuBLAS
via torch.matmul on the same A, B and C buffers in the same logical layout and dtype; every kernel
is checked against the float64 reference before it is timed.

The default run (`--time-per-shape` unset) is planned to fit in about 9 minutes on one H100: see
plan() and estimate_run_s(), whose per-config costs are the ones seen on the H100 on 2026-11-23.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from autosched.benchmarks.common import Launchable, err_text, pool_tensor, rerank_configs, write_results
from autosched.build import Builder
from autosched.database import Database
from autosched.measure.protocol import Protocol, Timer
from autosched.registry import family_of, template_named
from autosched.runtime import allow_dynamic_smem
from autosched.space import config_hash
from autosched.tuner import measure_configs, versions
from autosched.workloads import Hgemm

# torch and cuda.core are imported inside functions: optional / slow to import, a CPU install runs without
# them; GpuRunner and tune are imported inside functions too: looked up at call time, as tests replace them on
# their modules

SQUARES = (1024, 4096, 8192)
PREFILL_M = (128, 512, 2048)
PREFILL_NK = ((4096, 4096), (11008, 4096), (4096, 11008))     # B a linear layer's (N, K) weight
LAYOUT_SHAPE = 4096


def default_shapes() -> list[str]:
    """Issue 15's list: the squares in FP16 and BF16, the prefill shapes (FP16, B stored (N, K): nt),
    and the other three layouts at 4096^3 (nn is among the squares)."""
    shapes = [f"{n}x{n}x{n}" for n in SQUARES] + [f"{n}x{n}x{n}_bf16" for n in SQUARES]
    shapes += [f"{m}x{n}x{k}_bt" for m in PREFILL_M for n, k in PREFILL_NK]
    s = LAYOUT_SHAPE
    shapes += [f"{s}x{s}x{s}_{lay}" for lay in ("bt", "tn", "tt")]
    return shapes


# -- the budget -----------------------------------------------------------------------------------

# share of a shape's tuning time per template: wgmma carries the bars (>= 95% of cuBLAS, prefill >= 90%);
# wmma needs only to clear 30% (its default measured 32.6% at 4096^3); mma is kept for pre-Hopper GPUs.
# wgmma's split-K has configs only where the tiles are few (prefill M = 128 and 512, 1024^3), and there
# it is what reaches the prefill bar (128x4096x4096: 90.5% of cuBLAS at split_k 2, 79.0% without)
# hgemm_stream serves only the linear layer's few rows (M <= 256, nt): of the bench's shapes, the prefill
# ones of M = 128; there it takes wmma's share (wmma's bar is at 4096^3, where stream does not serve)
# hgemm_wgmma_cluster (pairs of CTAs sharing an operand by multicast, where its switch is on) serves the
# same shapes as wgmma and takes its share out of wgmma's, as split-K does; so does hgemm_wgmma_sched (consumers
# split by rows or taking whole tiles in turn, staging their output a box at a time, where its switch is on)
SPLIT = {"hgemm_wgmma": 0.6, "hgemm_mma": 0.2, "hgemm_wmma": 0.2, "hgemm_wgmma_splitk": 0.3, "hgemm_stream": 0.2,
         "hgemm_wgmma_cluster": 0.3, "hgemm_wgmma_sched": 0.3}
# a template whose share is taken out of another's where both serve a shape, rather than added beside
# it: the other templates' shares, and so the plan's total, stay those of a run without it
CARVED_FROM = {"hgemm_wgmma_splitk": "hgemm_wgmma", "hgemm_stream": "hgemm_wmma",
               "hgemm_wgmma_cluster": "hgemm_wgmma", "hgemm_wgmma_sched": "hgemm_wgmma"}
TARGET_S = 500          # what the default plan may take, all in (the gpu_check stage allows 560)
TUNE_DEADLINE = 0.75    # of TARGET_S: past it the default plan tunes no further (the timing phase must still
                        # fit: a run killed before it writes no results at all)
BAR_WEIGHT = 1.5        # time per shape of a shape a bar names, relative to the others
RERANK = 3              # configs per template re-timed in the bench process (the database's fastest)

# measured beside the default before each tuning (those in the shape's space): the fastest configs of the
# first timings (bench/results/checks/wgmma-timing-2026-11-23.log, hgemm-wmma-timing-2026-11-23.json), so a
# short tuning starts from them and the re-rank sees them
SEEDS = {
    "hgemm_wgmma": [{"bm": 128, "bn": 192, "consumers": 2, "swizzle": 128, "stages": 4, "group": 8}],
    "hgemm_wmma": [{"bm": 128, "bn": 128, "wm": 64, "wn": 32, "bk": 64, "stages": 3, "pad": 8}],
}


def first_configs(t, w, device) -> list[dict]:
    """The default, then the SEEDS of the template that its space for `w` holds; none twice."""
    space = t.space(w, device)
    out = [t.default_config(w, device)]
    for c in SEEDS.get(t.family, []):
        if space.contains(c) and c not in out:
            out.append(c)
    return out


# per-config costs, from the H100 on 2026-11-23: best-config throughput at 4096^3 (wgmma 710 TFLOP/s:
# 0.19 ms; mma / wmma 0.49-0.56 ms), a searched config taken as SLOWDOWN x the best; a timed run also
# pays the 256 MB flush and its events; each config is checked twice (output to the host, compared
# on 16 cores), and NVRTC takes 0.3-0.7 s a build, 16 at a time; hgemm_wgmma_swap's rate is a guess
# (a kernel for few rows, one consumer warpgroup: a large shape runs it well below wgmma's)
RATE_TFLOPS = {"hgemm_wgmma": 700.0, "hgemm_mma": 270.0, "hgemm_wmma": 270.0, "hgemm_wgmma_splitk": 700.0,
               "hgemm_stream": 300.0, "hgemm_wgmma_cluster": 700.0,
               "hgemm_wgmma_sched": 700.0, "hgemm_wgmma_swap": 300.0}
SLOWDOWN = 1.8
FLUSH_US = 100.0        # 256 MB memset at ~2.6 TB/s
RUN_OVERHEAD_US = 15.0  # launch and two events a timed run
RUNS = 110              # the protocol's 10 warm-ups + 100 timed runs
CHECK_NS_PER_OUT = 8.0  # host check, per output element, one pass
CONFIG_OVERHEAD_S = 0.03
BUILD_S = 0.5 / 16      # a build's share of the wall clock with 16 NVRTC workers
FP64_GFLOPS = 400.0     # the host's float64 reference (numpy, 16 cores): 3 GEMMs a workload a process
STARTUP_S = 35.0        # imports, the worker's and this process's CUDA start, torch, the flush buffer


def kernel_us(w, family: str, slowdown: float = 1.0) -> float:
    return max(5.0, w.flops() / (RATE_TFLOPS[family] * 1e12) * 1e6 * slowdown)


def config_cost_s(w, family: str) -> float:
    """Seconds the tuner spends on one config of `family` for workload `w` (timing, checks, build)."""
    timing = RUNS * (kernel_us(w, family, SLOWDOWN) + FLUSH_US + RUN_OVERHEAD_US) * 1e-6
    checks = 2 * CHECK_NS_PER_OUT * 1e-9 * w.M * w.N
    return timing + checks + CONFIG_OVERHEAD_S + BUILD_S


def reference_s(w) -> float:
    """The float64 reference and error bound of a workload on the host (a @ b twice, |a| @ |b|)."""
    return 3 * w.flops() / (FP64_GFLOPS * 1e9)


def timing_s(w, us: float) -> float:
    """One checked, protocol-timed kernel in the bench process."""
    return RUNS * (us + FLUSH_US + RUN_OVERHEAD_US) * 1e-6 + CHECK_NS_PER_OUT * 1e-9 * w.M * w.N + 0.02


@dataclass
class Budget:
    """One template's tuning of one shape: its time (s), its trial count (configs to have measured,
    those the database holds included), the space's size and the batch the tuner proposes at once."""
    template: str
    time_s: float
    trials: int
    space: int
    batch: int
    cost_s: float           # estimated seconds a config


# the least of its share a template keeps when others are carved out of it (CARVED_FROM): with
# split-K and the column split both carved from hgemm_wgmma, a user's split could otherwise leave
# hgemm_wgmma, the template the others only complement, no time at all
KEEP_OF_PARENT = 0.5


def split_time(families, time_s: float, split: dict | None = None) -> dict[str, float]:
    """A shape's tuning time over the templates that serve it, by `split` (SPLIT), renormalized over
    those present: a template that refuses the shape gives its share to the others, but a template of
    CARVED_FROM gives its share back to the one it was taken from.  The templates carved from one
    take their shares out of its share, scaled down together where they would leave it less than
    KEEP_OF_PARENT of it."""
    split = split or SPLIT
    weights = {f: float(split.get(f, 0.0)) for f in families}
    for parent in {p for f, p in CARVED_FROM.items() if f in weights and p in weights}:
        kids = [f for f, p in CARVED_FROM.items() if p == parent and f in weights]
        want = sum(weights[f] for f in kids)
        room = (1 - KEEP_OF_PARENT) * weights[parent]
        if want > room:
            for f in kids:
                weights[f] *= room / want
        weights[parent] -= sum(weights[f] for f in kids)
    total = sum(weights.values())
    if total <= 0:
        weights, total = {f: 1.0 for f in families}, float(len(families) or 1)
    return {f: time_s * weights[f] / total for f in families}


def plan(workloads, device, time_per_shape_s: float | None = None, split: dict | None = None,
         trials: int | None = None, target_s: float = TARGET_S) -> dict:
    """workload key -> {template family: Budget}.  `time_per_shape_s`: a shape's tuning time (x
    shape_weight), split over its templates; without it, the largest that keeps estimate_run_s() of
    the plan within `target_s`.  A template's trials: what its time
    buys at config_cost_s (at least its default and a few more), at most its space; `trials` caps."""
    serving, sizes = {}, {}
    for w in workloads:
        fam = family_of(w)
        ts = [t for t in fam.templates_for(w) if not (hasattr(t, "device_refuses") and t.device_refuses(device))]
        sizes.update({(w.key, t.family): t.space(w, device).size() for t in ts})
        # a template with no config for the shape has nothing to tune, nor a default to time
        serving[w.key] = [t for t in ts if sizes[(w.key, t.family)]]
    if time_per_shape_s is None:
        # the largest time per shape whose whole plan is estimated within target_s (at least 3 s)
        lo, hi = 3.0, 600.0
        for _ in range(30):
            mid = (lo + hi) / 2
            fits = estimate_run_s(workloads, serving, _budgets(workloads, serving, sizes, mid, split, trials)) <= target_s
            lo, hi = (mid, hi) if fits else (lo, mid)
        time_per_shape_s = lo
    return _budgets(workloads, serving, sizes, time_per_shape_s, split, trials)


def shape_weight(w) -> float:
    """A shape's tuning time relative to the others: the shapes a bar of issue 15 names (FP16 nn
    4096^3 and 8192^3, the prefill shapes) get BAR_WEIGHT."""
    bar = is_prefill(w) or (w.layout == "nn" and not w.bf16 and w.M == w.N == w.K and w.M in (4096, 8192))
    return BAR_WEIGHT if bar else 1.0


def _budgets(workloads, serving, sizes, time_per_shape_s, split, trials) -> dict:
    out = {}
    for w in workloads:
        times = split_time([t.family for t in serving[w.key]], time_per_shape_s * shape_weight(w), split)
        out[w.key] = {}
        for t in serving[w.key]:
            size = sizes[(w.key, t.family)]
            cost = config_cost_s(w, t.family)
            n = max(4, int(times[t.family] / cost))
            if trials is not None:
                n = min(n, trials)
            n = min(n, size)
            # a batch is at most a quarter of the time, so the budget overruns by little
            batch = max(2, min(64, int(times[t.family] / cost / 4)))
            out[w.key][t.family] = Budget(t.family, times[t.family], n, size, batch, cost)
    return out


def estimate_run_s(workloads, serving: dict, budgets: dict, rerank: int = RERANK) -> float:
    """The whole run: start-up, each workload's reference in both processes, every template's tuning
    (its time, and a batch of overrun), then the bench process's re-rank, default and cuBLAS timings."""
    total = STARTUP_S
    for w in workloads:
        total += 2 * reference_s(w)
        for t in serving[w.key]:
            b = budgets[w.key].get(t.family)
            if b is not None:
                total += min(b.time_s + b.batch * b.cost_s, b.trials * b.cost_s + b.batch * b.cost_s)
            total += rerank * timing_s(w, kernel_us(w, t.family, 1.2)) + timing_s(w, kernel_us(w, t.family, 1.3))
        cublas_us = w.flops() / 750e12 * 1e6
        total += timing_s(w, cublas_us)                                 # cuBLAS
        total += PAIRED_ROUNDS * 2 * timing_s(w, cublas_us)            # the fastest paired with it
    return total


def plan_estimate_s(workloads, device, budgets: dict, rerank: int = RERANK) -> float:
    serving = {w.key: [t for t in family_of(w).templates_for(w) if t.family in budgets[w.key]]
               for w in workloads}
    return estimate_run_s(workloads, serving, budgets, rerank)


# -- cuBLAS on the same buffers ---------------------------------------------------------------------

def torch_dtype(w):
    import torch
    return torch.bfloat16 if w.bf16 else torch.float16


def as_values(t, w):
    """A tensor holding the workload's storage (uint16 BF16 bit patterns, or FP16) as the dtype's values."""
    import torch
    if w.bf16 and t.dtype in (torch.uint16, torch.int16):
        return t.view(torch.bfloat16)
    return t


def cublas_operands(w, a_stored, b_stored):
    """A (M, K) and B (K, N), the logical matrices torch.matmul takes, as views of the buffers as
    stored (no copy): A stored (K, M) under a_col, B stored (N, K) under b_col, BF16 bits read as
    bfloat16.  The blocked layout has no such view: ValueError."""
    if w.blocked:
        raise ValueError("cuBLAS has no blocked 16x16-tile layout (bb)")
    a, b = as_values(a_stored, w), as_values(b_stored, w)
    return (a.t() if w.a_col else a), (b.t() if w.b_col else b)


def cublas_out(w, out):
    """The (M, N) output tensor as torch.matmul writes it (bfloat16 over BF16 bits)."""
    return as_values(out, w)


# -- the summary ------------------------------------------------------------------------------------

def _is(r, M, N, K, layout="nn", dtype="fp16") -> bool:
    return (r["M"], r["N"], r["K"], r.get("layout", "nn"), r.get("dtype", "fp16")) == (M, N, K, layout, dtype)


def _best_pct(r):
    pcts = [t["pct_of_cublas"] for t in r.get("templates", {}).values() if t.get("pct_of_cublas") is not None]
    return max(pcts) if pcts else None


def summarize_rows(rows: list[dict]) -> dict:
    """Issue 15's keys from the rows (None where not measured), the per-template maxima, and which
    bars are met."""
    def row(M, N, K, layout="nn", dtype="fp16"):
        return next((r for r in rows if _is(r, M, N, K, layout, dtype)), None)

    def best(r):
        return _best_pct(r) if r else None
    big, huge = row(4096, 4096, 4096), row(8192, 8192, 8192)
    wmma = (big or {}).get("templates", {}).get("hgemm_wmma", {}).get("pct_of_cublas")
    prefill = [r for r in rows if r.get("prefill")]
    pre = [best(r) for r in prefill]
    s = {"best_pct_of_cublas_4096": best(big),
         "best_pct_of_cublas_8192": best(huge),
         "min_pct_of_cublas_prefill": (min(pre) if pre and None not in pre else None),
         "wmma_pct_of_cublas_4096": wmma,
         "best_pct_of_cublas_4096_bf16": best(row(4096, 4096, 4096, dtype="bf16")),
         "best_pct_of_cublas_8192_bf16": best(row(8192, 8192, 8192, dtype="bf16")),
         "best_pct_of_cublas_4096_by_layout": {lay: best(row(4096, 4096, 4096, lay)) for lay in ("nn", "nt", "tn", "tt")},
         "prefill_shapes_measured": sum(p is not None for p in pre), "prefill_shapes": len(prefill)}
    fams = sorted({f for r in rows for f in r.get("templates", {})})
    for f in fams:
        pcts = [r["templates"][f]["pct_of_cublas"] for r in rows
                if r["templates"].get(f, {}).get("pct_of_cublas") is not None]
        s[f"max_pct_of_cublas_{f}"] = max(pcts) if pcts else None
        s[f"max_tflops_{f}"] = max((r["templates"][f].get("tflops") or 0.0 for r in rows if f in r["templates"]),
                                   default=None)
    s["best_template_by_shape"] = {r["shape"]: r.get("best_template") for r in rows}

    def met(x, bar):
        return None if x is None else x >= bar
    s["bars_met"] = {"best_4096_ge_95": met(s["best_pct_of_cublas_4096"], 95.0),
                     "best_8192_ge_95": met(s["best_pct_of_cublas_8192"], 95.0),
                     "prefill_ge_90": met(s["min_pct_of_cublas_prefill"], 90.0),
                     "wmma_4096_ge_30": met(wmma, 30.0)}
    return s


def finish_row(row: dict, flops: int) -> dict:
    """TFLOP/s beside every time, % of cuBLAS per template, and the best template of the row."""
    cb = row.get("cublas_us")
    if cb:
        row["cublas_tflops"] = flops / (cb * 1e-6) / 1e12
    for t in row.get("templates", {}).values():
        for k in ("tuned", "default"):
            us = t.get(f"{k}_us")
            if us:
                t[f"{k}_tflops" if k == "default" else "tflops"] = flops / (us * 1e-6) / 1e12
                if cb:
                    t["pct_of_cublas" if k == "tuned" else "default_pct_of_cublas"] = 100.0 * cb / us
    for t in row.get("templates", {}).values():
        if t.get("paired") and t.get("pct_of_cublas") is not None:
            # the alternated comparison is the one a drifting clock cannot bias: it is the figure
            t["pct_of_cublas_unpaired"] = t["pct_of_cublas"]
            t["pct_of_cublas"] = t["paired"]["pct_of_cublas"]
    timed = {f: t["tuned_us"] for f, t in row.get("templates", {}).items() if t.get("tuned_us")}
    if timed:
        f = min(timed, key=timed.get)
        row["best_template"], row["best_us"] = f, timed[f]
        row["best_tflops"] = row["templates"][f]["tflops"]
        row["best_pct_of_cublas"] = row["templates"][f].get("pct_of_cublas")
    return row


def row_head(w, prefill: bool) -> dict:
    return {"shape": w.shape_str, "M": w.M, "N": w.N, "K": w.K, "layout": w.layout, "dtype": w.dtype,
            "prefill": prefill, "flops": w.flops(), "templates": {}, "errors": {}}


def is_prefill(w) -> bool:
    return w.M in PREFILL_M and (w.N, w.K) in PREFILL_NK and w.layout == "nt" and not w.bf16


# -- the run ---------------------------------------------------------------------------------------

def _poison(out) -> None:
    """NaN in every element: FP16 NaN, or a BF16 NaN's bits (0x7FC0) in a uint16 buffer."""
    import torch
    if out.dtype in (torch.uint16, torch.int16, torch.bfloat16):
        out.view(torch.int16).fill_(0x7FC0)
    else:
        out.fill_(float("nan"))


def _host(out) -> np.ndarray:
    import torch
    if out.dtype == torch.bfloat16:
        out = out.view(torch.uint16)
    return out.cpu().numpy()


def _checked(run, w, out, ref, bound, what: str):
    import torch
    _poison(out)
    run()
    torch.cuda.synchronize()
    chk = w.check(_host(out), ref, bound)
    if not chk.ok:
        raise RuntimeError(f"{what} failed its check: {chk.message}")
    return chk


def _timed(timer, run) -> dict:
    s = timer.summary(run)
    return {"us": s["median_us"], "min_us": s["min_us"], "spread_us": s["spread_us"],
            "min_median_spread_pct": 100.0 * (s["median_us"] - s["min_us"]) / s["median_us"]}


PAIRED_ROUNDS = 3
LATE_SHARE = 0.1        # a round whose runs the GPU reached before they were enqueued past this share is redone
LATE_REDOS = 3          # at most this many redone rounds a pairing


def paired_ratio(timer, ours, theirs, rounds: int = PAIRED_ROUNDS) -> dict:
    """`rounds` rounds of ours and theirs timed run by run in alternation (Timer.time_alternating, each in
    an odd and an even place of every round): the median of the per-round ratios of their medians,
    theirs/ours as % (what a drifting clock cancels out of), with the spread of the ratios.  (Until
    2026-11-27 a round timed the two as two series one after the other: at 8192^3 the clock moved
    between them, and the ratios of one run spread over 89-120%.)

    A round in which the host fell behind (Timer.host_late: more than LATE_SHARE of either side's runs
    reached by the GPU before they were wholly enqueued, so their events time a wait for the host too)
    is timed again, LATE_REDOS times at most a pairing: in the full DietCode run of 2026-11-27 one such
    round read cuBLAS 2.1x slower at 160 x 768 x 768 (93 of its 100 runs late), the median of three
    rounds only hiding it."""
    pcts, us_ours, us_theirs, late, redone = [], [], [], [], []
    while len(pcts) < rounds:
        ta, tb = timer.time_alternating(ours, theirs)
        lates = list(getattr(timer, "host_late", []))
        if any(n > LATE_SHARE * len(t) for n, t in zip(lates, (ta, tb))) and len(redone) < LATE_REDOS:
            redone.append(lates)
            continue
        a, b = float(np.median(ta)), float(np.median(tb))
        us_ours.append(a)
        us_theirs.append(b)
        pcts.append(100.0 * b / a)
        late.append(lates)
    pcts_sorted = sorted(pcts)
    return {"pct_of_cublas": pcts_sorted[len(pcts) // 2], "pct_min": pcts_sorted[0], "pct_max": pcts_sorted[-1],
            "rounds": rounds, "us": us_ours, "cublas_us": us_theirs, "host_late": late, "late_rounds_redone": redone}


def pool_operands(dev, stream, w, inputs: dict) -> tuple[dict, object]:
    """A and B of `inputs` copied into torch tensors of the memory pool the tuner measures in, and an
    output tensor there: what ours and cuBLAS are both given, so they run on the same buffers."""
    import torch
    on_device = {n: pool_tensor(dev, stream, inputs[n].shape, inputs[n].dtype) for n in ("A", "B")}
    for n, t in on_device.items():
        t.copy_(torch.from_numpy(np.ascontiguousarray(inputs[n])))
    shape, dtype = w.output_spec()
    return on_device, pool_tensor(dev, stream, shape, dtype)


def _launchable(spec, binary, inputs, out, on_device):
    from cuda.core import Device
    k = Launchable(spec, binary, inputs, out, on_device=on_device)
    allow_dynamic_smem(k.kernel, spec.smem_bytes, Device().device_id)
    zero = getattr(spec, "output_init", None) == "zero"

    def run(stream):
        if zero:
            out.zero_()
        k.launch(stream)
    return run


def run_benchmark(shapes=None, trials: int | None = None, strategy: str = "model", out_dir="bench/results",
                  db_path=None, console=None, time_per_shape_s: float | None = None, rerank: int = RERANK,
                  split: dict | None = None, op: str = "hgemm", tune_deadline_s: float | None = None):
    """tune_deadline_s: seconds from the start after which no tuning starts or goes on (default: with the
    default plan, TUNE_DEADLINE x TARGET_S; with --time-per-shape, none); shapes left are timed with what
    the database holds and their default."""
    import torch
    from cuda.core import Device, Stream

    from autosched.measure.gpu import GpuRunner
    from autosched.tuner import tune

    log = console.print if console else print
    t_start = time.perf_counter()
    workloads = [Hgemm.from_shape(s) for s in (shapes or default_shapes())]
    tuned: dict = {}
    with Database(db_path) as db, Builder() as builder:
        with GpuRunner() as runner:
            device = runner.device_info
            budgets = plan(workloads, device, time_per_shape_s, split, trials)
            est = plan_estimate_s(workloads, device, budgets, rerank)
            log(f"hgemm bench: {len(workloads)} shapes, estimated {est:.0f} s in all; per template "
                + ", ".join(f"{f}: {sum(b[f].time_s for b in budgets.values() if f in b):.0f} s"
                            for f in SPLIT))
            if tune_deadline_s is None and time_per_shape_s is None:
                tune_deadline_s = TUNE_DEADLINE * TARGET_S
            cut = []
            for w in workloads:
                for fam_name, b in budgets[w.key].items():
                    t = template_named(fam_name)
                    build = runner.build_id(t)
                    left = math.inf if tune_deadline_s is None else tune_deadline_s - (time.perf_counter() - t_start)
                    if left <= 0:
                        cut.append(f"{w.shape_str} {fam_name}")
                        tuned[(w.key, fam_name)] = None
                        continue
                    # the default and the seeds first: the model learns from them, the re-rank sees them
                    held = db.measured(w.key, device.key, t.family, build=build)
                    todo = [c for c in first_configs(t, w, device) if config_hash(c) not in held]
                    for c, m in zip(todo, measure_configs(w, t, runner, todo, builder) if todo else []):
                        db.add(w.key, device.key, t.family, c, m, versions(runner.name), build=build)
                    try:
                        res = tune(w, t, runner, db, strategy=strategy, trials=b.trials, builder=builder, seed=1,
                                   time_budget_s=min(b.time_s, left), batch=b.batch)
                    except Exception as e:
                        log(f"tune {w.shape_str} {fam_name} failed: {err_text(e)[-300:]}")
                        tuned[(w.key, fam_name)] = None
                        continue
                    res.total_tuning_s = db.tuning_seconds(w.key, device.key, t.family, build=build)
                    res.total_trials = len(db.measured(w.key, device.key, t.family, build=build))
                    tuned[(w.key, fam_name)] = res
                    best = f"{res.best.median_us:.2f} us" if res.best else "no config passed"
                    log(f"tuned {w.shape_str} {fam_name}: {best} after {res.total_trials} trials "
                        f"({res.measured_now} now, {res.elapsed_s:.1f} s of {b.time_s:.1f}) {res.statuses}")
            if cut:
                log(f"[yellow]tuning deadline ({tune_deadline_s:.0f} s) passed: {len(cut)} template-shapes not tuned "
                    f"(timed with their default only): {', '.join(cut)}")
        log(f"tuning done at {time.perf_counter() - t_start:.0f} s")

        dev = Device(0)
        dev.set_current()
        torch.cuda.init()
        stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
        timer = Timer(dev, stream, Protocol())
        # cuBLAS accumulating in FP32 all the way, as ours do
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        rows, path = [], None
        try:
            for w in workloads:
                row = row_head(w, is_prefill(w))
                inputs = w.inputs(seed=1234)
                ref, bound = w.reference(inputs), w.error_bound(inputs)
                on_device, out = pool_operands(dev, stream, w, inputs)
                tuned_runs = {}
                for fam_name, b in budgets[w.key].items():
                    t = template_named(fam_name)
                    res = tuned.get((w.key, fam_name))
                    tr = row["templates"][fam_name] = {"trials_planned": b.trials, "time_planned_s": round(b.time_s, 1),
                                                       "space": b.space, "errors": {}}
                    if res is not None:
                        tr.update(trials=res.total_trials, tune_s=round(res.total_tuning_s, 2),
                                  run_tune_s=round(res.elapsed_s, 2), measured_now=res.measured_now)

                    def run_of(spec, binary):
                        return _launchable(spec, binary, inputs, out, on_device)

                    def time_config(spec, binary, w=w, ref=ref, bound=bound):
                        run = run_of(spec, binary)
                        _checked(lambda: run(stream), w, out, ref, bound, f"config for {w.key}")
                        return timer.summary(lambda: run(stream))["median_us"]
                    best = res.best_config if res is not None else None
                    if f"{w.shape_str} {fam_name}" in cut:      # past the deadline: its default stands in
                        best, tr["not_tuned"] = t.default_config(w, device), "tuning deadline passed"
                    if best is not None and rerank > 1:
                        try:
                            best, tr["rerank"] = rerank_configs(w, t, device, db, best, builder, rerank, time_config)
                        except Exception as e:
                            tr["errors"]["rerank"] = err_text(e)
                    for name, cfg in (("tuned", best), ("default", t.default_config(w, device))):
                        if cfg is None:
                            tr["errors"][name] = "no config passed its check during tuning"
                            continue
                        try:
                            spec = t.render(w, cfg, device)
                            run = run_of(spec, builder.build(spec))
                            chk = _checked(lambda: run(stream), w, out, ref, bound, f"{fam_name} {name} for {w.key}")
                            tm = _timed(timer, lambda: run(stream))
                            tr[f"{name}_us"] = tm["us"]
                            if name == "tuned":
                                tuned_runs[fam_name] = run
                                tr.update(config=cfg, min_us=tm["min_us"], spread_us=tm["spread_us"],
                                          min_median_spread_pct=tm["min_median_spread_pct"],
                                          max_abs_err=chk.max_abs_err)
                        except Exception as e:
                            tr["errors"][name] = err_text(e)
                    if not tr["errors"]:
                        del tr["errors"]
                try:
                    a, bm = cublas_operands(w, on_device["A"], on_device["B"])
                    cout = cublas_out(w, out)
                    _checked(lambda: torch.matmul(a, bm, out=cout), w, out, ref, bound, "cuBLAS")
                    tm = _timed(timer, lambda: torch.matmul(a, bm, out=cout))
                    row.update(cublas_us=tm["us"], cublas_min_us=tm["min_us"], cublas_spread_us=tm["spread_us"],
                               cublas_check=True)
                    # the fastest template and cuBLAS in alternation: a clock that drifts under a long
                    # sustained load (8192^3 moved both by 10-15% between repeats on the H100) moves the
                    # two alike.  Only the fastest: it is the one the bars read, and pairing all three
                    # would add ~2x the timing phase to a run planned to the minute
                    timed = {f: row["templates"][f]["tuned_us"] for f in tuned_runs}
                    if timed:
                        fam_name = min(timed, key=timed.get)
                        row["templates"][fam_name]["paired"] = paired_ratio(
                            timer, lambda run=tuned_runs[fam_name]: run(stream),
                            lambda: torch.matmul(a, bm, out=cout), PAIRED_ROUNDS)
                except Exception as e:
                    row["errors"]["cublas"] = err_text(e)
                finish_row(row, w.flops())
                if not row["errors"]:
                    del row["errors"]
                rows.append(row)
                log(f"{w.shape_str}: cuBLAS {row.get('cublas_us', float('nan')):.1f} us "
                    f"({row.get('cublas_tflops', float('nan')):.0f} TFLOP/s); " + "; ".join(
                        f"{f.removeprefix('hgemm_')} {tr.get('tuned_us', float('nan')):.1f} us "
                        f"{tr.get('tflops', float('nan')):.0f} TFLOP/s {tr.get('pct_of_cublas', float('nan')):.1f}%"
                        for f, tr in row["templates"].items()))
                path = write_results(op, device, rows, summarize_rows(rows), out_dir,
                                     {"tuning": {"strategy": strategy, "rerank": rerank, "split": split or SPLIT,
                                                 "time_per_shape_s": time_per_shape_s,
                                                 "estimated_run_s": round(est, 1),
                                                 "tune_deadline_s": tune_deadline_s, "not_tuned": cut},
                                      "shapes_planned": [x.shape_str for x in workloads],
                                      "elapsed_s": round(time.perf_counter() - t_start, 1)}, path=path)
                torch.cuda.empty_cache()      # the pool buffers of this shape go when the next rebinds them
        finally:
            timer.close()
    log(f"hgemm bench done in {time.perf_counter() - t_start:.0f} s")
    return path


def parse_split(text: str | None) -> dict | None:
    """'wgmma=0.6,mma=0.2,wmma=0.2' (or with the hgemm_ prefix) -> {family: share}."""
    if not text:
        return None
    out = {}
    for part in text.split(","):
        name, _, share = part.partition("=")
        name = name.strip()
        fam = name if name.startswith("hgemm_") else f"hgemm_{name}"
        try:
            template_named(fam)
        except ValueError:
            raise ValueError(f"unknown template {name!r} in the split; there are {', '.join(SPLIT)}") from None
        v = float(share)
        if not (v >= 0 and math.isfinite(v)):
            raise ValueError(f"a template's share must be >= 0, got {share!r}")
        out[fam] = v
    return out
