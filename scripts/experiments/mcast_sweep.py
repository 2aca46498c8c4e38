"""Does a cluster of hgemm_wgmma_swap's weight tiles with the token slot multicast by TMA (mcast = 2 or 4:
each CTA loads a share of the X slot into every CTA of the cluster) close the gap to cuBLAS where it is
widest: BERT's 768 x 3072 at M = 112-192 (0.91 of cuBLAS in the full DietCode runs of 2026-11-27, where
cuBLAS runs nvjet_..._4x1_..._TNN, clusters of 4 along the weight rows), and on the other few-row
shapes still under cuBLAS (3072 x 768, 4096 x 4096 at M = 33-70)?

Per shape (the knob on: AUTOSCHED_SWAP_MCAST=1, set here): every config of 128B swizzle of the static
template's space (each BW, BT, split_k with the
workspace, mcast 1, 2 and 4, the ring that holds all of a slice's K or the deepest), built, checked
against float64 and timed once; then, each against cuBLAS on the same buffers in paired rounds
(benchmarks.hgemm.paired_ratio: a, b, b, a rounds): the best config of each mcast, and the best
unclustered config's tile as a cluster of 2 and of 4 where the space holds it.  Rows to
$OUT/mcast-sweep.json.

    python3 scripts/experiments/mcast_sweep.py [SHAPE...]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SHAPES = ["160x768x3072_bt", "192x768x3072_bt", "112x768x3072_bt", "80x768x3072_bt", "160x3072x768_bt",
          "192x3072x768_bt", "33x4096x4096_bt", "70x4096x4096_bt", "112x768x768_bt"]


def main():
    os.environ["AUTOSCHED_SWAP_MCAST"] = "1"
    from autosched.templates.hgemm_wgmma_swap import MCAST_VALUES, HgemmWgmmaSwapTemplate
    from gemm_bench_kit import Session
    from swap_sweep import candidates
    swap = HgemmWgmmaSwapTemplate()
    with Session() as s:
        for shape in sys.argv[1:] or SHAPES:
            ops = s.operands(shape)
            w = ops.w
            space = swap.space(w, s.info)
            configs = [c for c in candidates(space, w.K, ("workspace",), below=False, mcasts=MCAST_VALUES)
                       if c["bt"] - 8 < w.M and c["split_k"] <= 4]
            screen, ok = s.screen(ops, swap, configs, shape)
            best = {}
            for r in ok:
                best.setdefault(f"mcast {r['config']['mcast']}", r["config"])
            if "mcast 1" in best:
                for mc in MCAST_VALUES[1:]:
                    other = {**best["mcast 1"], "mcast": mc}
                    if space.contains(other) and other not in best.values():
                        best[f"unclustered best's tile, mcast {mc}"] = other
            s.keep({"shape": shape, "screened": len(screen), "failed": [r for r in screen if "us" not in r][:4],
                    "screen_best": ok[:12], "paired": s.paired_with_cublas(ops, swap, best, shape)})
            s.write("mcast-sweep.json")         # after every shape: a timeout keeps the finished ones

if __name__ == "__main__":
    main()
