"""Does summing hgemm_wgmma_swap's K slices in one cluster's shared memory (reduce = cluster: rank 0 adds
the others' accumulators over DSMEM) beat summing them through the global workspace (the last slice to
finish adds), where cuBLAS still leads: BERT's 768 x 3072 at M = 80-192 (0.91-0.99 of cuBLAS in the
full DietCode run of 2026-11-27, dynamic-*-2026-11-27-3.json), and on a few other few-row shapes?

Per shape: every split config of 128B swizzle (each BW, BT, split_k > 1 and reduce, the ring that holds
all of a slice's K or the deepest), built, checked against float64 and timed once; then, each against
cuBLAS on the same buffers in paired rounds (benchmarks.hgemm.paired_ratio: a, b, b, a rounds): the
best unsplit config, the best of each reduce, and the best workspace config's tile with the other
reduce.  Rows to $OUT/cluster-reduce-sweep.json.

    python3 scripts/experiments/cluster_reduce_sweep.py [SHAPE...]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SHAPES = ["80x768x3072_bt", "112x768x3072_bt", "160x768x3072_bt", "192x768x3072_bt", "112x768x768_bt",
          "192x768x768_bt", "192x3072x768_bt", "33x4096x4096_bt", "70x4096x4096_bt", "33x4096x11008_bt"]


def main():
    from autosched.templates.hgemm_wgmma_swap import REDUCE_VALUES, HgemmWgmmaSwapDynTemplate
    from gemm_bench_kit import Session
    from swap_sweep import candidates
    # the dynamic template's space: every split and tile, as DietCode draws them (the static one cuts
    # token tiles wider than M and splits that make two waves)
    swap = HgemmWgmmaSwapDynTemplate()
    with Session() as s:
        for shape in sys.argv[1:] or SHAPES:
            ops = s.operands(shape)
            w = ops.w
            configs = [c for c in candidates(swap.space(w, s.info), w.K, REDUCE_VALUES, below=False)
                       if c["bt"] - 8 < w.M]
            screen, ok = s.screen(ops, swap, configs, shape)
            best = {}
            for r in ok:
                kind = "unsplit" if r["config"]["split_k"] == 1 else r["config"]["reduce"]
                best.setdefault(kind, r["config"])
            if "workspace" in best:
                other = {**best["workspace"], "reduce": "cluster"}
                if swap.space(w, s.info).contains(other):
                    best["workspace's tile, cluster"] = other
            s.keep({"shape": shape, "screened": len(screen), "failed": [r for r in screen if "us" not in r][:4],
                    "screen_best": ok[:10], "paired": s.paired_with_cublas(ops, swap, best, shape)})
        s.write("cluster-reduce-sweep.json")

if __name__ == "__main__":
    main()
