"""What the rows of A outside M cost the wgmma GEMM: the dynamic run's verification measured its 64 x 64
12-slot kernel on 4096 x 4096 at 24.9-26.7 us for M = 1..9 and 26.4 at M = 65, against 22.6-23.0 at
M = 32, 64 and 128 (2026-11-26): the fewer rows of a tile lie inside A, the slower, although the
tile grid is the same.  TMA zero-fills the box rows past M and counts them toward the slot's bytes.
Here the served configs are timed as shipped and with A loaded in sub-boxes of SUB rows, those
wholly past M skipped and the slot's expected bytes cut to match (the rendered source and A's
tensor map only; the skipped rows keep stale shared memory, whose products land only in output
rows past M, which the TMA store clips).  Each variant checked against float64, then timed beside
cuBLAS under the seed protocol, three rounds alternating.  Writes $OUT/wgmma-oob-rows.json.

    python3 scripts/experiments/wgmma_oob_rows.py
"""
import dataclasses
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

LOAD = "          tma_load(a, tmA, full, k0, m0);\n"
EXPECT = "        mbar_expect_tx(full, STAGE_BYTES);         // whole boxes, clipped or not\n"
SIGNATURE = "                                  int tiles_m, int tiles_n, int kslots) {\n"
CALL = "producer(tmA, tmB, ring, bars, tiles_m, tiles_n, kslots);"
G = {"consumers": 1, "swizzle": 128}
CASES = [  # shape, template, config
    *((f"{m}x4096x4096_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, **G, "stages": 12, "group": 8})
      for m in (1, 8, 16, 64, 65, 70, 128)),
    ("10x4096x11008_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, **G, "stages": 12, "group": 8}),
    ("160x768x768_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, **G, "stages": 10, "group": 4}),
    ("112x3072x768_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, **G, "stages": 8, "group": 1}),
    ("70x4096x4096_bt", "hgemm_wgmma_splitk", {"bm": 64, "bn": 128, **G, "stages": 6, "group": 1, "split_k": 2}),
    ("80x768x3072_bt", "hgemm_wgmma_splitk", {"bm": 64, "bn": 64, **G, "stages": 5, "group": 1, "split_k": 4}),
]


def sub_boxes(spec, sub: int):
    """A (stored (M, K)) in boxes of `sub` rows, the ones wholly past M skipped, expect_tx to match."""
    src = spec.source
    assert src.count(LOAD) >= 1 and src.count(EXPECT) == 1 and src.count(SIGNATURE) >= 1, "the producers changed"
    # the producers take M too (their run() has it)
    src = src.replace(SIGNATURE, SIGNATURE.replace("kslots)", "kslots, int M)")).replace(CALL, CALL.replace(
        "kslots)", "kslots, M)"))
    load = (f"          for (int j = 0; j < BM / {sub}; ++j)\n"
            f"            if (m0 + {sub} * j < M) tma_load(a + j * {sub} * SWZ, tmA, full, k0, m0 + {sub} * j);\n")
    expect = (f"        mbar_expect_tx(full, BN * SWZ + min(BM, (M - m0 + {sub - 1}) / {sub} * {sub}) * SWZ);\n")
    # the producers of hgemm_wgmma and of split-K (inlined) share the two lines; split-K's expect_tx
    # line has no comment, so patch it by its own text
    src = src.replace(LOAD, load).replace(EXPECT, expect)
    src = src.replace("        mbar_expect_tx(full, STAGE_BYTES);\n", expect)
    args = list(spec.args)
    a = dict(args[0].layout_params)
    a["box"] = (a["box"][0], sub)
    args[0] = dataclasses.replace(args[0], layout_params=tuple(sorted(a.items())))
    return dataclasses.replace(spec, source=src, args=tuple(args))


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
            variants = (("shipped", spec), ("sub16", sub_boxes(spec, 16)), ("sub8", sub_boxes(spec, 8)))
            row = {"shape": shape, "template": family, "config": cfg}
            for _ in range(3):
                row.setdefault("cublas_us", []).append(ses.cublas_us(ops))
                for name, sp in variants:
                    row.setdefault(name, []).append(ses.time(sp, ops, f"{shape} {family} {name}"))
            ses.keep(row)
    ses.write("wgmma-oob-rows.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
