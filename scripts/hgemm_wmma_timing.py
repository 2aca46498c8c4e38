"""A quick timing of the wmma GEMM at 4096^3 (FP16 and BF16, nn): its default and a few configs,
beside hgemm_mma's default and cuBLAS through torch, with TFLOP/s.  Not a tuning run (see
`autosched bench hgemm` for that): a check that the seed's design lands in the range the issue asks
of it (wmma >= 30% of cuBLAS at 4096^3).

    python3 scripts/hgemm_wmma_timing.py        # writes $OUT/hgemm-wmma-timing.json

Ours are timed by the GpuRunner (L2 flushed, median of the protocol's runs, checked against the
float64 reference first); cuBLAS by CUDA events around torch.matmul with the same flush.
"""
import json
import os
import sys
import time

from autosched.build import Builder
from autosched.measure.gpu import GpuRunner
from autosched.measure.protocol import Protocol
from autosched.templates import HgemmMmaTemplate, HgemmWmmaTemplate
from autosched.workloads import Hgemm

SHAPE = "4096x4096x4096"
# beside the default: a wider block, a taller one, a deeper ring with a longer slice
EXTRA = [{"bm": 128, "bn": 256, "wm": 64, "wn": 64, "bk": 32, "stages": 3, "pad": 8},
         {"bm": 256, "bn": 128, "wm": 64, "wn": 64, "bk": 32, "stages": 2, "pad": 8},
         {"bm": 128, "bn": 128, "wm": 64, "wn": 32, "bk": 64, "stages": 3, "pad": 8},
         {"bm": 128, "bn": 128, "wm": 32, "wn": 64, "bk": 32, "stages": 3, "pad": 16}]


def cublas_us(w, repeat=50, flush_bytes=256 << 20):
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


def main():
    out_dir = os.environ.get("OUT", "/tmp")
    rows = []
    t0 = time.time()
    with GpuRunner(protocol=Protocol(flush_bytes=256 << 20, warmup=2, repeat=30), timeout_s=60) as runner, \
            Builder() as builder:
        dev = runner.device_info
        items = []
        for dtype in ("fp16", "bf16"):
            w = Hgemm.from_shape(SHAPE, dtype=dtype)
            wm, mm = HgemmWmmaTemplate(), HgemmMmaTemplate()
            sp = wm.space(w, dev)
            cfgs = [("wmma default", wm, wm.default_config(w, dev))]
            cfgs += [(f"wmma {c['bm']}x{c['bn']}/{c['wm']}x{c['wn']} bk{c['bk']} s{c['stages']} p{c['pad']}", wm, c)
                     for c in EXTRA if sp.contains(c)]
            cfgs.append(("mma default", mm, mm.default_config(w, dev)))
            items += [(w, label, t, c, t.render(w, c, dev)) for label, t, c in cfgs]
        results = dict(runner.measure_stream((i, it[4], builder.submit(it[4])) for i, it in enumerate(items)))
    cublas = {}
    try:
        for dtype in ("fp16", "bf16"):
            cublas[dtype] = cublas_us(Hgemm.from_shape(SHAPE, dtype=dtype))
    except Exception as e:      # no torch here: ours are still worth printing
        print(f"cuBLAS via torch unavailable: {type(e).__name__}: {e}", file=sys.stderr)
    for i, (w, label, t, c, spec) in enumerate(items):
        m = results[i]
        us = m.median_us if m.ok else float("nan")
        cb = cublas.get(w.dtype, float("nan"))
        row = {"shape": w.shape_str, "dtype": w.dtype, "label": label, "template": t.family, "config": c,
               "status": m.status.value, "error": m.error[:300], "median_us": us, "registers": m.registers,
               "tflops": w.flops() / us / 1e6, "cublas_us": cb, "cublas_tflops": w.flops() / cb / 1e6,
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


if __name__ == "__main__":
    sys.exit(main())
