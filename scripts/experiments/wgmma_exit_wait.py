"""What the wgmma GEMMs' last wait costs: every consumer (splitk: the storing thread) ends the kernel
with cp.async.bulk.wait_group 0, which returns only once its TMA stores have been written to global
memory; the shared staging only has to outlive the stores' reads of it (wait_group.read 0), and the
grid's completion already orders the writes before anything stream-ordered after the kernel.  On a
short GEMM that write round trip sits at the end of every CTA's critical path.  Each case's config
is rendered as shipped and with the exit wait made .read (the rendered source only), checked against
float64, then timed beside cuBLAS under the seed protocol, three rounds alternating.
Writes $OUT/wgmma-exit-wait.json.

    python3 scripts/experiments/wgmma_exit_wait.py
"""
import dataclasses
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

EXIT = "bulk_wait_all();"
READ = "bulk_wait_read_all();"
G1 = {"consumers": 1, "swizzle": 128, "group": 1}
CASES = [  # shape, template, config: the served or per-instance winners of 2026-11-26's runs
    ("128x4096x4096_bt", "hgemm_wgmma_cluster", {"bm": 64, "bn": 64, **G1, "stages": 12, "cluster_dim": "m"}),
    ("128x4096x4096_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, **G1, "stages": 12}),
    ("64x4096x4096_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, **G1, "stages": 12}),
    ("70x4096x4096_bt", "hgemm_wgmma_splitk", {"bm": 64, "bn": 128, **G1, "stages": 6, "split_k": 2}),
    ("160x768x768_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 10, "group": 4}),
    ("80x3072x768_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, **G1, "stages": 8}),
    ("192x768x3072_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 8, "group": 4}),
    ("112x768x3072_bt", "hgemm_wgmma_splitk", {"bm": 64, "bn": 128, **G1, "stages": 8, "split_k": 4}),
    ("32x12288x4096_bt", "hgemm_wgmma_cluster", {"bm": 64, "bn": 128, **G1, "stages": 8, "cluster_dim": "n"}),
    ("2048x4096x4096_bt", "hgemm_wgmma", {"bm": 128, "bn": 256, "consumers": 2, "swizzle": 128, "stages": 3, "group": 8}),
]


def main() -> int:
    from autosched.registry import template_named
    from gemm_bench_kit import Session
    with Session() as ses:
        for shape, family, cfg in CASES:
            ops = ses.operands(shape)
            spec = template_named(family).render(ops.w, cfg, ses.info)
            assert spec.source.count(EXIT) >= 1, family
            variants = (("shipped", spec), ("read", dataclasses.replace(spec, source=spec.source.replace(EXIT, READ))))
            ses.alternate({"shape": shape, "template": family, "config": cfg}, ops, variants, 3, f"{shape} {family}")
    ses.write("wgmma-exit-wait.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
