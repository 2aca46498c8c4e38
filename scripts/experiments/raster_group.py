"""Does the raster group matter where M has two tile rows?  The static hgemm_wgmma space allowed only
group 1 there (its rule kept a group past M's tile rows only where the value before it was under
them, and 2 is no value), while the DietCode micro-kernels ran group 8: 64x64 s12 at M = 128 of
4096 x 4096 measured 22.5 us in a DietCode verification, 25.3 us at group 1 in the hgemm bench.
Each config timed through the GpuRunner, three rounds alternating with cuBLAS; to $OUT/raster-group.json."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

S12 = {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 12}
CASES = [("128x4096x4096_bt", "hgemm_wgmma", False, {**S12, "group": 1}),
         ("128x4096x4096_bt", "hgemm_wgmma", False, {**S12, "group": 4}),
         ("128x4096x4096_bt", "hgemm_wgmma", True, {**S12, "group": 8}),
         ("128x4096x4096_bt", "hgemm_wgmma", False, {**S12, "stages": 10, "group": 4}),
         ("128x4096x4096_bt", "hgemm_wgmma", False, {**S12, "stages": 8, "group": 4}),
         ("128x4096x4096_bt", "hgemm_wgmma_cluster", False, {**S12, "group": 1, "cluster_dim": "m"}),
         ("128x4096x4096_bt", "hgemm_wgmma_cluster", False, {**S12, "group": 4, "cluster_dim": "n"}),
         ("128x4096x4096_bt", "hgemm_wgmma_splitk", False, {**S12, "group": 4, "split_k": 2}),
         ("128x4096x11008_bt", "hgemm_wgmma", False, {**S12, "group": 1}),
         ("128x4096x11008_bt", "hgemm_wgmma", False, {**S12, "group": 4}),
         ("128x4096x11008_bt", "hgemm_wgmma_splitk", False, {**S12, "group": 4, "split_k": 2}),
         ("128x4096x11008_bt", "hgemm_wgmma_splitk", False,
          {"bm": 128, "bn": 64, "consumers": 2, "swizzle": 128, "stages": 8, "group": 1, "split_k": 2}),
         ("128x11008x4096_bt", "hgemm_wgmma", False, {**S12, "group": 1}),
         ("128x11008x4096_bt", "hgemm_wgmma", False, {**S12, "group": 4}),
         ("128x11008x4096_bt", "hgemm_wgmma", False,
          {"bm": 128, "bn": 128, "consumers": 2, "swizzle": 128, "stages": 6, "group": 1})]


def main():
    from autosched.dynamic.workload import DynamicWorkload
    from autosched.registry import family
    from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate
    from autosched.workloads import Hgemm
    from gemm_bench_kit import RunnerKit
    temps = {t.family: t for t in family("hgemm").templates}
    rows, last = [], None
    with RunnerKit() as kit:
        for shape, fam, dynamic, cfg in CASES:
            w = Hgemm.from_shape(shape)
            if dynamic:
                dw = DynamicWorkload.parse("hgemm", "M" + shape[shape.index("x"):], (1, 4096)).at(w.M)
                spec = HgemmWgmmaDynTemplate().render(dw, cfg, kit.info)
            else:
                spec = temps[fam].render(w, cfg, kit.info)
            binary = kit.builder.build(spec)
            if shape != last:
                ops, last = kit.operands(w.M, w.N, w.K), shape
            row = {"shape": shape, "family": fam, "dynamic": dynamic, "config": cfg, "us": [], "cublas": []}
            for _ in range(3):
                row["us"].append(kit.measure_us(spec, binary))
                row["cublas"].append(kit.cublas_us(*ops))
            ok = [u for u in row["us"] if u is not None]
            row["pct_of_cublas"] = 100 * min(row["cublas"]) / min(ok) if ok else None
            print(json.dumps(row), flush=True)
            rows.append(row)
        kit.write("raster-group.json", {"rows": rows})


if __name__ == "__main__":
    main()
