"""What the rows of A outside M cost the wgmma GEMM.  The dynamic run's verification measured its 64 x 64
12-slot kernel on 4096 x 4096 at 24.9-26.7 us for M = 1..9 and 26.4 at M = 65, against 22.6-23.0 at
M = 32, 64 and 128 (2026-11-26): the fewer rows of a tile lie inside A, the slower, although the
tile grid is the same.  TMA zero-fills the box rows past M.

The first version of this script (commit 425660f, `checks/wgmma-oob-subboxes-*.json`) loaded A in
sub-boxes of 16 or 8 rows and skipped those past M: fast at M = 1..16, but four or eight TMA loads a
slot made every full tile slower.  This one times what hgemm_wgmma.cuh does since: one box a slot,
the last tile row moved up to end at M where M >= BM, and a box of M rounded up to 16 rows where
M < BM, against the kernel before it (hgemm_wgmma.cuh and hgemm_wgmma_splitk.cuh at commit OLD, read
with git show, with BM-row boxes).  Each variant checked against float64, then timed
beside cuBLAS under the seed protocol, three rounds alternating.  Writes $OUT/wgmma-oob-rows.json.

    python3 scripts/experiments/wgmma_oob_rows.py
"""
import dataclasses
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
OLD = "425660f"            # the last commit before the change

G = {"consumers": 1, "swizzle": 128}
W64 = {"bm": 64, "bn": 64, **G, "stages": 12, "group": 8}
CASES = [  # shape, template, config: the dynamic run's served kernels and per-instance winners
    *((f"{m}x4096x4096_bt", "hgemm_wgmma", W64) for m in (1, 10, 29, 64, 65, 70, 128)),
    ("10x4096x11008_bt", "hgemm_wgmma", W64),
    ("200x4096x4096_bt", "hgemm_wgmma", {"bm": 64, "bn": 128, **G, "stages": 8, "group": 8}),
    ("600x4096x4096_bt", "hgemm_wgmma", {"bm": 128, "bn": 128, "consumers": 2, "swizzle": 128, "stages": 6,
                                         "group": 8}),
    ("112x768x768_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, **G, "stages": 8, "group": 1}),
    ("160x768x768_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, **G, "stages": 10, "group": 4}),
    ("112x3072x768_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, **G, "stages": 8, "group": 1}),
    ("192x768x3072_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, **G, "stages": 8, "group": 4}),
    ("70x4096x4096_bt", "hgemm_wgmma_splitk", {"bm": 64, "bn": 128, **G, "stages": 6, "group": 1, "split_k": 2}),
    ("12x4096x11008_bt", "hgemm_wgmma_splitk", {"bm": 64, "bn": 128, **G, "stages": 5, "group": 1, "split_k": 4}),
    ("80x768x3072_bt", "hgemm_wgmma_splitk", {"bm": 64, "bn": 64, **G, "stages": 5, "group": 1, "split_k": 4}),
]


def old_source(header: str) -> str:
    """The kernel before the change: the saved header with its include of hgemm_wgmma.cuh inlined."""
    import subprocess
    text = subprocess.run(["git", "show", f"{OLD}:autosched/kernels/{header}"], check=True, capture_output=True,
                          text=True, cwd=os.path.dirname(__file__)).stdout
    if header != "hgemm_wgmma.cuh":
        text = text.replace('#include "hgemm_wgmma.cuh"\n', old_source("hgemm_wgmma.cuh"))
    return text


def old_spec(spec, cfg, header: str):
    args = list(spec.args)
    a = dict(args[0].layout_params)
    a["box"] = (a["box"][0], cfg["bm"])
    args[0] = dataclasses.replace(args[0], layout_params=tuple(sorted(a.items())))
    return dataclasses.replace(spec, source=old_source(header), args=tuple(args))


def main() -> int:
    from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate
    from autosched.templates.hgemm_wgmma_splitk import HgemmWgmmaSplitKDynTemplate
    from gemm_bench_kit import Session
    # the dynamic-M templates: the kernels the dispatcher serves (no rule of theirs reads M)
    templates = {"hgemm_wgmma": HgemmWgmmaDynTemplate(), "hgemm_wgmma_splitk": HgemmWgmmaSplitKDynTemplate()}
    with Session() as ses:
        for shape, family, cfg in CASES:
            ops = ses.operands(shape)
            spec = templates[family].render(ops.w, cfg, ses.info)
            variants = (("old", old_spec(spec, cfg, templates[family].header)), ("new", spec))
            ses.alternate({"shape": shape, "template": family, "config": cfg}, ops, variants, 3, f"{shape} {family}")
    ses.write("wgmma-oob-rows.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
