"""Does a tiny GEMM time differently when its inputs are views into a large row family?

The quick DietCode run of 2026-11-27 (checks/dynamic-quick-probes-kept-*.json) had 768 x 768's 64 x 64
5-slot kernel at 7.97-8.3 us in its probes and verification, whose inputs are views into the run's row
family (A and B^T drawn for the largest shapes), and at 8.45-8.69 us later as dispatched, after
`forget_inputs` had the worker draw a family for that M alone.  Here each kernel is timed through the
GpuRunner in rounds: on a family drawn for M alone, then after a measurement at a large M has grown
the family (M's inputs now a view into it), then on a fresh small family again; cuBLAS beside it on a
fresh tensor and on a view into a large one.  Rows to $OUT/family-view.json.

    python3 scripts/experiments/family_view.py"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

S = {"consumers": 1, "swizzle": 128}
CASES = [("Mx768x768_bt", 112, {**S, "bm": 64, "bn": 64, "stages": 5, "group": 1}),
         ("Mx768x768_bt", 160, {**S, "bm": 64, "bn": 64, "stages": 8, "group": 4}),
         ("Mx768x3072_bt", 160, {**S, "bm": 64, "bn": 64, "stages": 8, "group": 1}),
         ("Mx4096x4096_bt", 33, {**S, "bm": 64, "bn": 64, "stages": 12, "group": 8})]
BIG_M = 2048
ROUNDS = 3


def main():
    from autosched.dynamic.workload import DynamicWorkload
    from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate
    from gemm_bench_kit import RunnerKit
    t = HgemmWgmmaDynTemplate()
    rows = []
    with RunnerKit() as kit:
        for shape, M, cfg in CASES:
            dw = DynamicWorkload.parse("hgemm", shape, (1, 4096))
            spec, big = t.render(dw.at(M), cfg, kit.info), t.render(dw.at(BIG_M), cfg, kit.info)
            binary = kit.builder.build(spec)        # one kernel: M is an argument
            row = {"shape": shape, "M": M, "config": cfg, "small_family": [], "view_of_large": [], "small_again": []}
            for _ in range(ROUNDS):
                kit.runner.forget_inputs()
                row["small_family"] += [kit.measure_us(spec, binary) for _ in range(2)]
                kit.measure_us(big, binary)         # grows the family to BIG_M rows
                row["view_of_large"] += [kit.measure_us(spec, binary) for _ in range(2)]
                kit.runner.forget_inputs()
                row["small_again"] += [kit.measure_us(spec, binary) for _ in range(2)]
            w = dw.at(M)
            fresh, view = kit.operands(w.M, w.N, w.K), kit.operands(w.M, w.N, w.K, rows_of=(BIG_M, 4 * w.N))
            row["cublas_fresh"] = [kit.cublas_us(*fresh) for _ in range(3)]
            row["cublas_view"] = [kit.cublas_us(*view) for _ in range(3)]
            print(json.dumps(row), flush=True)
            rows.append(row)
        kit.write("family-view.json", {"rows": rows})


if __name__ == "__main__":
    main()
