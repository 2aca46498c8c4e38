"""A quick look at the wgmma + TMA GEMM's speed beside cuBLAS (torch.matmul, FP16, FP32 accumulation)
on one GPU, in one process, on the same buffers: the template's default and a few hand-picked
configs at each shape, checked against float64 first (NaN-poisoned output), then timed with CUDA
events (median of REPEAT launches after a warm-up, L2 not flushed: a first look, not the
benchmark of record).  Prints TFLOP/s and the share of cuBLAS.

    python3 scripts/wgmma_timing.py [SHAPE ...]      # default 4096x4096x4096_bt 4096x4096x4096
"""
import sys
import time

import numpy as np

REPEAT = 30
CONFIGS = [  # beside the default
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


def main(shapes):
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
            cfgs = [t.default_config(w, info)] + [c for c in CONFIGS if space.contains(c)]
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["4096x4096x4096_bt", "4096x4096x4096"]))
