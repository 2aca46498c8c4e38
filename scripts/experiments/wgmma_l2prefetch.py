"""Whether the wgmma GEMM's weight stream reaches more of the DRAM bandwidth when the producer asks
for B's k-blocks in L2 ahead of the ring: on short GEMMs (M <= 256) every CTA reads its B tile 128
bytes of each row per slot, one slot every ~0.3 us, so a DRAM page yields one 128-byte piece at a
time (the kernels reach ~1.5 TB/s).  Each variant patches the rendered source only (no measured
build id moves): after the slot's B load, every P-th k-block, the producer issues TMA prefetches
(cp.async.bulk.prefetch.tensor.L2) of the P k-blocks D ahead, so P x 128 contiguous bytes of each
row are asked for together; "all" asks for the whole K extent of the tile at its first k-block.
Timed beside cuBLAS under the seed protocol (L2 flushed), each checked against float64 first.
Writes $OUT/wgmma-l2prefetch.json.

    python3 scripts/experiments/wgmma_l2prefetch.py
"""
import dataclasses
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from wgmma_stages import deepened  # noqa: E402

LOAD = "tma_load(b, tmB, full, k0, n0);"
PATCH = """tma_load(b, tmB, full, k0, n0);
          if (PF_ALL ? kb == kb_first_ : (kb % PF_P) == 0)
            for (int j = 0; j < (PF_ALL ? kb_last_ - kb : PF_P); ++j) {
              const int kp = PF_ALL ? kb + j : kb + PF_D + j;
              if (kp < kb_last_)
                asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];\\n"
                             ::"l"(tmB), "r"(kp * BK), "r"(n0) : "memory");
            }"""
VARIANTS = {"shipped": None, "p4": (4, None, 0), "p8": (8, None, 0), "p16": (16, None, 0), "all": (1, 0, 1)}
CASES = [  # shape, family, config (stages above 8 are lifted by wgmma_stages.deepened)
    ("128x4096x4096_bt", "hgemm_wgmma", {"bm": 128, "bn": 64, "consumers": 2, "swizzle": 128, "stages": 8, "group": 1}),
    ("128x4096x4096_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 12, "group": 1}),
    ("128x4096x4096_bt", "hgemm_wgmma_splitk",
     {"bm": 128, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 8, "group": 1, "split_k": 2}),
    ("64x4096x4096_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 12, "group": 1}),
    ("64x4096x4096_bt", "hgemm_wgmma_splitk",
     {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 8, "group": 1, "split_k": 2}),
    ("256x4096x4096_bt", "hgemm_wgmma", {"bm": 128, "bn": 64, "consumers": 2, "swizzle": 128, "stages": 8, "group": 1}),
    ("128x11008x4096_bt", "hgemm_wgmma", {"bm": 128, "bn": 64, "consumers": 2, "swizzle": 128, "stages": 8, "group": 1}),
    ("128x4096x11008_bt", "hgemm_wgmma_splitk",
     {"bm": 128, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 8, "group": 1, "split_k": 2}),
]


def patched(spec, variant):
    if variant is None:
        return spec
    p, d, every = variant
    d = dict(spec.config)["stages"] if d is None else d
    assert LOAD in spec.source
    # the k-blocks of the producer's unit: all of K in hgemm_wgmma, the slice's in split-K
    splitk = "slice_range(u % SPLIT_K, kslots, kb0, nk);" in spec.source
    first, last = ("kb0", "(kb0 + nk)") if splitk else ("0", "kslots")
    head = (f"#define PF_P {p}\n#define PF_D {d}\n#define PF_ALL {every}\n#define kb_first_ {first}\n"
            f"#define kb_last_ {last}\n")
    return dataclasses.replace(spec, source=head + spec.source.replace(LOAD, PATCH))


def main() -> int:
    from autosched.templates import HgemmWgmmaSplitKTemplate, HgemmWgmmaTemplate
    from gemm_bench_kit import Session
    templates = {"hgemm_wgmma": HgemmWgmmaTemplate(), "hgemm_wgmma_splitk": HgemmWgmmaSplitKTemplate()}
    with Session() as ses:
        for shape, family, cfg in CASES:
            ops = ses.operands(shape)
            row = {"shape": shape, "template": family, "config": cfg, "cublas_us": ses.cublas_us(ops)}
            spec = templates[family].render(ops.w, {**cfg, "stages": min(cfg["stages"], 8)}, ses.info)
            spec = deepened(spec, cfg["stages"]) if cfg["stages"] > 8 else spec
            for name, variant in VARIANTS.items():
                row[name] = ses.time(patched(spec, variant), ops, f"{shape} {name}")
            ses.keep(row)
    ses.write("wgmma-l2prefetch.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
