"""Quick timings of one kernel family on the GPU beside cuBLAS or torch, one parametrised harness:

    python3 scripts/timing.py MODE [ARGS ...]

  wgmma [SHAPE ...]           hgemm_wgmma's default and a few configs vs cuBLAS (CUDA events, L2 not flushed)
  wmma                        hgemm_wmma's default and corners beside hgemm_mma's default at 4096^3 (GpuRunner)
  splitk [SHAPE ...]          split 1 (hgemm_wgmma) and split_k 2..8 (hgemm_wgmma_splitk) on few-tile shapes
  cluster [SHAPE ...]         hgemm_wgmma_cluster: cluster 1 vs pairs along M and N
  dyn-splitk [N K [M ...]]    split-K micro-kernels served by ops.HgemmDispatch (AUTOSCHED_DYN_SPLIT_K=1)
  dataflow [--model ...]      the per-kernel vs the dataflow decode step, each knob (--timeline: its timeline)
  prefill-wgmma [--out DIR]   the 7B's GEMMs and prefill on wgmma vs mma vs torch
  prefill-attn [--out DIR]    the 7B's prefill attention on tensor cores vs CUDA cores vs torch

Each kernel is checked against float64 (or the reference path) before it is timed.  A first look, not a
benchmark of record: the benchmarks (autosched bench, autosched.benchmarks.*) are.
"""

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from dyn_splitk_common import TILES, WG, WGS, config, dispatcher, max_error  # (scripts/ is sys.path[0])

from autosched.build import Builder
from autosched.measure.gpu import GpuRunner
from autosched.measure.protocol import Protocol
from autosched.templates import HgemmMmaTemplate, HgemmWmmaTemplate
from autosched.workloads import Hgemm


# -- wgmma -----------------------------------------------------------------------------------------

REPEAT = 30


WGMMA_CONFIGS = [  # beside the default
    {"bm": 128, "bn": 128, "consumers": 2, "swizzle": 128, "stages": 5, "group": 8},
    {"bm": 128, "bn": 192, "consumers": 2, "swizzle": 128, "stages": 4, "group": 8},
    {"bm": 256, "bn": 128, "consumers": 2, "swizzle": 128, "stages": 4, "group": 8},
    {"bm": 128, "bn": 256, "consumers": 2, "swizzle": 128, "stages": 4, "group": 16},
]


def median_us(fn, stream_sync) -> float:
    import torch
    for _ in range(3):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(REPEAT)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(REPEAT)]
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return float(np.median([s.elapsed_time(e) * 1000 for s, e in zip(starts, ends)]))


def wgmma_main(shapes):
    import torch
    from cuda.core import Device, Stream

    from autosched.benchmarks.common import Launchable, checked_launch
    from autosched.build import Builder
    from autosched.device import query
    from autosched.runtime import allow_dynamic_smem
    from autosched.templates import HgemmWgmmaTemplate
    from autosched.workloads import Hgemm
    info = query(0)
    dev = Device(0)
    dev.set_current()
    torch.cuda.init()
    stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    t = HgemmWgmmaTemplate()
    bad = 0
    with Builder() as builder:
        for shape in shapes:
            w = Hgemm.from_shape(shape)
            inputs = w.inputs(1)
            ref, bound = w.reference(inputs), w.error_bound(inputs)
            flop = w.flops()
            a = torch.from_numpy(np.ascontiguousarray(inputs["A"])).cuda()
            b = torch.from_numpy(np.ascontiguousarray(inputs["B"])).cuda()
            bt = b.t() if w.b_col else b            # the logical (K, N) view of B, as cuBLAS reads it
            us = median_us(lambda: torch.matmul(a, bt), None)
            print(f"{shape}: cuBLAS {us:8.1f} us {flop / us / 1e6:7.1f} TFLOP/s", flush=True)
            space = t.space(w, info)
            cfgs = [t.default_config(w, info)] + [c for c in WGMMA_CONFIGS if space.contains(c)]
            out = torch.empty((w.M, w.N), dtype=torch.float16, device="cuda")
            for c in cfgs:
                spec = t.render(w, c, info)
                t0 = time.perf_counter()
                binary = builder.build(spec)
                try:
                    k = Launchable(spec, binary, inputs, out, on_device={"A": a, "B": b})
                    allow_dynamic_smem(k.kernel, spec.smem_bytes, dev.device_id)
                    checked_launch(lambda s: k.launch(s), w, out, ref, stream, spec.name_expression, bound)
                    ours = median_us(lambda: k.launch(stream), None)
                    print(f"  {spec.name_expression:48s} {ours:8.1f} us {flop / ours / 1e6:7.1f} TFLOP/s "
                          f"{100 * us / ours:5.1f}% of cuBLAS  ({binary.resources.registers} regs, "
                          f"build {time.perf_counter() - t0:.1f} s)", flush=True)
                except Exception as e:     # report and go on: one bad config must not hide the others
                    bad += 1
                    print(f"  {spec.name_expression} {c}: FAILED {type(e).__name__}: {str(e)[:400]}", flush=True)
    return 1 if bad else 0


# -- wmma ------------------------------------------------------------------------------------------

WMMA_SHAPE = "4096x4096x4096"


# beside the default: a wider block, a taller one, a deeper ring with a longer slice
WMMA_EXTRA = [{"bm": 128, "bn": 256, "wm": 64, "wn": 64, "bk": 32, "stages": 3, "pad": 8},
         {"bm": 256, "bn": 128, "wm": 64, "wn": 64, "bk": 32, "stages": 2, "pad": 8},
         {"bm": 128, "bn": 128, "wm": 64, "wn": 32, "bk": 64, "stages": 3, "pad": 8},
         {"bm": 128, "bn": 128, "wm": 32, "wn": 64, "bk": 32, "stages": 3, "pad": 16}]


def flushed_cublas_us(w, repeat=50, flush_bytes=256 << 20):
    import torch
    dt = torch.bfloat16 if w.bf16 else torch.float16
    a = torch.randn(w.M, w.K, device="cuda", dtype=dt)
    b = torch.randn(w.K, w.N, device="cuda", dtype=dt)
    flush = torch.empty(flush_bytes, dtype=torch.uint8, device="cuda")
    for _ in range(3):
        torch.matmul(a, b)
    times = []
    for _ in range(repeat):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.matmul(a, b)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1000.0)
    times.sort()
    return times[len(times) // 2]


def wmma_main() -> int:
    out_dir = os.environ.get("OUT", "/tmp")
    rows = []
    t0 = time.time()
    with GpuRunner(protocol=Protocol(flush_bytes=256 << 20, warmup=2, repeat=30), timeout_s=60) as runner, \
            Builder() as builder:
        dev = runner.device_info
        items = []
        for dtype in ("fp16", "bf16"):
            w = Hgemm.from_shape(WMMA_SHAPE, dtype=dtype)
            wm, mm = HgemmWmmaTemplate(), HgemmMmaTemplate()
            sp = wm.space(w, dev)
            cfgs = [("wmma default", wm, wm.default_config(w, dev))]
            cfgs += [(f"wmma {c['bm']}x{c['bn']}/{c['wm']}x{c['wn']} bk{c['bk']} s{c['stages']} p{c['pad']}", wm, c)
                     for c in WMMA_EXTRA if sp.contains(c)]
            cfgs.append(("mma default", mm, mm.default_config(w, dev)))
            items += [(w, label, t, c, t.render(w, c, dev)) for label, t, c in cfgs]
        results = dict(runner.measure_stream((i, it[4], builder.submit(it[4])) for i, it in enumerate(items)))
    cublas = {}
    try:
        for dtype in ("fp16", "bf16"):
            cublas[dtype] = flushed_cublas_us(Hgemm.from_shape(WMMA_SHAPE, dtype=dtype))
    except Exception as e:      # no torch here: ours are still worth printing
        print(f"cuBLAS via torch unavailable: {type(e).__name__}: {e}", file=sys.stderr)
    for i, (w, label, t, c, spec) in enumerate(items):
        m = results[i]
        us = m.median_us if m.ok else float("nan")
        cb = cublas.get(w.dtype, float("nan"))
        row = {"shape": w.shape_str, "dtype": w.dtype, "label": label, "template": t.family, "config": c,
               "status": m.status.value, "error": m.error[:300], "median_us": us, "registers": m.registers,
               "tflops": w.flops() / us / 1e6, "flushed_cublas_us": cb, "cublas_tflops": w.flops() / cb / 1e6,
               "pct_of_cublas": 100.0 * cb / us}
        rows.append(row)
        print(f"{w.dtype} {label:44s} {m.status.value:8s} {us:9.1f} us {row['tflops']:7.1f} TFLOP/s  "
              f"cuBLAS {cb:7.1f} us {row['cublas_tflops']:6.1f} TFLOP/s  {row['pct_of_cublas']:5.1f}%  "
              f"regs {m.registers} {m.error[:120]}", flush=True)
    path = os.path.join(out_dir, "hgemm-wmma-timing.json")
    with open(path, "w") as f:
        json.dump({"device": dev.key, "seconds": time.time() - t0, "rows": rows}, f, indent=1)
    print("wrote", path)
    return 0 if all(r["status"] == "ok" for r in rows) else 1


# -- splitk ----------------------------------------------------------------------------------------

SPLITK_TILES = [  # (bm, bn, consumers, stages) tried at every split, 128B swizzle, raster group 1
    (128, 64, 2, 6), (64, 128, 1, 5), (128, 128, 2, 5), (64, 256, 1, 4), (128, 256, 2, 3),
]


def splitk_main(shapes):
    import numpy as np
    import torch
    from cuda.core import Device, Stream

    from autosched.benchmarks.common import Launchable, checked_launch
    from autosched.build import Builder
    from autosched.device import query
    from autosched.runtime import allow_dynamic_smem
    from autosched.templates import HgemmWgmmaSplitKTemplate, HgemmWgmmaTemplate
    from autosched.workloads import Hgemm
    info = query(0)
    Device(0).set_current()
    torch.cuda.init()
    stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    templates = {1: HgemmWgmmaTemplate(), **dict.fromkeys((2, 3, 4, 6, 8), HgemmWgmmaSplitKTemplate())}
    bad = 0
    with Builder() as builder:
        for shape in shapes:
            w = Hgemm.from_shape(shape)
            inputs = w.inputs(1)
            ref, bound, flop = w.reference(inputs), w.error_bound(inputs), w.flops()
            a = torch.from_numpy(np.ascontiguousarray(inputs["A"])).cuda()
            b = torch.from_numpy(np.ascontiguousarray(inputs["B"])).cuda()
            bt = b.t() if w.b_col else b
            cublas = median_us(lambda: torch.matmul(a, bt), None)
            print(f"{shape}: cuBLAS {cublas:7.1f} us {flop / cublas / 1e6:6.1f} TFLOP/s", flush=True)
            spaces = {sk: t.space(w, info) for sk, t in templates.items()}
            cfgs = [(sk, c) for sk in templates for bm, bn, cons, st in SPLITK_TILES
                    for c in [{"bm": bm, "bn": bn, "consumers": cons, "swizzle": 128, "stages": st, "group": 1,
                               **({"split_k": sk} if sk > 1 else {})}] if spaces[sk].contains(c)]
            specs = [templates[sk].render(w, c, info) for sk, c in cfgs]
            out = torch.empty((w.M, w.N), dtype=torch.float16, device="cuda")
            best = {}
            for (sk, c), spec, binary in zip(cfgs, specs, builder.build_many(specs)):
                try:
                    k = Launchable(spec, binary, inputs, out, on_device={"A": a, "B": b})
                    allow_dynamic_smem(k.kernel, spec.smem_bytes, 0)
                    checked_launch(lambda s: k.launch(s), w, out, ref, stream, spec.name_expression, bound)
                    us = median_us(lambda: k.launch(stream), None)
                    checked_launch(lambda s: k.launch(s), w, out, ref, stream, spec.name_expression, bound)
                except Exception as e:     # report and go on: one bad config must not hide the others
                    bad += 1
                    print(f"  {spec.name_expression}: FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
                    continue
                print(f"    {spec.name_expression:52s} grid {spec.grid[0]:3d} {us:7.1f} us", flush=True)
                if sk not in best or us < best[sk][0]:
                    best[sk] = (us, spec.name_expression)
            for sk, (us, name) in sorted(best.items()):
                print(f"  split_k={sk}: {us:7.1f} us {flop / us / 1e6:6.1f} TFLOP/s {100 * cublas / us:5.1f}% of "
                      f"cuBLAS  ({name})", flush=True)
    return 1 if bad else 0


# -- cluster ---------------------------------------------------------------------------------------

CLUSTER_TILES = [  # (bm, bn, consumers, stages, group), 128B swizzle, tried at every cluster choice
    (128, 256, 2, 3, 8), (128, 256, 2, 4, 8), (256, 128, 2, 4, 8), (128, 128, 2, 5, 8),
]


CLUSTER_CHOICES = [(1, "m"), (2, "m"), (2, "n")]


def cluster_main(shapes):
    import numpy as np
    import torch
    from cuda.core import Device, Stream

    from autosched.benchmarks.common import Launchable, checked_launch
    from autosched.build import Builder
    from autosched.device import query
    from autosched.runtime import allow_dynamic_smem, launch_config
    from autosched.templates import HgemmWgmmaClusterTemplate, HgemmWgmmaTemplate
    from autosched.workloads import Hgemm
    info = query(0)
    Device(0).set_current()
    torch.cuda.init()
    stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    lone, pair = HgemmWgmmaTemplate(), HgemmWgmmaClusterTemplate()
    bad = 0
    with Builder() as builder:
        for shape in shapes:
            w = Hgemm.from_shape(shape)
            inputs = w.inputs(1)
            ref, bound, flop = w.reference(inputs), w.error_bound(inputs), w.flops()
            a = torch.from_numpy(np.ascontiguousarray(inputs["A"])).cuda()
            b = torch.from_numpy(np.ascontiguousarray(inputs["B"])).cuda()
            bt = b.t() if w.b_col else b
            cublas = median_us(lambda: torch.matmul(a, bt), None)
            print(f"{shape}: cuBLAS {cublas:8.1f} us {flop / cublas / 1e6:6.1f} TFLOP/s", flush=True)
            spaces = {1: lone.space(w, info), 2: pair.space(w, info)}
            cfgs = [(cl, c) for cl, dim in CLUSTER_CHOICES for bm, bn, cons, st, g in CLUSTER_TILES
                    for c in [{"bm": bm, "bn": bn, "consumers": cons, "swizzle": 128, "stages": st, "group": g,
                               **({"cluster_dim": dim} if cl == 2 else {})}] if spaces[cl].contains(c)]
            specs = [(pair if cl == 2 else lone).render(w, c, info) for cl, c in cfgs]
            out = torch.empty((w.M, w.N), dtype=torch.float16, device="cuda")
            best = {}
            for (cl, c), spec, binary in zip(cfgs, specs, builder.build_many(specs)):
                label = "1" if cl == 1 else f"2{c['cluster_dim']}"
                runs = [spec]
                try:
                    if spec.cluster is not None:
                        k0 = Launchable(spec, binary, inputs, out, on_device={"A": a, "B": b})
                        allow_dynamic_smem(k0.kernel, spec.smem_bytes, 0)
                        most = k0.kernel.occupancy.max_active_clusters(launch_config(spec, pdl=False), stream=stream)
                        print(f"    {spec.name_expression}: at most {most} clusters co-resident "
                              f"(grid {spec.grid[0] // 2})", flush=True)
                        if 0 < most < spec.grid[0] // 2:
                            runs.append(dataclasses.replace(spec, grid=(2 * most, 1, 1)))
                    for s in runs:
                        k = Launchable(s, binary, inputs, out, on_device={"A": a, "B": b})
                        allow_dynamic_smem(k.kernel, s.smem_bytes, 0)
                        checked_launch(lambda st: k.launch(st), w, out, ref, stream, s.name_expression, bound)
                        us = median_us(lambda: k.launch(stream), None)
                        checked_launch(lambda st: k.launch(st), w, out, ref, stream, s.name_expression, bound)
                        print(f"    {s.name_expression:56s} grid {s.grid[0]:3d} {us:8.1f} us "
                              f"{100 * cublas / us:5.1f}% of cuBLAS", flush=True)
                        if label not in best or us < best[label][0]:
                            best[label] = (us, f"{s.name_expression} grid {s.grid[0]}")
                except Exception as e:     # report and go on: one bad config must not hide the others
                    bad += 1
                    print(f"  {spec.name_expression}: FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
            for label, (us, name) in sorted(best.items()):
                print(f"  cluster {label:2s}: {us:8.1f} us {flop / us / 1e6:6.1f} TFLOP/s {100 * cublas / us:5.1f}% of "
                      f"cuBLAS  ({name})", flush=True)
    return 1 if bad else 0


# -- dyn-splitk ------------------------------------------------------------------------------------

BATCH, BATCHES = 20, 15


def batch_us(fn) -> float:
    import torch
    for _ in range(3):
        fn()
    times = []
    for _ in range(BATCHES):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(BATCH):
            fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) * 1000 / BATCH)
    return float(np.median(times))


def dyn_splitk_main(N, K, ms) -> int:
    import torch
    from cuda.core import Device, Stream

    from autosched.build import Builder
    from autosched.device import query
    from autosched.ops import HgemmDispatch
    Device(0).set_current()
    s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    w = (torch.randn((N, K), device="cuda") / K ** 0.5).half()
    bad = 0
    with Builder() as b:
        ladder = HgemmDispatch(N, K, query(0), backend="wgmma")
        ladder.load(b)
        kinds = {"plain": [(WG, config(*t)) for t in TILES],
                 "split": [(WGS, config(*t, split_k=sk)) for t in TILES for sk in (2, 3, 4, 6, 8)]}
        served = {k: [dispatcher(b, N, K, [fc], []) for fc in v] for k, v in kinds.items()}
        for M in ms:
            x = torch.randn((M, K), device="cuda").half()
            y = torch.empty((M, N), device="cuda").half()
            cublas = batch_us(lambda: torch.matmul(x, w.t(), out=y))
            row = {"ladder": [(ladder, "ladder " + str(ladder.config(M)))]}
            row.update({k: [(g, str(g.config(M))) for g in v] for k, v in served.items()})
            best = {}
            for kind, gs in row.items():
                for g, name in gs:
                    y.fill_(float("nan"))
                    g(s, x, w, y, M)
                    torch.cuda.synchronize()
                    err, bound = max_error(y, x, w)
                    if err > bound:
                        bad += 1
                        print(f"  M={M} {kind} {name}: WRONG max error {err:.3g} > {bound:.3g}", flush=True)
                        continue
                    us = batch_us(lambda: g(s, x, w, y, M))
                    if kind not in best or us < best[kind][0]:
                        best[kind] = (us, name)
            line = "  ".join(f"{k} {us:6.1f} us ({100 * cublas / us:5.1f}%)" for k, (us, _) in best.items())
            print(f"M={M:4d} {N}x{K}: cuBLAS {cublas:6.1f} us  {line}", flush=True)
            for k, (_, name) in best.items():
                print(f"         best {k}: {name}", flush=True)
    return 1 if bad else 0


# -- dataflow --------------------------------------------------------------------------------------

def dataflow_main(argv) -> int:
    """The per-kernel step and the dataflow step (each of its knob choices) of one engine, in one
    process, three rounds each, beside the copy bandwidth; --timeline: the dataflow step's timeline."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="random:llama3.2-1b")
    ap.add_argument("--formats", default="fp16,q4f16_1")
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--out", default=".")
    ap.add_argument("--timeline", action="store_true", help="the dataflow step's timeline per item kind too")
    args = ap.parse_args(argv)
    import torch

    from autosched.api import load_model
    from autosched.benchmarks.decode import copy_bandwidth_gbps, engine_tokens_per_s
    from autosched.engine import dataflow_timeline
    from autosched.engine.dataflow import DataflowStep
    from autosched.engine.engine import Engine
    cfg, w, _ = load_model(args.model)
    bw = copy_bandwidth_gbps(torch)
    print(f"copy bandwidth {bw:.0f} GB/s")
    rows, bad = [], False
    with Builder() as b:
        for fmt in args.formats.split(","):
            eng = Engine(cfg, w, fmt, builder=b, batched_prefill=False, step="kernels", verify=1, descent=False)
            limit = bw * 1e9 / eng.weight_bytes_per_token()
            row = {"format": fmt, "bw_limit_tokens_per_s": limit,
                   "kernels": [engine_tokens_per_s(torch, eng, args.steps)["tokens_per_s"] for _ in range(3)]}
            print(f"{fmt} per-kernel: {[round(t) for t in row['kernels']]} tok/s ({100 * max(row['kernels']) / limit:.1f}%)")
            try:
                eng.flow = DataflowStep(eng, w, b)
                eng.flow_served = True
                for kn in eng.flow.choices:
                    eng.flow.serve(kn)
                    eng._graph = None
                    tps = [engine_tokens_per_s(torch, eng, args.steps)["tokens_per_s"] for _ in range(3)]
                    row[kn.label()] = tps
                    print(f"{fmt} dataflow {kn.label()}: {[round(t) for t in tps]} tok/s ({100 * max(tps) / limit:.1f}%, "
                          f"x{max(tps) / max(row['kernels']):.3f})")
                if args.timeline:
                    row["timeline"] = dataflow_timeline.measure(eng, b)
                    print("\n".join(dataflow_timeline.format_table(row["timeline"])))
            except Exception as e:        # report and go on: the per-kernel figure still counts
                print(f"{fmt} dataflow: FAILED {type(e).__name__}: {e}")
                row["error"], bad = f"{type(e).__name__}: {e}", True
            rows.append(row)
            del eng
            torch.cuda.empty_cache()
    with open(f"{args.out}/dataflow-timing.json", "w") as f:
        json.dump({"model": args.model, "copy_gbps": bw, "rows": rows}, f, indent=1)
    return 1 if bad else 0


# -- prefill-wgmma ---------------------------------------------------------------------------------

def prefill_wgmma_main(argv) -> int:
    import torch
    from cuda.core import Stream

    from autosched.benchmarks.prefill import torch_prefill, ttft_s
    from autosched.build import Builder
    from autosched.engine.engine import Engine, matmul_shapes
    from autosched.engine.prefill import BatchedPrefill
    from autosched.engine.weights import random_weights_torch
    from autosched.models.llama2c import SEED_CONFIGS
    from autosched.ops.hgemm import HgemmDispatch, host_overhead_us
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    a = ap.parse_args(argv)
    out: dict = {"gemm_us": {}, "ttft_ms": {}}
    cfg = SEED_CONFIGS["llama2-7b"]
    sync = torch.cuda.synchronize
    t0 = time.perf_counter()
    with Builder() as builder:
        w = random_weights_torch(cfg, 0, "cuda")
        eng = Engine(cfg, w, "fp16", builder=builder, graphs=False, prefill_backend="mma")
        del w
        pre = {"mma": eng.prefiller, "wgmma": BatchedPrefill(cfg, "fp16", eng.info, backend="wgmma")}
        pre["wgmma"].load(builder)
        print(f"engine + kernels: {time.perf_counter() - t0:.0f} s", flush=True)
        for line in pre["wgmma"].describe():
            print(line, flush=True)
        s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
        # 1. the GEMMs alone
        for name, (n, k) in matmul_shapes(cfg).items():
            wt = eng.mm[name].layers[0]["w"]
            for M in (128, 2048):
                x = torch.randn((M, k), device="cuda").half()
                row = {}
                for be, p in pre.items():
                    g: HgemmDispatch = p.gemm[name]
                    y = torch.empty((M, n), device="cuda", dtype=torch.float16)
                    row[be] = 1e6 * ttft_s(lambda: [g(s, x, wt, y, M) for _ in range(10)], sync, 3) / 10
                    if be == "wgmma":
                        want = x.float() @ wt.float().t()
                        row["wgmma_rel_err"] = float((y.float() - want).abs().max() / want.abs().max())
                        row["wgmma_config"] = g.config(M)
                        row["host_us"] = host_overhead_us(g, s, x, wt, y, [M], reps=200)
                        sync()
                row["torch"] = 1e6 * ttft_s(lambda: [torch.matmul(x, wt.t()) for _ in range(10)], sync, 3) / 10
                out["gemm_us"][f"{name} {n}x{k} M={M}"] = row
                print(f"{name:8s} {n}x{k} M={M:5d}: wgmma {row['wgmma']:8.1f} us  mma {row['mma']:8.1f} us  "
                      f"torch {row['torch']:8.1f} us  (err {row['wgmma_rel_err']:.1e}, host {row['host_us']:.1f} us)",
                      flush=True)
        # 2. agreement at 64 tokens, every position
        toks = list(range(1, 65))
        got = {}
        for be, p in pre.items():
            eng.prefiller = p
            got[be] = eng.prefill(toks, mode="batched", all_logits=True).float().cpu().numpy()
        ref = torch_prefill(eng, toks).float().cpu().numpy()
        rel = lambda u, v: float(np.abs(u - v).max() / np.abs(v).max())   # noqa: E731
        out["agreement_64"] = {"wgmma_vs_mma": rel(got["wgmma"], got["mma"]), "wgmma_last_vs_torch": rel(got["wgmma"][-1], ref)}
        print(f"64 tokens: wgmma vs mma {out['agreement_64']['wgmma_vs_mma']:.2e}, last position vs torch "
              f"{out['agreement_64']['wgmma_last_vs_torch']:.2e}", flush=True)
        ok = max(out["agreement_64"].values()) < 2e-2
        # 3. time to first token
        for T in (128, 2048):
            tk = [int(t) for t in np.random.default_rng(T).integers(0, cfg.vocab_size, T)]
            row = {}
            for be, p in pre.items():
                eng.prefiller = p
                eng.prefill(tk, mode="batched")
                row[be] = 1e3 * ttft_s(lambda: eng.prefill(tk, mode="batched"), sync, 3)
            with torch.no_grad():
                torch_prefill(eng, tk)
                row["torch"] = 1e3 * ttft_s(lambda: torch_prefill(eng, tk), sync, 3)
            out["ttft_ms"][T] = row
            print(f"prefill {T:5d} tokens: wgmma {row['wgmma']:7.1f} ms  mma {row['mma']:7.1f} ms  torch "
                  f"{row['torch']:7.1f} ms", flush=True)
        out["maps_cached"] = {name: len(g.tensormaps) for name, g in pre["wgmma"].gemm.items()}
    out["ok"] = ok
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "prefill-wgmma.json").write_text(json.dumps(out, indent=1, default=str))
    print("agreement ok" if ok else "AGREEMENT FAILED", flush=True)
    return 0 if ok else 1


# -- prefill-attn ----------------------------------------------------------------------------------

ATTN_PROMPTS = (512, 2048)


def prefill_attn_main(argv) -> int:
    import torch
    import torch.nn.functional as F
    from cuda.core import Stream

    from autosched.benchmarks.prefill import torch_prefill, ttft_s
    from autosched.build import Builder
    from autosched.engine.engine import Engine
    from autosched.engine.prefill import BatchedPrefill
    from autosched.engine.weights import random_weights_torch
    from autosched.models.llama2c import SEED_CONFIGS
    from autosched.runtime import ptr
    from autosched.templates import prefill as pk
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    a = ap.parse_args(argv)
    out: dict = {"attention_us": {}, "ttft_ms": {}}
    cfg = SEED_CONFIGS["llama2-7b"]
    hs, H = cfg.head_size, cfg.n_heads
    sync = torch.cuda.synchronize
    t0 = time.perf_counter()
    os.environ.pop("AUTOSCHED_PREFILL_TC_ATTN", None)
    with Builder() as builder:
        w = random_weights_torch(cfg, 0, "cuda")
        eng = Engine(cfg, w, "fp16", builder=builder, graphs=False)
        del w
        os.environ["AUTOSCHED_PREFILL_TC_ATTN"] = "1"
        pre = {"off": eng.prefiller, "on": BatchedPrefill(cfg, "fp16", eng.info)}
        del os.environ["AUTOSCHED_PREFILL_TC_ATTN"]
        assert not pre["off"].tc_attention and pre["on"].tc_attention
        pre["on"].load(builder)
        print(f"engine + kernels: {time.perf_counter() - t0:.0f} s", flush=True)
        print(pre["on"].describe()[-1], flush=True)
        s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
        i32 = np.int32

        # 1. the attention alone, one layer
        kernels = {"cuda_cores": (pre["off"].k["attn"], pk.ATTENTION_BQ),
                   **{f"tc_bq{bq}": (pre["on"].k[f"attn_tc{bq}"], bq) for bq in pk.TC_BQS}}
        for T in ATTN_PROMPTS:
            qkv = torch.randn((T, 3 * cfg.dim), device="cuda").half()
            kc, vc = torch.randn((T, cfg.kv_dim), device="cuda").half(), torch.randn((T, cfg.kv_dim), device="cuda").half()
            args = (ptr(qkv), ptr(kc), ptr(vc), ptr(eng.rope_cs), i32(0), i32(T), i32(H), i32(cfg.kv_dim), i32(1))
            outs, row = {}, {}
            for name, (k, bq) in kernels.items():
                o = torch.empty((T, cfg.dim), device="cuda", dtype=torch.float16)
                outs[name] = o
                run = lambda: [k.launch(s, pk.attention_grid(T, H, bq), ptr(o), *args) for _ in range(10)]  # noqa: E731
                run()
                row[name] = 1e6 * ttft_s(run, sync, 3) / 10
            q = qkv[:, :cfg.dim].view(T, H, hs).transpose(0, 1)[None]
            kt, vt = kc.view(T, H, hs).transpose(0, 1)[None], vc.view(T, H, hs).transpose(0, 1)[None]
            sdpa = lambda: [F.scaled_dot_product_attention(q, kt, vt, is_causal=True) for _ in range(10)]  # noqa: E731
            sdpa()
            row["torch_sdpa"] = 1e6 * ttft_s(sdpa, sync, 3) / 10
            flop = 4 * hs * H * T * (T + 1) / 2
            row["tflops"] = {n: flop / (us * 1e-6) / 1e12 for n, us in row.items() if isinstance(us, float)}
            row["tc_max_diff_vs_cuda_cores"] = {n: float((outs[n].float() - outs["cuda_cores"].float()).abs().max())
                                                for n in outs if n != "cuda_cores"}
            row["rule_bq"] = pk.tc_attention_bq(T, H, eng.info.sm_count)
            out["attention_us"][T] = row
            print(f"attention T={T:5d}: CUDA cores {row['cuda_cores']:8.1f} us  TC bq64 {row['tc_bq64']:8.1f} us  "
                  f"TC bq128 {row['tc_bq128']:8.1f} us  SDPA {row['torch_sdpa']:8.1f} us  (rule: bq{row['rule_bq']}; "
                  f"max diff {max(row['tc_max_diff_vs_cuda_cores'].values()):.1e})", flush=True)
        ok = all(d < 1e-2 for r in out["attention_us"].values() for d in r["tc_max_diff_vs_cuda_cores"].values())

        # 2. agreement at 64 tokens, every position
        toks = list(range(1, 65))
        got = {}
        for name, p in pre.items():
            eng.prefiller = p
            got[name] = eng.prefill(toks, mode="batched", all_logits=True).float().cpu().numpy()
        ref = torch_prefill(eng, toks).float().cpu().numpy()
        rel = lambda u, v: float(np.abs(u - v).max() / np.abs(v).max())   # noqa: E731
        out["agreement_64"] = {"on_vs_off": rel(got["on"], got["off"]), "on_last_vs_torch": rel(got["on"][-1], ref)}
        print(f"64 tokens: on vs off {out['agreement_64']['on_vs_off']:.2e}, last position vs torch "
              f"{out['agreement_64']['on_last_vs_torch']:.2e}", flush=True)
        ok = ok and max(out["agreement_64"].values()) < 2e-2

        # 3. time to first token
        for T in ATTN_PROMPTS:
            tk = [int(t) for t in np.random.default_rng(T).integers(0, cfg.vocab_size, T)]
            row = {}
            for name, p in pre.items():
                eng.prefiller = p
                eng.prefill(tk, mode="batched")
                row[name] = 1e3 * ttft_s(lambda: eng.prefill(tk, mode="batched"), sync, 3)
            with torch.no_grad():
                torch_prefill(eng, tk)
                row["torch"] = 1e3 * ttft_s(lambda: torch_prefill(eng, tk), sync, 3)
            out["ttft_ms"][T] = row
            print(f"prefill {T:5d} tokens: TC attention on {row['on']:7.1f} ms  off {row['off']:7.1f} ms  torch "
                  f"{row['torch']:7.1f} ms", flush=True)
    out["ok"] = ok
    out["device"] = eng.info.key
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "prefill-tc-attn.json").write_text(json.dumps(out, indent=1, default=str))
    print("agreement ok" if ok else "AGREEMENT FAILED", flush=True)
    return 0 if ok else 1


MODES = {
    "wgmma": lambda argv: wgmma_main(argv or ["4096x4096x4096_bt", "4096x4096x4096"]),
    "wmma": lambda argv: wmma_main(),
    "splitk": lambda argv: splitk_main(argv or ["128x4096x4096_bt", "128x4096x11008_bt"]),
    "cluster": lambda argv: cluster_main(argv or ["4096x4096x4096_bt", "4096x4096x4096", "8192x8192x8192_bt"]),
    "dyn-splitk": lambda argv: dyn_splitk_main(*([int(v) for v in argv[:2]] or [4096, 4096]),
                                               [int(v) for v in argv[2:]] or [1, 16, 64, 128, 256]),
    "dataflow": dataflow_main,
    "prefill-wgmma": prefill_wgmma_main,
    "prefill-attn": prefill_attn_main,
}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in MODES:
        sys.exit(__doc__)
    sys.exit(MODES[sys.argv[1]](sys.argv[2:]))
