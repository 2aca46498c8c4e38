"""Does hgemm_wgmma_swap (weight rows on wgmma's M side, tokens on its N side) close the few-row gap to
cuBLAS that hgemm_wgmma leaves at BERT's dense layers (0.81-0.88 of cuBLAS on the same buffers, H100,
2026-11-27, checks/alloc-pairs-*.json), and does splitting K close the rest at 768 x 3072?  For each
shape, its configs of 128B swizzle (every BW, BT and split_k, the ring that holds all of a slice's K
or the deepest, and the one below it) are built, checked against float64
and timed once in this process on the operands cuBLAS gets; then the best four, hgemm_wgmma's configs
measured best there and cuBLAS in three alternating rounds.  Rows to $OUT/swap-sweep.json.

    python3 scripts/experiments/swap_sweep.py [SHAPE...]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SHAPES = ["80x768x768_bt", "112x768x768_bt", "160x768x768_bt", "192x768x768_bt", "80x768x3072_bt",
          "112x768x3072_bt", "160x768x3072_bt", "192x768x3072_bt", "160x3072x768_bt", "192x3072x768_bt",
          "33x4096x4096_bt", "128x4096x4096_bt"]
S = {"consumers": 1, "swizzle": 128, "bm": 64, "group": 1}
# hgemm_wgmma's configs the DietCode runs and placement.py measured best on these shapes
WGMMA = [{**S, "bn": 64, "stages": 5}, {**S, "bn": 64, "stages": 8}, {**S, "bn": 64, "stages": 12},
         {**S, "bn": 128, "stages": 4}, {**S, "bn": 64, "stages": 12, "group": 4}]
ROUNDS = 3


def candidates(space, K, reduces=("workspace",), below: bool = True):
    """Per (BW, BT, split_k, reduce) of 128B swizzle, the slices meeting as `reduces` says: the ring
    that holds all of a slice's K, or the deepest, and (`below`) the one below it.  Here the workspace
    only: cluster_reduce_sweep.py compares the reductions."""
    out = []
    kind = lambda c: (c["bw"], c["bt"], c["split_k"], c["reduce"])  # noqa: E731
    for key in sorted({kind(c) for c in space if c["reduce"] in reduces}):
        rings = sorted(c["stages"] for c in space if kind(c) == key and c["swizzle"] == 128)
        if not rings:
            continue
        kslots = -(-K // (64 * key[2]))
        full = next((s for s in rings if s >= kslots), rings[-1])
        keep = {full, rings[max(0, rings.index(full) - 1)]} if below else {full}
        out += [{"bw": key[0], "bt": key[1], "swizzle": 128, "stages": s, "split_k": key[2], "reduce": key[3]}
                for s in sorted(keep)]
    return out


def main():
    from autosched.templates import HgemmWgmmaSwapTemplate
    from gemm_bench_kit import Session
    swap = HgemmWgmmaSwapTemplate()
    with Session() as s:
        for shape in sys.argv[1:] or SHAPES:
            ops = s.operands(shape)
            w = ops.w
            s.screen_then_alternate(ops, swap, candidates(swap.space(w, s.info), w.K), "swap",
                                    s.wgmma_baselines(w, WGMMA), ROUNDS, default=swap.default_config(w, s.info))
        s.write("swap-sweep.json")


if __name__ == "__main__":
    main()
