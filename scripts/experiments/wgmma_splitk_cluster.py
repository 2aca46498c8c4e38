"""Split-K summed through distributed shared memory (hgemm_wgmma_splitk_cluster) against split-K
summed through L2 (hgemm_wgmma_splitk), the lone CTA (hgemm_wgmma), the pairs (hgemm_wgmma_cluster)
and cuBLAS on the short GEMMs where the few output tiles leave SMs idle: issue 15's lowest prefill
shape and issue 16's small-M instances.  For each shape, every (tile, consumers, split) of the new
template at its deepest ring that fits, 128B swizzle, raster group 1; each checked against float64,
then timed under the seed protocol, two rounds.  Writes $OUT/wgmma-splitk-cluster.json.

    python3 scripts/experiments/wgmma_splitk_cluster.py [SHAPE ...]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

G1 = {"consumers": 1, "swizzle": 128, "group": 1}
SHAPES = ["128x4096x4096_bt", "64x4096x4096_bt", "70x4096x4096_bt", "16x4096x11008_bt", "128x4096x11008_bt",
          "192x768x3072_bt", "112x768x3072_bt", "160x768x768_bt", "80x3072x768_bt"]
BASELINES = [  # template, config: the served and per-instance winners of 2026-11-26's runs
    ("hgemm_wgmma", {"bm": 64, "bn": 64, **G1, "stages": 12}),
    ("hgemm_wgmma_splitk", {"bm": 64, "bn": 64, **G1, "stages": 12, "split_k": 2}),
    ("hgemm_wgmma_splitk", {"bm": 64, "bn": 64, **G1, "stages": 12, "split_k": 4}),
    ("hgemm_wgmma_splitk", {"bm": 128, "bn": 64, **G1, "stages": 8, "split_k": 2}),
    ("hgemm_wgmma_cluster", {"bm": 64, "bn": 64, **G1, "stages": 12, "cluster_dim": "m"}),
]
TILES = [(64, 64, 1), (128, 64, 1), (128, 64, 2), (64, 128, 1), (128, 128, 2)]


def candidates(t, w, info):
    """The new template's configs: each tile and split at the deepest ring its space allows."""
    space = t.space(w, info)
    out = []
    for bm, bn, cons in TILES:
        for split in (2, 3, 4):
            ok = [c for c in space if (c["bm"], c["bn"], c["consumers"], c["split_k"]) == (bm, bn, cons, split)
                  and c["swizzle"] == 128 and c["group"] == 1]
            if ok:
                out.append(max(ok, key=lambda c: c["stages"]))
    return out


def main(shapes) -> int:
    from autosched.registry import template_named
    from autosched.templates.hgemm_wgmma_splitk_cluster import HgemmWgmmaSplitKClusterTemplate
    from gemm_bench_kit import Session
    new = HgemmWgmmaSplitKClusterTemplate()
    with Session() as ses:
        for shape in shapes:
            ops = ses.operands(shape)
            runs = []
            for family, cfg in BASELINES:
                t = template_named(family)
                try:
                    runs.append((family, cfg, t.render(ops.w, cfg, ses.info)))
                except Exception as e:          # not in that template's space for this shape
                    print(f"skip {shape} {family} {cfg}: {e}", flush=True)
            runs += [(new.family, c, new.render(ops.w, c, ses.info)) for c in candidates(new, ops.w, ses.info)]
            row = {"shape": shape, "cublas_us": [], "runs": [{"template": f, "config": c, "times": []}
                                                             for f, c, _ in runs]}
            for _ in range(2):
                row["cublas_us"].append(ses.cublas_us(ops))
                for r, (f, c, spec) in zip(row["runs"], runs):
                    r["times"].append(ses.time(spec, ops, f"{shape} {f} {c}"))
            ses.keep(row)
    ses.write("wgmma-splitk-cluster.json")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or SHAPES))
