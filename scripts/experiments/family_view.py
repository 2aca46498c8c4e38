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

S = {"consumers": 1, "swizzle": 128}
CASES = [("Mx768x768_bt", 112, {**S, "bm": 64, "bn": 64, "stages": 5, "group": 1}),
         ("Mx768x768_bt", 160, {**S, "bm": 64, "bn": 64, "stages": 8, "group": 4}),
         ("Mx768x3072_bt", 160, {**S, "bm": 64, "bn": 64, "stages": 8, "group": 1}),
         ("Mx4096x4096_bt", 33, {**S, "bm": 64, "bn": 64, "stages": 12, "group": 8})]
BIG_M = 2048
ROUNDS = 3


def main():
    import torch

    from autosched.build import Builder
    from autosched.dynamic.workload import DynamicWorkload
    from autosched.measure.gpu import GpuRunner
    from autosched.measure.protocol import Protocol, Timer
    from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate
    from cuda.core import Device, Stream
    runner = GpuRunner()
    builder = Builder()
    t = HgemmWgmmaDynTemplate()
    dev = Device(0)
    dev.set_current()
    timer = Timer(dev, Stream.from_handle(torch.cuda.current_stream().cuda_stream), Protocol())
    rows = []
    for shape, M, cfg in CASES:
        dw = DynamicWorkload.parse("hgemm", shape, (1, 4096))
        spec, big = t.render(dw.at(M), cfg, runner.device_info), t.render(dw.at(BIG_M), cfg, runner.device_info)
        binary = builder.build(spec)

        def us(s=spec):
            m = runner.measure(s, binary)
            return m.median_us if m.ok else None
        row = {"shape": shape, "M": M, "config": cfg, "small_family": [], "view_of_large": [], "small_again": []}
        for _ in range(ROUNDS):
            runner.forget_inputs()
            row["small_family"] += [us(), us()]
            us(big)                               # grows the family to BIG_M rows
            row["view_of_large"] += [us(), us()]
            runner.forget_inputs()
            row["small_again"] += [us(), us()]
        w = dw.at(M)
        x = torch.randn(w.M, w.K, device="cuda", dtype=torch.float16)
        wt = torch.randn(w.N, w.K, device="cuda", dtype=torch.float16)
        xb = torch.randn(BIG_M, w.K, device="cuda", dtype=torch.float16)[: w.M]
        wb = torch.randn(4 * w.N, w.K, device="cuda", dtype=torch.float16)[: w.N]
        y = torch.empty(w.M, w.N, device="cuda", dtype=torch.float16)
        row["cublas_fresh"] = [timer.summary(lambda: torch.matmul(x, wt.t(), out=y))["median_us"] for _ in range(3)]
        row["cublas_view"] = [timer.summary(lambda: torch.matmul(xb, wb.t(), out=y))["median_us"] for _ in range(3)]
        print(json.dumps(row), flush=True)
        rows.append(row)
    with open(os.path.join(os.environ.get("OUT", "."), "family-view.json"), "w") as f:
        json.dump({"device": runner.device_info.name, "rows": rows}, f, indent=1)
    runner.close()
    builder.close()


if __name__ == "__main__":
    main()
