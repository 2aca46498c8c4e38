"""Does the kernel that runs before it move a few-microsecond GEMM's time under the protocol?  In the full
DietCode run of 2026-11-27 (dynamic-*-2026-11-27-2.json) single points read 5-14% apart between the
pairing (ours and cuBLAS alternating, each after a flush), the two as series of their own in the same
process, and the tuner's worker (112 x 768 x 768: cuBLAS / ours 1.104 paired, 0.969 as series).  Here,
per shape, on the same buffers, each condition in three rounds whose order is shuffled:

  series      ours x 100, then cuBLAS x 100 (each run after a flush)
  pair        ours, cuBLAS, ours, ... (the bench's pairing)
  self-pair   cuBLAS, cuBLAS into a second output (the same kernel twice: what alternation alone does)
  ours-pair   ours, ours into a second output

If cuBLAS's time in `pair` differs from `series` and `self-pair` by more than the rounds' spread, the
kernel before it matters (shared-memory carveout, instruction cache, clocks), and the pairing's ratio
carries that bias.  Rows to $OUT/pair-order.json.  It did (checks/pair-order-2026-11-27.json; the cause
in slot_bias.py), and the Timer's alternation became a, b, b, a rounds.

    python3 scripts/experiments/pair_order.py [SHAPE...]"""
import os
import random
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# (shape, hgemm_wgmma_swap config): the best of swap_sweep.py on the H100 (2026-11-27)
CASES = [("112x768x768_bt", {"bw": 128, "bt": 32, "swizzle": 128, "stages": 8, "split_k": 1, "reduce": "workspace"}),
         ("192x768x768_bt", {"bw": 64, "bt": 24, "swizzle": 128, "stages": 12, "split_k": 1, "reduce": "workspace"}),
         ("160x768x3072_bt", {"bw": 64, "bt": 40, "swizzle": 128, "stages": 16, "split_k": 2, "reduce": "workspace"}),
         ("33x4096x4096_bt", {"bw": 64, "bt": 24, "swizzle": 128, "stages": 16, "split_k": 1, "reduce": "workspace"})]
ROUNDS = 3


def built_cases(s, wanted):
    """(shape, config, operands, launchable) of each case of CASES in `wanted` (all where empty), the swap
    kernel built and checked against float64 on the operands cuBLAS gets; a case that fails is kept as
    an error row of Session `s` and skipped."""
    from autosched.templates import HgemmWgmmaSwapTemplate
    t = HgemmWgmmaSwapTemplate()
    for shape, cfg in CASES:
        if wanted and shape not in wanted:
            continue
        ops = s.operands(shape)
        k = s.launchable(t.render(ops.w, cfg, s.info), ops, f"{shape} swap")
        if isinstance(k, str):
            s.keep({"shape": shape, "config": cfg, "error": k})
            continue
        yield shape, cfg, ops, k


def main():
    import torch

    from gemm_bench_kit import Session
    with Session() as s:
        timer = s.timer
        for shape, cfg, ops, k in built_cases(s, sys.argv[1:]):
            out2 = torch.empty_like(ops.out)

            def ours():
                k.launch(s.stream)

            def cublas():
                torch.matmul(ops.a, ops.bt, out=ops.out)

            def cublas2():
                torch.matmul(ops.a, ops.bt, out=out2)

            # the pairing as it was when this ran (Timer.time_alternating has timed a, b, b, a rounds since)
            plain = lambda a, b: timer._series((a, b), None, None, True)  # noqa: E731
            med = lambda xs: float(np.median(xs))  # noqa: E731
            conditions = {
                "series": lambda: (med(timer.time(ours)), med(timer.time(cublas))),
                "pair": lambda: tuple(map(med, plain(ours, cublas))),
                "self-pair": lambda: tuple(map(med, plain(cublas, cublas2))),
                "ours-pair": lambda: tuple(map(med, plain(ours, ours))),
            }
            row = {"shape": shape, "config": cfg, **{c: [] for c in conditions}, "host_late": {}}
            order = [c for c in conditions for _ in range(ROUNDS)]
            random.Random(shape).shuffle(order)
            for c in order:
                row[c].append(conditions[c]())
                row["host_late"].setdefault(c, []).append(list(timer.host_late))
            row["order"] = order
            s.keep(row)
        s.write("pair-order.json")


if __name__ == "__main__":
    main()
