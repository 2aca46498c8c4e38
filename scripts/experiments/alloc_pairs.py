"""Is a ratio to cuBLAS taken on one set of buffers the same whatever buffers those are?

placement.py (H100, 2026-11-27) moved A, B and C to eight offsets inside one torch allocation and found
ours and cuBLAS fast or slow together (cuBLAS / ours 0.889-0.917 at 112x768x768).  The DietCode bench's
same-buffer pairing (the memory pool the runner measures in) then read cuBLAS 0.9 us slower at 768 x 768
than it had on torch's own tensors.  Here each case gets fresh A, B and C three times from each allocator
(torch's caching allocator, the device's memory pool; earlier ones kept alive, so every set lies
elsewhere), and each set is timed both ways: ours and cuBLAS alternating run by run (the benches'
paired_ratio) and as two series, with cuBLAS allowed to reduce in FP16 (torch's default) and not
(the benches' setting); with WITH_RUNNER=1, with the tuner's worker processes alive on the GPU, as in
the DietCode bench; with HOG=thread a Python thread spinning beside the timing loop, with HOG=procs
every core busy in other processes (is a host that lags behind the GPU what inflates one side?).  Rows (with the buffers' offsets from 2 MB boundaries) to
$OUT/alloc-pairs.json (alloc-pairs-runner.json).

    python3 scripts/experiments/alloc_pairs.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

S = {"consumers": 1, "swizzle": 128}
CASES = [("112x768x768_bt", {**S, "bm": 64, "bn": 64, "stages": 5, "group": 1}),
         ("80x768x768_bt", {**S, "bm": 64, "bn": 64, "stages": 5, "group": 1}),
         ("160x768x3072_bt", {**S, "bm": 64, "bn": 64, "stages": 8, "group": 1}),
         ("33x4096x4096_bt", {**S, "bm": 64, "bn": 64, "stages": 12, "group": 1})]
SETS = int(os.environ.get("SETS", 3))
MB2 = 2 << 20


def _burn():
    while True:
        pass


def main():
    import torch

    from autosched.benchmarks.common import pool_tensor
    from autosched.benchmarks.hgemm import paired_ratio
    from autosched.templates import HgemmWgmmaTemplate
    from gemm_bench_kit import Session
    t = HgemmWgmmaTemplate()
    kept = []
    runner = None
    if os.environ.get("WITH_RUNNER"):
        # as in the DietCode bench: the tuner's worker processes alive on the same GPU, one kernel
        # measured through them first (their contexts made), idle while this process times
        from autosched.build import Builder
        from autosched.measure.gpu import GpuRunner
        from autosched.workloads import Hgemm
        runner = GpuRunner()
        w = Hgemm.from_shape(CASES[0][0])
        spec = HgemmWgmmaTemplate().render(w, CASES[0][1], runner.device_info)
        with Builder() as b:
            print("through the runner:", runner.measure(spec, b.build(spec)).median_us, flush=True)
    hog = os.environ.get("HOG")
    if hog == "thread":
        # a Python thread that never sleeps: the timing loop's host side then waits for the GIL
        import threading

        def spin():
            while True:
                sum(range(1000))
        threading.Thread(target=spin, daemon=True).start()
    elif hog == "procs":
        # every core busy in other processes: the timing loop's host side shares the CPUs
        import multiprocessing as mp
        for _ in range(os.cpu_count() or 1):
            mp.Process(target=_burn, daemon=True).start()
    with Session() as s:
        for shape, cfg in CASES:
            ops = s.operands(shape)
            spec = t.render(ops.w, cfg, s.info)
            a0, b0 = ops.a, ops.b
            for i in range(SETS):
                for alloc in ("torch", "pool"):
                    if alloc == "torch":
                        a, b = a0.clone(), b0.clone()
                        out = torch.empty_like(ops.out)
                    else:
                        a, b, out = (pool_tensor(s.dev, s.stream, x.shape, np.float16) for x in (a0, b0, ops.out))
                        a.copy_(a0)
                        b.copy_(b0)
                    kept.append((a, b, out))
                    ops.a, ops.b, ops.out = a, b, out
                    ops.bt = b.t() if ops.w.b_col else b
                    k = s.launchable(spec, ops, f"{shape} {alloc} {i}")
                    if isinstance(k, str):
                        raise RuntimeError(k)
                    for reduced in (True, False):
                        # torch's default lets cuBLAS reduce in FP16 (split-K partials); the benches forbid
                        # it, so that cuBLAS accumulates in FP32 all the way, as ours do
                        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = reduced
                        p = paired_ratio(s.timer, lambda: k.launch(s.stream),
                                         lambda: torch.matmul(ops.a, ops.bt, out=ops.out))
                        ours = float(np.median(s.timer.time(lambda: k.launch(s.stream))))
                        cub = float(np.median(s.timer.time(lambda: torch.matmul(ops.a, ops.bt, out=ops.out))))
                        s.keep({"shape": shape, "config": cfg, "alloc": alloc, "set": i, "fp16_reduction": reduced,
                                "runner_alive": runner is not None, "hog": hog,
                                "offsets_2mb": [x.data_ptr() % MB2 for x in (a, b, out)],
                                "paired_ours_us": float(np.median(p["us"])),
                                "paired_cublas_us": float(np.median(p["cublas_us"])),
                                "paired_cublas_over_ours": p["pct_of_cublas"] / 100.0,
                                "series_ours_us": ours, "series_cublas_us": cub,
                                "series_cublas_over_ours": cub / ours})
        s.write(f"alloc-pairs-{hog}.json" if hog else "alloc-pairs-runner.json" if runner else "alloc-pairs.json")
    if runner is not None:
        runner.close()


if __name__ == "__main__":
    main()
