"""`autosched bench sgemm` and `autosched bench hgemm`: the tuned GEMM vs the template's default vs
cuBLAS (FP32 with TF32 off; FP16 with FP32 accumulation and no reduced-precision reductions), timed
in one process under one protocol; JSON under bench/results/.

"tuned" is the fastest, timed here, of the database's RERANK fastest configs (the tuner's worker
ranks configs a fraction of a percent apart; this process is where cuBLAS is timed), then timed
afresh: the per-config times of that re-rank are in each row's "rerank".

Our kernels and cuBLAS read the same A and B and write the same C: one set of buffers a shape,
taken from the memory pool the tuner's worker measures in.  The tuned kernel can be sensitive to
how its buffers were allocated (on the H100 the FP32 4096^3 one ran slower in torch's
caching-allocator memory, where cuBLAS did not; see the README), so each row also times both on
torch tensors ("torch_memory"): the ratio of record is taken on the tuning's allocation, the
other beside it."""

from __future__ import annotations

import numpy as np

from autosched.benchmarks.common import (Launchable, checked_launch, err_text, pool_tensor, rerank_configs,
                                         tuned_then_timed, write_results)
from autosched.benchmarks.hgemm import cublas_operands, cublas_out
from autosched.runtime import allow_dynamic_smem
from autosched.workloads import WORKLOADS

# torch and cuda.core are imported inside functions: optional / slow to import, a CPU install runs without
# them; templates_for is imported inside functions too: looked up at call time, as tests replace it on its
# module

SHAPES = {
    "sgemm": ["16x16x16", "512x512x512", "1024x1024x1024", "2048x2048x2048", "4096x4096x4096",
              "1x4096x4096", "64x11008x4096", "4096x512x4096"],
    # BENCHMARKS.md's square sizes, and the decode engine's shapes with B a linear layer's (N, K) weight
    "hgemm": ["1024x1024x1024", "4096x4096x4096", "8192x8192x8192", "1x4096x4096_bt", "64x11008x4096_bt",
              "4096x4096x4096_bt"],
}
RERANK = 8          # configs the benchmark re-times in its own process before timing the winner


def _launchable(spec, binary, inputs, out, on_device):
    """A built SGEMM launchable on torch's stream over the device tensors `on_device` (A, B), and its
    run (zeroing C first under split-K, which accumulates: the zeroing is part of its cost)."""
    from cuda.core import Device
    k = Launchable(spec, binary, inputs, out, on_device=on_device)
    # a config staging over 48 KB launches with dynamic shared memory, which the kernel opts in to
    allow_dynamic_smem(k.kernel, spec.smem_bytes, Device().device_id)
    zero = spec.output_init == "zero"

    def run(stream):
        if zero:
            out.zero_()
        k.launch(stream)
    return run


def _time_ours(w, template, cfg, device, builder, inputs, ref, bound, out, on_device, timer, stream) -> dict:
    spec = template.render(w, cfg, device)
    run = _launchable(spec, builder.build(spec), inputs, out, on_device)
    chk = checked_launch(run, w, out, ref, stream, f"kernel for {w.key}", bound)
    s = timer.summary(lambda: run(stream))
    return {"us": s["median_us"], "min_us": s["min_us"], "spread_us": s["spread_us"], "config": cfg,
            "max_abs_err": chk.max_abs_err}


def _operands(w, on_device):
    """A and B as the (M, K) and (K, N) views torch.matmul takes, of the buffers as stored."""
    if w.name == "hgemm":       # every layout and BF16: autosched.benchmarks.hgemm's views
        return cublas_operands(w, on_device["A"], on_device["B"])
    a, b = on_device["A"], on_device["B"]
    return (a.t() if getattr(w, "trans_a", 0) else a), (b.t() if getattr(w, "b_col", 0) else b)


def _cublas(w, on_device, out, ref, bound, timer) -> dict:
    """cuBLAS (torch.matmul) on the same A, B, C: checked, then timed."""
    import torch
    a, b = _operands(w, on_device)
    out.fill_(float("nan"))
    torch.matmul(a, b, out=out)
    torch.cuda.synchronize()
    chk = w.check(out.cpu().numpy(), ref, bound)
    return {"check": chk.ok, "us": timer.summary(lambda: torch.matmul(a, b, out=out))["median_us"]}


def _rerank(w, template, device, db, first, builder, inputs, ref, bound, out, on_device, timer, stream, k: int):
    def time_config(spec, binary):
        run = _launchable(spec, binary, inputs, out, on_device)
        checked_launch(run, w, out, ref, stream, f"config for {w.key}", bound)
        return timer.summary(lambda: run(stream))["median_us"]
    return rerank_configs(w, template, device, db, first, builder, k, time_config)


def run_benchmark(shapes=None, trials: int = 400, strategy: str = "evolutionary-model",
                  out_dir="bench/results", db_path=None, console=None, time_per_shape_s=None,
                  rerank: int = RERANK, op: str = "sgemm"):
    """`op`: "sgemm" (FP32) or "hgemm" (FP16 on tensor cores)."""
    import torch
    from autosched.registry import templates_for

    if op not in SHAPES:
        raise ValueError(f"unknown GEMM benchmark {op!r}; there are {sorted(SHAPES)}")
    log = console.print if console else print
    workloads = [WORKLOADS[op].from_shape(s) for s in (shapes or SHAPES[op])]
    template = templates_for(workloads[0])[0]
    with tuned_then_timed(workloads, template, db_path, strategy=strategy, trials=trials,
                          time_per_shape_s=time_per_shape_s, log=log) as s:
        device, tuned, builder, timer, stream, db = s.device, s.tuned, s.builder, s.timer, s.stream, s.db
        torch.backends.cuda.matmul.allow_tf32 = False       # cuBLAS in true FP32, as our kernels
        torch.backends.cudnn.allow_tf32 = False
        # and in FP16, accumulating in FP32 all the way, as ours do
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        rows, path = [], None
        for w in workloads:
            res = tuned[w.key]
            inputs = w.inputs(seed=1234)
            ref, bound = w.reference(inputs), w.error_bound(inputs)
            row = {"shape": w.shape_str, "M": w.M, "N": w.N, "K": w.K, "flops": w.flops(), "tune_s": round(res.total_tuning_s, 2),
                   "trials": res.total_trials, "run_tune_s": round(res.elapsed_s, 2), "errors": {}}
            # one set of buffers for our kernels and cuBLAS, in the memory the tuning measured in
            on_device = {n: pool_tensor(s.gpu, stream, inputs[n].shape, inputs[n].dtype) for n in ("A", "B")}
            for n, t in on_device.items():
                t.copy_(torch.from_numpy(inputs[n]))
            out_shape, out_dtype = w.output_spec()
            out = pool_tensor(s.gpu, stream, out_shape, out_dtype)
            best = res.best_config
            if best is not None and rerank > 1:
                try:
                    best, row["rerank"] = _rerank(w, template, device, db, best, builder, inputs, ref, bound,
                                                  out, on_device, timer, stream, rerank)
                except Exception as e:
                    row["errors"]["rerank"] = err_text(e)
            for name, cfg in (("tuned", best), ("default", template.default_config(w, device))):
                if cfg is None:
                    row["errors"][name] = "no config passed its check during tuning"
                    continue
                try:
                    for k, v in _time_ours(w, template, cfg, device, builder, inputs, ref, bound, out,
                                           on_device, timer, stream).items():
                        row[f"{name}_{k}"] = v
                except Exception as e:
                    row["errors"][name] = err_text(e)
            try:
                cb = _cublas(w, on_device, out, ref, bound, timer)
                row["cublas_check"], row["cublas_us"] = cb["check"], cb["us"]
            except Exception as e:
                row["errors"]["cublas"] = err_text(e)
            if best is not None:
                # the same two on torch's caching-allocator memory, beside the ratio of record
                try:
                    tm = {n: t.clone() for n, t in on_device.items()}
                    tout = torch.empty_like(out)
                    ours = _time_ours(w, template, best, device, builder, inputs, ref, bound, tout, tm, timer,
                                      stream)
                    cb = _cublas(w, tm, tout, ref, bound, timer)
                    row["torch_memory"] = {"tuned_us": ours["us"], "cublas_us": cb["us"], "cublas_check": cb["check"],
                                           "pct_of_cublas": 100.0 * cb["us"] / ours["us"]}
                    del tm, tout
                except Exception as e:
                    row["errors"]["torch_memory"] = err_text(e)
            for name in ("tuned", "default", "cublas"):
                key = f"{name}_us"
                if key in row:
                    row[f"{name}_tflops"] = w.flops() / (row[key] * 1e-6) / 1e12
            if "tuned_us" in row and "cublas_us" in row:
                row["pct_of_cublas"] = 100.0 * row["cublas_us"] / row["tuned_us"]
            rows.append(row)
            log(f"{w.shape_str}: tuned {row.get('tuned_us', float('nan')):.2f} us, default "
                f"{row.get('default_us', float('nan')):.2f}, cuBLAS {row.get('cublas_us', float('nan')):.2f} "
                f"({row.get('pct_of_cublas', float('nan')):.1f}% of cuBLAS; in torch's memory "
                f"{row.get('torch_memory', {}).get('pct_of_cublas', float('nan')):.1f}%)")
            big = next((r for r in rows if (r["M"], r["N"], r["K"]) == (4096, 4096, 4096)), None)
            summary = {"pct_of_cublas_4096": big.get("pct_of_cublas") if big else None,
                       "pct_of_cublas_4096_torch_memory": big.get("torch_memory", {}).get("pct_of_cublas") if big else None,
                       "shapes_at_or_above_cublas": sum(r.get("pct_of_cublas", 0) >= 100 for r in rows),
                       "shapes": len(rows)}
            path = write_results(op, device, rows, summary, out_dir,
                                 {"tuning": {"strategy": strategy, "trials": trials, "rerank": rerank},
                                  "shapes_planned": [[x.M, x.N, x.K] for x in workloads]}, path=path)
            torch.cuda.empty_cache()
    return path


def cublas_for_profile(w, inputs: dict, builder=None, info=None):
    """cuBLAS on the workload's inputs exactly as this benchmark calls it (TF32 and reduced-precision
    reductions off, B as stored), as a function that launches it once: the baseline a profile
    (scripts/ncu_kernel.py) puts beside our kernel."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    dev = {k: torch.from_numpy(inputs[k]).cuda() for k in ("A", "B")}
    a, b = _operands(w, dev)
    shape, dtype = w.output_spec()
    out = torch.empty(shape, dtype=torch.from_numpy(np.empty(0, dtype)).dtype, device="cuda")
    if w.name == "hgemm":
        out = cublas_out(w, out)
    return lambda: torch.matmul(a, b, out=out)
