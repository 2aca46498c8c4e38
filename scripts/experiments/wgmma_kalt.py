"""Two consumer warpgroups taking alternate k-blocks of one tile (kernels/hgemm_wgmma_cluster_kalt.cuh)
against the pair kernel's single consumer, on the short GEMMs whose pairs are served: the spec is
hgemm_wgmma_cluster's for the same config (tensor maps, grid, cluster), with the kernel, 384 threads
and the scratch's shared memory swapped in.  Each checked against float64, then timed beside cuBLAS
under the seed protocol, three rounds alternating.  Writes $OUT/wgmma-kalt.json.

    python3 scripts/experiments/wgmma_kalt.py
"""
import dataclasses
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

G1 = {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "group": 1}
CASES = [
    ("128x4096x4096_bt", {**G1, "stages": 12, "cluster_dim": "m"}),
    ("128x4096x4096_bt", {**G1, "stages": 10, "cluster_dim": "m"}),
    ("128x11008x4096_bt", {**G1, "stages": 12, "cluster_dim": "m"}),
    ("128x4096x11008_bt", {**G1, "stages": 12, "cluster_dim": "m"}),
    ("64x4096x4096_bt", {**G1, "stages": 12, "cluster_dim": "n"}),
    ("4096x4096x4096_bt", {**G1, "bn": 128, "stages": 7, "group": 8, "cluster_dim": "m"}),
]


def kalt(spec, cfg, workload):
    from autosched.templates.base import kernel_source
    from autosched.templates.hgemm_wgmma import smem_bytes
    bm, bn, sw, st = cfg["bm"], cfg["bn"], cfg["swizzle"], cfg["stages"]
    scratch = -(-(smem_bytes(bm, bn, sw, st) - 1024) // 128) * 128
    expr = (f"hgemm_wgmma_cluster_kalt<{workload.bf16}, {workload.a_col}, {1 - workload.b_col}, {bm}, {bn}, {sw}, "
            f"{st}, {cfg['group']}, {'mn'.index(cfg['cluster_dim'])}>")
    return dataclasses.replace(spec, source=kernel_source("hgemm_wgmma_cluster_kalt.cuh"), name_expression=expr,
                               block=(384, 1, 1), smem_bytes=scratch + bm * bn * 4 + 1024)


def main() -> int:
    from autosched.templates.hgemm_wgmma_cluster import HgemmWgmmaClusterTemplate
    from gemm_bench_kit import Session
    t = HgemmWgmmaClusterTemplate()
    with Session() as ses:
        for shape, cfg in CASES:
            ops = ses.operands(shape)
            spec = t.render(ops.w, cfg, ses.info)
            variants = (("pair", spec), ("kalt", kalt(spec, cfg, ops.w)))
            row = {"shape": shape, "config": cfg}
            for _ in range(3):
                row.setdefault("cublas_us", []).append(ses.cublas_us(ops))
                for name, sp in variants:
                    row.setdefault(name, []).append(ses.time(sp, ops, f"{shape} {name}"))
            ses.keep(row)
    ses.write("wgmma-kalt.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
