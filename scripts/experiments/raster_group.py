"""Does the raster group matter where M has two tile rows?  The static hgemm_wgmma space allowed only
group 1 there (its rule kept a group past M's tile rows only where the value before it was under
them, and 2 is no value), while the DietCode micro-kernels ran group 8: 64x64 s12 at M = 128 of
4096 x 4096 measured 22.5 us in a DietCode verification, 25.3 us at group 1 in the hgemm bench.
Each config timed through the GpuRunner, three rounds alternating with cuBLAS; to $OUT/raster-group.json."""
import json
import os

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
    import torch

    from autosched.build import Builder
    from autosched.dynamic.workload import DynamicWorkload
    from autosched.measure.gpu import GpuRunner
    from autosched.measure.protocol import Protocol, Timer
    from autosched.registry import family
    from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate
    from autosched.workloads import Hgemm
    from cuda.core import Device, Stream
    runner = GpuRunner()
    builder = Builder()
    temps = {t.family: t for t in family("hgemm").templates}
    dev = Device(0)
    dev.set_current()
    timer = Timer(dev, Stream.from_handle(torch.cuda.current_stream().cuda_stream), Protocol())
    rows, last = [], None
    for shape, fam, dynamic, cfg in CASES:
        w = Hgemm.from_shape(shape)
        if dynamic:
            dw = DynamicWorkload.parse("hgemm", "M" + shape[shape.index("x"):], (1, 4096)).at(w.M)
            spec = HgemmWgmmaDynTemplate().render(dw, cfg, runner.device_info)
        else:
            spec = temps[fam].render(w, cfg, runner.device_info)
        binary = builder.build(spec)
        if shape != last:
            x = torch.randn(w.M, w.K, device="cuda", dtype=torch.float16)
            wt = torch.randn(w.N, w.K, device="cuda", dtype=torch.float16)
            y = torch.empty(w.M, w.N, device="cuda", dtype=torch.float16)
            last = shape
        row = {"shape": shape, "family": fam, "dynamic": dynamic, "config": cfg, "us": [], "cublas": []}
        for _ in range(3):
            m = runner.measure(spec, binary)
            row["us"].append(m.median_us if m.ok else (m.error or str(m.status))[:200])
            row["cublas"].append(timer.summary(lambda: torch.matmul(x, wt.t(), out=y))["median_us"])
        ok = [u for u in row["us"] if isinstance(u, float)]
        row["pct_of_cublas"] = 100 * min(row["cublas"]) / min(ok) if ok else None
        print(json.dumps(row), flush=True)
        rows.append(row)
    with open(os.path.join(os.environ.get("OUT", "."), "raster-group.json"), "w") as f:
        json.dump({"device": runner.device_info.name, "rows": rows}, f, indent=1)
    runner.close()
    builder.close()


if __name__ == "__main__":
    main()
