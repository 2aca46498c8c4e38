"""The same hgemm_wgmma config as the static template (M compiled in, what `autosched tune` and the
hgemm bench measure) and as the dynamic one (M an argument, the DietCode micro-kernel), through the
GpuRunner, alternating with cuBLAS.  The hgemm bench (H100, 2026-11-26) had 64x64 s12 at 24.0-25.0 us
on 128x4096x4096_bt; the DietCode run's verification had the dynamic one at 22.5 us at M = 128."""
import json
import os

CASES = [("128x4096x4096_bt", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 12, "group": 1}),
         ("512x11008x4096_bt", {"bm": 128, "bn": 192, "consumers": 2, "swizzle": 128, "stages": 4, "group": 4})]


def main():
    import torch

    from autosched.build import Builder
    from autosched.dynamic.workload import DynamicWorkload
    from autosched.measure.gpu import GpuRunner
    from autosched.measure.protocol import Protocol, Timer
    from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate, HgemmWgmmaTemplate
    from autosched.workloads import Hgemm
    from cuda.core import Device, Stream
    runner = GpuRunner()
    builder = Builder()
    dev = Device(0)
    dev.set_current()
    timer = Timer(dev, Stream.from_handle(torch.cuda.current_stream().cuda_stream), Protocol())
    rows = []
    for shape, cfg in CASES:
        w = Hgemm.from_shape(shape)
        dw = DynamicWorkload.parse("hgemm", "M" + shape[shape.index("x"):], (1, 4096)).at(w.M)
        specs = {"static": HgemmWgmmaTemplate().render(w, cfg, runner.device_info),
                 "dynamic": HgemmWgmmaDynTemplate().render(dw, cfg, runner.device_info)}
        bins = {k: builder.build(s) for k, s in specs.items()}
        x = torch.randn(w.M, w.K, device="cuda", dtype=torch.float16)
        wt = torch.randn(w.N, w.K, device="cuda", dtype=torch.float16)
        y = torch.empty(w.M, w.N, device="cuda", dtype=torch.float16)
        row = {"shape": shape, "config": cfg, "static": [], "dynamic": [], "cublas": []}
        for _ in range(3):
            for k in ("static", "dynamic"):
                m = runner.measure(specs[k], bins[k])
                row[k].append(m.median_us if m.ok else m.error[:200])
            row["cublas"].append(timer.summary(lambda: torch.matmul(x, wt.t(), out=y))["median_us"])
        print(json.dumps(row), flush=True)
        rows.append(row)
    with open(os.path.join(os.environ.get("OUT", "."), "static-vs-dynamic.json"), "w") as f:
        json.dump({"device": runner.device_info.name, "rows": rows}, f, indent=1)
    runner.close()
    builder.close()


if __name__ == "__main__":
    main()
