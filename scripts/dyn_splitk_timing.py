"""Dynamic-M split-K against the non-split dynamic kernels and cuBLAS at small M (the weights-bound
regime where 64 x 64 tiles leave SMs idle), N = K = 4096 by default: for each M, cuBLAS (torch), the
wgmma ladder's kernel (what HgemmDispatch serves untuned), the best plain wgmma tile of
dyn_splitk_common.TILES and the best split-K (those tiles x split_k 2..8), each served through
HgemmDispatch (the workspace cache on the path), checked against float64 first, then timed as
batches of back-to-back calls (CUDA events, median of batches: the host's per-call cost shows
where it exceeds the kernel's).  Needs AUTOSCHED_DYN_SPLIT_K=1.

    AUTOSCHED_DYN_SPLIT_K=1 python3 scripts/dyn_splitk_timing.py [N K [M ...]]
"""
import sys

import numpy as np
from dyn_splitk_common import TILES, WG, WGS, config, dispatcher, max_error  # (scripts/ is sys.path[0])

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


def main(N, K, ms) -> int:
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


if __name__ == "__main__":
    a = [int(v) for v in sys.argv[1:]]
    sys.exit(main(*(a[:2] or [4096, 4096]), a[2:] or [1, 16, 64, 128, 256]))
