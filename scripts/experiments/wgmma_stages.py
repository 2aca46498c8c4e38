"""Whether a deeper TMA ring helps the wgmma GEMM on short GEMMs: hgemm_wgmma.cuh caps its ring at
8 slots (a static_assert) and the 64 x 64 tile then holds 128 KB in flight of the 227 KB a block
may have.  This times 64-wide tiles at 6 to 13 slots, with the cap lifted in the rendered source only
(so no measured build id moves), beside cuBLAS under the seed protocol (L2 flushed).  Each variant is
checked against float64 before it is timed.  Writes $OUT/wgmma-stages.json.  STAGES_CASES=later
runs the clusters instead (their switch on in the environment).

    python3 scripts/experiments/wgmma_stages.py
    STAGES_CASES=later AUTOSCHED_WGMMA_CLUSTER=1 python3 scripts/experiments/wgmma_stages.py
"""
import dataclasses
import os
import sys

CAP = 'static_assert(STAGES >= 2 && STAGES <= 8, "a ring of 2 to 8 slots");'
STAGES = (6, 8, 10, 12, 13)
LATER = [  # the clusters, deepened (AUTOSCHED_WGMMA_CLUSTER=1)
    ("128x4096x4096_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "group": 1,
                                         "cluster": 2, "cluster_dim": "m"}),
    ("128x4096x4096_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "group": 1,
                                         "cluster": 2, "cluster_dim": "n"}),
    ("64x4096x4096_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "group": 1,
                                        "cluster": 2, "cluster_dim": "n"}),
]
FIRST = [  # shape, family, config without stages
    ("128x4096x4096_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "group": 1}),
    ("128x4096x4096_bt", "hgemm_wgmma_splitk", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "group": 1,
                                                "split_k": 2}),
    ("64x4096x4096_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "group": 1}),
    ("64x4096x4096_bt", "hgemm_wgmma_splitk", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "group": 1,
                                               "split_k": 2}),
    ("256x4096x4096_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "group": 1}),
    ("128x11008x4096_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "group": 1}),
    ("128x4096x11008_bt", "hgemm_wgmma_splitk", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "group": 1,
                                                 "split_k": 2}),
    ("160x3072x768_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "group": 4}),
]
CASES = LATER if os.environ.get("STAGES_CASES") == "later" else FIRST


def deepened(spec, stages: int):
    """`spec` (rendered at 8 slots) at `stages` slots: the 8-slot cap of the .cuh before 2026-11-26
    lifted in its source only (the .cuh has allowed 16 since)."""
    from autosched.templates.hgemm_wgmma import smem_bytes
    cfg = dict(spec.config)
    old, new = f", {cfg['swizzle']}, 8, ", f", {cfg['swizzle']}, {stages}, "   # SWZ, STAGES: in every variant's order
    assert spec.name_expression.count(old) == 1, spec.name_expression
    source = spec.source.replace(CAP, CAP.replace("<= 8", "<= 16"))
    assert "STAGES <= 16" in source and stages <= 16, "no 16-slot cap to render under"
    cfg["stages"] = stages
    return dataclasses.replace(
        spec, source=source, name_expression=spec.name_expression.replace(old, new),
        config=tuple(sorted(cfg.items())), smem_bytes=smem_bytes(cfg["bm"], cfg["bn"], cfg["swizzle"], stages))


def main() -> int:
    from autosched.templates import HgemmWgmmaSplitKTemplate, HgemmWgmmaTemplate
    from gemm_bench_kit import Session
    templates = {"hgemm_wgmma": HgemmWgmmaTemplate(), "hgemm_wgmma_splitk": HgemmWgmmaSplitKTemplate()}
    with Session() as ses:
        for shape, family, base in CASES:
            ops = ses.operands(shape)
            row = {"shape": shape, "template": family, "config": base, "cublas_us": ses.cublas_us(ops)}
            spec8 = templates[family].render(ops.w, {**base, "stages": 8}, ses.info)
            for st in STAGES:
                sp = deepened(spec8, st)
                row[str(st)] = {**ses.time(sp, ops, f"{shape} {st}"), "smem": sp.smem_bytes}
            ses.keep(row)
    name = "wgmma-stages-later.json" if CASES is LATER else "wgmma-stages.json"
    ses.write(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
