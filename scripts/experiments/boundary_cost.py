"""Device experiment: the kernel boundaries of a 7B q4f16_1 decode step, without the matmuls' math.

Every layer is four streaming kernels over buffers of the four matmuls' weight bytes (qkv, o,
gate_up, down: 28.3, 9.4, 50.7 and 25.4 MB) with the served configs' grids, each needing its
predecessor's few output words; 32 layers back to back in one CUDA graph (3.6 GB, so nothing stays
in the L2).  Timed as
  plain     stream order, no programmatic launch
  pdl wait  programmatic launch, each kernel waits before it streams (today's kernels)
  pdl late  programmatic launch, each kernel streams and waits at its end (the bound of a kernel
            that takes its input as its predecessor writes it)
  one       one kernel a layer over all four buffers' bytes (no boundaries inside a layer)
beside the same bytes at the copy bandwidth.

    python scripts/experiments/boundary_cost.py OUT_DIR
"""
import json
import sys
from pathlib import Path

import numpy as np
import torch

from autosched.benchmarks.decode import copy_bandwidth_gbps
from autosched.build import Builder
from autosched.device import query
from autosched.launch import LoadedKernel
from autosched.runtime import ptr
from autosched.templates.base import ArgSpec, KernelSpec, kernel_source

HERE = Path(__file__).parent
# (name, bytes, grid, threads): the 7B's matmuls as served on 2026-11-26 (layer-marks-7b-*.json)
KERNELS = [("qkv", 12288 * 4096 // 2 + 12288 * 256, 192, 512), ("o", 4096 * 4096 // 2 + 4096 * 256, 512, 512),
           ("gate_up", 22016 * 4096 // 2 + 22016 * 256, 344, 256), ("down", 4096 * 11008 // 2 + 4096 * 688, 128, 1024)]
LAYERS = 32


def source() -> str:
    """boundary_cost.cuh with its two local includes inlined (pdl.cuh is the project's)."""
    return ((HERE / "boundary_cost.cuh").read_text().replace('#include "pdl.cuh"\n', kernel_source("pdl.cuh"))
            .replace('#include "read_patterns.cuh"\n', (HERE / "read_patterns.cuh").read_text()))


def spec(order: int, grid: int, threads: int, arch: str) -> KernelSpec:
    return KernelSpec(family="experiment", workload_key="boundary_cost", config=(("order", order),),
                      source=source(), name_expression=f"layer_stream<{order}, 4>", grid=(grid, 1, 1),
                      block=(threads, 1, 1), smem_bytes=0,
                      args=(ArgSpec("src", "input"), ArgSpec("n16", "scalar"), ArgSpec("prev", "input"),
                            ArgSpec("mine", "output")), arch=arch)


def main():
    out = Path(sys.argv[1])
    info = query(0)
    from cuda.core import Device, Stream
    Device(0).set_current()
    bufs = [[torch.empty(b // 16 * 16, dtype=torch.uint8, device="cuda").random_() for _, b, _, _ in KERNELS]
            for _ in range(LAYERS)]
    words = torch.zeros((LAYERS * 4 + 1, 32), dtype=torch.int32, device="cuda")
    layer_bytes = sum(b // 16 * 16 for _, b, _, _ in KERNELS)
    one_buf = [torch.empty(layer_bytes, dtype=torch.uint8, device="cuda").random_() for _ in range(LAYERS)]
    res = {"kernels": KERNELS, "layers": LAYERS, "layer_bytes": layer_bytes, "modes": {}}
    with Builder() as b:
        ks = {(o, g, t, pdl): LoadedKernel(spec(o, g, t, info.arch), b, pdl=pdl)
              for o in (0, 1) for _, _, g, t in KERNELS for pdl in (False, True)}
        k_one = {pdl: LoadedKernel(spec(0, 528, 256, info.arch), b, pdl=pdl) for pdl in (False, True)}

        def chain(mode):
            s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
            n = 0
            for layer in range(LAYERS):
                if mode == "one":
                    k_one[True](s, ptr(one_buf[layer]), np.int64(layer_bytes // 16), ptr(words[n]), ptr(words[n + 1]))
                    n += 1
                    continue
                for (name, _, g, t), buf in zip(KERNELS, bufs[layer]):
                    k = ks[(1 if mode == "pdl late" else 0, g, t, mode != "plain")]
                    k(s, ptr(buf), np.int64(buf.numel() // 16), ptr(words[n]), ptr(words[n + 1]))
                    n += 1

        copy = [copy_bandwidth_gbps(torch)]
        for mode in ("plain", "pdl wait", "pdl late", "one"):
            g = torch.cuda.CUDAGraph()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                chain(mode)
            torch.cuda.current_stream().wait_stream(side)
            with torch.cuda.graph(g, stream=side):
                chain(mode)
            g.replay()
            torch.cuda.synchronize()
            times = []
            for _ in range(9):
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                g.replay()
                e1.record()
                e1.synchronize()
                times.append(e0.elapsed_time(e1) * 1e3 / LAYERS)
            times.sort()
            res["modes"][mode] = {"us_a_layer": times[len(times) // 2], "range": [times[0], times[-1]]}
            copy.append(copy_bandwidth_gbps(torch))
            print(f"{mode:9s} {times[len(times) // 2]:7.2f} us a layer ({times[0]:.2f}-{times[-1]:.2f})", flush=True)
    bw = float(np.median(copy))
    res["copy_gbps"] = copy
    res["layer_us_at_copy_bw"] = layer_bytes / (bw * 1e3)
    print(f"the same bytes at {bw:.0f} GB/s: {res['layer_us_at_copy_bw']:.2f} us a layer")
    (out / "boundary-cost.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
