"""What the synthetic-layer experiments share (boundary_cost.py, grid_balance.py, pdl_trigger.py): the
7B q4f16_1 layer's four weight streams, their buffers, a stream kernel's spec, and a CUDA graph's time a
layer."""
import json

import numpy as np
import torch

from autosched.templates.base import ArgSpec, KernelSpec

# (name, bytes, grid, threads): the 7B's matmuls as served on 2026-11-26 (layer-marks-7b-*.json)
KERNELS = [("qkv", 12288 * 4096 // 2 + 12288 * 256, 192, 512), ("o", 4096 * 4096 // 2 + 4096 * 256, 512, 512),
           ("gate_up", 22016 * 4096 // 2 + 22016 * 256, 344, 256), ("down", 4096 * 11008 // 2 + 4096 * 688, 128, 1024)]
LAYERS = 32


def setup():
    """(DeviceInfo, buffers, words, layer bytes) on GPU 0, made current: LAYERS x 4 random
    weight-sized buffers (3.6 GB: nothing stays in the L2) and the words each kernel reads from its
    predecessor and writes for its successor."""
    from cuda.core import Device

    from autosched.device import query
    info = query(0)
    Device(0).set_current()
    bufs = [[torch.empty(b // 16 * 16, dtype=torch.uint8, device="cuda").random_() for _, b, _, _ in KERNELS]
            for _ in range(LAYERS)]
    words = torch.zeros((LAYERS * 4 + 1, 32), dtype=torch.int32, device="cuda")
    return info, bufs, words, sum(b // 16 * 16 for _, b, _, _ in KERNELS)


def stream_spec(key: str, config: tuple, source: str, expr: str, threads: int, arch: str, grid: int = 1,
                third: str = "prev") -> KernelSpec:
    """A kernel (src, n16, third, mine) over a stream: its grid given at the launch unless `grid`."""
    return KernelSpec(family="experiment", workload_key=key, config=config, source=source, name_expression=expr,
                      grid=(grid, 1, 1), block=(threads, 1, 1), smem_bytes=0,
                      args=(ArgSpec("src", "input"), ArgSpec("n16", "scalar"), ArgSpec(third, "input"),
                            ArgSpec("mine", "output")), arch=arch)


def graph_us_a_layer(chain, reps: int = 9):
    """`chain` (which enqueues LAYERS layers on the current stream) captured in a CUDA graph and
    replayed: the median and range of microseconds a layer over `reps` replays."""
    g = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        chain()
    torch.cuda.current_stream().wait_stream(side)
    with torch.cuda.graph(g, stream=side):
        chain()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1e3 / LAYERS)
    times.sort()
    return times[len(times) // 2], [times[0], times[-1]]


def write(res: dict, copy: list, layer_bytes: int, path) -> None:
    """res with the copy bandwidths measured around the runs and the layer's bytes at their median,
    printed and written to `path`."""
    bw = float(np.median(copy))
    res["copy_gbps"] = copy
    res["layer_us_at_copy_bw"] = layer_bytes / (bw * 1e3)
    print(f"the same bytes at {bw:.0f} GB/s: {res['layer_us_at_copy_bw']:.2f} us a layer")
    path.write_text(json.dumps(res, indent=1))
