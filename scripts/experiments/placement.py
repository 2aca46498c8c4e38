"""Does a small GEMM's time depend on where its buffers lie in memory?

family_view.py (H100, 2026-11-27, checks/family-view-*.json) found our kernels' times in two modes 0.5-0.7
us apart (768 x 768 at M = 112: 8.1-8.2 or 8.7-8.8 us), and the mode flipped at every re-allocation of
the runner's inputs (each forget_inputs or growth of the row family), while measurements between two
re-allocations agreed; cuBLAS, on tensors allocated once, showed one mode.  If placement decides it,
a search that re-draws inputs between candidates ranks them partly by where their buffers landed, and
a bench comparing us with cuBLAS on separately allocated tensors carries that bias.

Here A, B and C are put at chosen offsets from 2 MB boundaries inside one pool (the same values every
time), and the same kernel (in this process, checked against float64 first) and cuBLAS (into the same
C) are timed at each placement, twice, in alternation.  Rows to $OUT/placement.json.

    python3 scripts/experiments/placement.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

S = {"consumers": 1, "swizzle": 128}
CASES = [("112x768x768_bt", {**S, "bm": 64, "bn": 64, "stages": 5, "group": 1}),
         ("160x768x3072_bt", {**S, "bm": 64, "bn": 64, "stages": 8, "group": 1}),
         ("33x4096x4096_bt", {**S, "bm": 64, "bn": 64, "stages": 12, "group": 1})]
MB = 1 << 20
REGION = 40 * MB                  # one region a buffer: the largest here (B of 4096 x 4096) is 32 MB
# (A, B, C) offsets in bytes from each region's 2 MB-aligned start: aligned, 4 KB and 64 KB in, half a
# large page in, straddling one, and one buffer moved at a time
PLACEMENTS = [(0, 0, 0), (4096, 4096, 4096), (64 << 10, 64 << 10, 64 << 10), (MB, MB, MB),
              (2 * MB - 4096, 2 * MB - 4096, 2 * MB - 4096), (MB, 0, 0), (0, MB, 0), (0, 0, MB)]
ROUNDS = 2


def placed(pool, shift, region, offset, like):
    """A copy of the contiguous tensor `like` at `offset` bytes past region `region`'s 2 MB-aligned start."""
    n = like.numel() * like.element_size()
    start = shift + region * REGION + offset
    return pool[start:start + n].view(like.dtype).view(like.shape).copy_(like)


def main():
    import torch

    from autosched.templates import HgemmWgmmaTemplate
    from gemm_bench_kit import Session
    t = HgemmWgmmaTemplate()
    pool = torch.empty(3 * REGION + 2 * MB, dtype=torch.uint8, device="cuda")
    shift = (-pool.data_ptr()) % (2 * MB)
    with Session() as s:
        for shape, cfg in CASES:
            ops = s.operands(shape)
            spec = t.render(ops.w, cfg, s.info)
            a0, b0, out0 = ops.a, ops.b, ops.out
            for oa, ob, oc in PLACEMENTS:
                ops.a = placed(pool, shift, 0, oa, a0)
                ops.b = placed(pool, shift, 1, ob, b0)
                ops.out = placed(pool, shift, 2, oc, out0)
                ops.bt = ops.b.t() if ops.w.b_col else ops.b
                row = {"shape": shape, "config": cfg, "offsets": [oa, ob, oc], "ours": [], "cublas": []}
                for _ in range(ROUNDS):
                    row["ours"].append(s.time(spec, ops, f"{shape} {oa, ob, oc}").get("us"))
                    times = s.timer.time(lambda: torch.matmul(ops.a, ops.bt, out=ops.out))
                    row["cublas"].append(float(np.median(times)))
                s.keep(row)
        s.write("placement.json")


if __name__ == "__main__":
    main()
