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
import sys
from pathlib import Path

import numpy as np
import torch

from autosched.benchmarks.decode import copy_bandwidth_gbps
from autosched.build import Builder
from autosched.launch import LoadedKernel
from autosched.runtime import ptr
from autosched.templates.base import kernel_source
from layer_streams import KERNELS, LAYERS, setup, graph_us_a_layer, stream_spec, write

HERE = Path(__file__).parent


def source() -> str:
    """boundary_cost.cuh with its two local includes inlined (pdl.cuh is the project's)."""
    return ((HERE / "boundary_cost.cuh").read_text().replace('#include "pdl.cuh"\n', kernel_source("pdl.cuh"))
            .replace('#include "read_patterns.cuh"\n', (HERE / "read_patterns.cuh").read_text()))


def spec(order: int, grid: int, threads: int, arch: str):
    return stream_spec("boundary_cost", (("order", order),), source(), f"layer_stream<{order}, 4>", threads, arch,
                       grid)


def main():
    out = Path(sys.argv[1])
    from cuda.core import Stream
    info, bufs, words, layer_bytes = setup()
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
            med, rng = graph_us_a_layer(lambda: chain(mode))
            res["modes"][mode] = {"us_a_layer": med, "range": rng}
            copy.append(copy_bandwidth_gbps(torch))
            print(f"{mode:9s} {med:7.2f} us a layer ({rng[0]:.2f}-{rng[1]:.2f})", flush=True)
    write(res, copy, layer_bytes, out / "boundary-cost.json")


if __name__ == "__main__":
    main()
