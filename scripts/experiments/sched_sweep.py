"""Does hgemm_wgmma_sched beat hgemm_wgmma where issue 15's bars are tight?  At 4096^3 the whole
hgemm_wgmma space held nothing faster than 186 us against cuBLAS 177-182 (H100, 2026-11-27): its two
consumers reach their epilogues together, and its 128 x 256 tile's 64 KB staging leaves 3 ring slots.
For each shape, hgemm_wgmma_sched's configs of 128B swizzle on the tiles that fill the tensor cores
(cooperative with the box ring; ping-pong with either staging; the two deepest rings; raster groups 4
to 16) are built, checked against float64 and timed once in this process on the operands cuBLAS
gets; then the best four, hgemm_wgmma's best recorded configs and cuBLAS in three alternating rounds.
Rows to $OUT/sched-sweep.json.

    python3 scripts/experiments/sched_sweep.py [SHAPE...]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SHAPES = ["4096x4096x4096", "4096x4096x4096_bt", "8192x8192x8192", "512x11008x4096_bt", "2048x4096x4096_bt"]
TILES = [("cooperative", 128, 256), ("cooperative", 128, 192), ("cooperative", 256, 128), ("cooperative", 128, 128),
         ("cooperative", 128, 168), ("pingpong", 128, 128), ("pingpong", 64, 256), ("pingpong", 64, 168)]
# hgemm_wgmma's best recorded configs on these shapes (bench/results/hgemm-*-2026-11-27*.json)
WGMMA = [{"bm": 128, "bn": 256, "consumers": 2, "swizzle": 128, "stages": 3, "group": 16},
         {"bm": 128, "bn": 192, "consumers": 2, "swizzle": 128, "stages": 4, "group": 8},
         {"bm": 128, "bn": 128, "consumers": 2, "swizzle": 128, "stages": 6, "group": 8}]
ROUNDS = 3


def candidates(space):
    out = []
    for key in TILES:
        for boxes in (2, 0):
            mine = [c for c in space if (c["schedule"], c["bm"], c["bn"]) == key and c["swizzle"] == 128
                    and c["group"] >= 4 and c["epi_boxes"] == boxes]
            deep = sorted({c["stages"] for c in mine})[-2:]
            out += [c for c in mine if c["stages"] in deep]
    return out


def main():
    from autosched.templates import HgemmWgmmaSchedTemplate
    from gemm_bench_kit import Session
    sched = HgemmWgmmaSchedTemplate()
    with Session() as s:
        for shape in sys.argv[1:] or SHAPES:
            ops = s.operands(shape)
            w = ops.w
            s.screen_then_alternate(ops, sched, candidates(sched.space(w, s.info)), "sched",
                                    s.wgmma_baselines(w, WGMMA), ROUNDS)
        s.write("sched-sweep.json")


if __name__ == "__main__":
    main()
