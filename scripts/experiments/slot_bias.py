"""Where does the alternating pairing's slot bias come from?  pair_order.py (H100, 2026-11-27) timed the
same kernel in both slots of Timer.time_alternating and found the slots 4-9% apart at BERT's few-row
shapes, the sign depending on the shape (112 x 768 x 768: slot 1 slower; 160 x 768 x 3072: slot 1
faster).  Slot 1 always follows a flush of an odd value and slot 2 an even one, and the two slots sit
at fixed phases of each round.  Here, per shape, cuBLAS against itself under flushes that differ
only in the values written:

  inc      the Timer's flush (a value one higher each time: odd before slot 1, even before slot 2)
  const    the same value every flush
  random   a random value every flush
  triple   three slots of the same kernel (inc): does the bias follow the parity or the position?

and ours against cuBLAS in both orders, and in ABBA rounds
(ours, cuBLAS, cuBLAS, ours in each round), which is what the bench's pairing would become if the bias
is positional.  Rows to $OUT/slot-bias.json.

    python3 scripts/experiments/slot_bias.py [SHAPE...]"""
import os
import random
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pair_order import built_cases  # noqa: E402

ROUNDS = 3


def main():
    import torch
    from cuda.bindings import driver

    from autosched.runtime import check
    from gemm_bench_kit import Session
    with Session() as s:
        timer = s.timer
        inc_flush = timer.flush
        rng = random.Random(0)

        def value_flush(pick):
            def flush():
                check(driver.cuMemsetD32Async(int(timer.flush_buf.handle), pick(),
                                              timer.protocol.flush_bytes // 4, int(timer.stream.handle)))
            return flush

        flushes = {"inc": inc_flush, "const": value_flush(lambda: 0x5A5A5A5A),
                   "random": value_flush(lambda: rng.getrandbits(32))}
        med = lambda xs: float(np.median(xs))  # noqa: E731
        for shape, cfg, ops, k in built_cases(s, sys.argv[1:]):
            outs = [ops.out] + [torch.empty_like(ops.out) for _ in range(2)]
            cublas = [lambda o=o: torch.matmul(ops.a, ops.bt, out=o) for o in outs]

            def ours():
                k.launch(s.stream)

            def with_flush(name, enqueues):
                def run():
                    timer.flush = flushes[name]
                    try:
                        return tuple(map(med, timer._series(enqueues, None, None, True)))
                    finally:
                        timer.flush = inc_flush
                return run

            def abba():
                # ours, cuBLAS, cuBLAS, ours in each round: each kernel once in an odd and once in an
                # even slot
                return tuple(map(med, timer._series((ours, cublas[0], cublas[1], ours), None, None, True)))

            conditions = {
                "self-inc": with_flush("inc", cublas[:2]),
                "self-const": with_flush("const", cublas[:2]),
                "self-random": with_flush("random", cublas[:2]),
                "self-triple": with_flush("inc", cublas),
                "ours-cublas": with_flush("inc", (ours, cublas[0])),
                "cublas-ours": with_flush("inc", (cublas[0], ours)),
                "abba (ours, cublas, cublas, ours)": abba,
            }
            row = {"shape": shape, "config": cfg, **{c: [] for c in conditions}}
            order = [c for c in conditions for _ in range(ROUNDS)]
            random.Random(shape).shuffle(order)
            for c in order:
                row[c].append(conditions[c]())
            row["order"] = order
            s.keep(row)
        s.write("slot-bias.json")


if __name__ == "__main__":
    main()
