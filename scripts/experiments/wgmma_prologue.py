"""What the wgmma GEMM's start costs on short GEMMs: the served config of each small-M shape timed
under the seed protocol (L2 flushed) and with a warm L2, beside cuBLAS, as shipped and, while the
tensor maps were pointers into global memory (before 2026-11-26's by-value maps), with the
tensor-map acquire fence (and the tensor-map prefetch) taken out of its source.  Each variant is
checked against float64 before it is timed.  Writes $OUT/wgmma-prologue.json.

    python3 scripts/experiments/wgmma_prologue.py
"""
import dataclasses
import json
import os
import sys

import numpy as np

FENCE = 'asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;\\n" ::"l"(map) : "memory");'
PREFETCH = 'asm volatile("prefetch.tensormap [%0];\\n" ::"l"(map) : "memory");'
CASES = [  # shape, template family, config (the dynamic bench's per-instance winners, 2026-11-26)
    ("128x4096x4096_bt", "hgemm_wgmma", {"bm": 128, "bn": 64, "consumers": 2, "swizzle": 128, "stages": 8, "group": 1}),
    ("64x4096x4096_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 8, "group": 1}),
    ("112x768x768_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 8, "group": 1}),
    ("160x3072x768_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 8, "group": 4}),
    ("160x768x3072_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 6, "group": 4}),
    ("64x64x64_bt", "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 2, "group": 1}),
    # split-K: more CTAs for the shapes with few output tiles
    ("64x4096x4096_bt", "hgemm_wgmma_splitk",
     {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 8, "group": 1, "split_k": 2}),
    ("128x4096x4096_bt", "hgemm_wgmma_splitk",
     {"bm": 128, "bn": 64, "consumers": 2, "swizzle": 128, "stages": 7, "group": 1, "split_k": 2}),
    ("160x768x3072_bt", "hgemm_wgmma_splitk",
     {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 4, "group": 1, "split_k": 4}),
]


def main() -> int:
    import torch
    from cuda.core import Device, Stream

    from autosched.benchmarks.common import Launchable, checked_launch
    from autosched.build import Builder
    from autosched.device import query
    from autosched.measure.protocol import Timer
    from autosched.runtime import allow_dynamic_smem
    from autosched.templates import HgemmWgmmaSplitKTemplate, HgemmWgmmaTemplate
    from autosched.workloads import Hgemm
    info = query(0)
    dev = Device(0)
    dev.set_current()
    torch.cuda.init()
    stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    timer = Timer(dev, stream)
    templates = {"hgemm_wgmma": HgemmWgmmaTemplate(), "hgemm_wgmma_splitk": HgemmWgmmaSplitKTemplate()}
    rows = []
    with Builder() as builder:
        for shape, family, cfg in CASES:
            w = Hgemm.from_shape(shape)
            inputs = w.inputs(1)
            ref, bound = w.reference(inputs), w.error_bound(inputs)
            a = torch.from_numpy(np.ascontiguousarray(inputs["A"])).cuda()
            b = torch.from_numpy(np.ascontiguousarray(inputs["B"])).cuda()
            bt = b.t() if w.b_col else b
            t = templates[family]
            row = {"shape": shape, "template": family, "config": cfg}
            for flush in (True, False):
                s = timer.summary(lambda: torch.matmul(a, bt), flush=flush)
                row[f"cublas_{'flush' if flush else 'warm'}_us"] = s["median_us"] if "median_us" in s else float(np.median(s["times_us"]))
            out = torch.empty((w.M, w.N), dtype=torch.float16, device="cuda")
            spec = t.render(w, cfg, info)
            variants = {"shipped": spec}
            if FENCE in spec.source:      # maps in global memory: the fence's and the prefetch's cost
                variants["no_fence"] = dataclasses.replace(spec, source=spec.source.replace(FENCE, ""))
                variants["no_fence_no_prefetch"] = dataclasses.replace(
                    spec, source=spec.source.replace(FENCE, "").replace(PREFETCH, ""))
            for name, sp in variants.items():
                binary = builder.build(sp)
                if not binary.ok:
                    row[name] = {"error": binary.error[-400:]}
                    continue
                k = Launchable(sp, binary, inputs, out, on_device={"A": a, "B": b})
                allow_dynamic_smem(k.kernel, sp.smem_bytes, dev.device_id)
                checked_launch(lambda s_: k.launch(s_), w, out, ref, stream, f"{shape} {name}", bound)
                r = {"registers": binary.resources.registers}
                for flush in (True, False):
                    times = timer.time(lambda: k.launch(stream), flush=flush)
                    r[f"{'flush' if flush else 'warm'}_us"] = float(np.median(times))
                    r[f"{'flush' if flush else 'warm'}_p10_p90"] = [float(np.percentile(times, 10)),
                                                                     float(np.percentile(times, 90))]
                row[name] = r
            print(json.dumps(row), flush=True)
            rows.append(row)
    out_dir = os.environ.get("OUT", ".")
    with open(os.path.join(out_dir, "wgmma-prologue.json"), "w") as f:
        json.dump({"device": info.name, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
