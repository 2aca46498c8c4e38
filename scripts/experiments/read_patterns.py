"""Does the address order of a weight stream cost DRAM bandwidth on this GPU?

The q4 GEMV's blocks each walk their own contiguous rows (read_patterns.cuh, `regions`); a copy
sweeps the buffer with the whole grid (the project's kernels/stream_read.cuh, `sweep`).  This times
both orders over the 7B's gate_up-sized buffer, back to back in one CUDA graph over `COPIES`
distinct buffers (so no launch gap and no L2 reuse), by grid and block size.
Writes JSON to argv[1] (default read-patterns.json).
"""
import json
import pathlib
import sys

import cupy as cp

from autosched.templates.base import kernel_source
from cupy_timing import graph_us

SRC = kernel_source("stream_read.cuh") + pathlib.Path(__file__).with_name("read_patterns.cuh").read_text()
NBYTES = 22016 * 4096 // 2 + 22016 * 128 * 2      # gate_up's words and scales
COPIES = 16
KERNELS = {"sweep": "stream_read<{}>", "regions": "read_regions<{}>"}


def main(out_path: str = "read-patterns.json") -> None:
    mod = cp.RawModule(code=SRC, options=("-std=c++17", "-arch=sm_90"),
                       name_expressions=[k.format(u) for k in KERNELS.values() for u in (4, 8)])
    n16 = NBYTES // 16
    bufs = [cp.random.randint(0, 2**31, size=n16 * 4, dtype=cp.uint32) for _ in range(COPIES)]
    sink = cp.zeros(1, dtype=cp.uint32)
    stream = cp.cuda.Stream(non_blocking=True)
    rows = []
    variants = [("sweep", u, g, t) for u in (4, 8) for g, t in ((132 * 4, 256), (132 * 8, 256), (132 * 16, 128))]
    variants += [("regions", u, g, t) for u in (4, 8) for g, t in ((344, 256), (688, 128), (528, 256), (132, 1024), (264, 512))]
    for pattern, unroll, grid, threads in variants:
        k = mod.get_function(KERNELS[pattern].format(unroll))

        def launch(s, k=k, grid=grid, threads=threads):
            for b in bufs:
                k((grid,), (threads,), (b, cp.int64(n16), cp.uint32(0x9E3779B9), sink))
        us, rng = graph_us(stream, launch, COPIES, reps=7)
        rows.append({"pattern": pattern, "unroll": unroll, "grid": grid, "threads": threads,
                     "us_per_kernel": us, "us_range": rng, "gbps": NBYTES / us / 1e3})
        print(f"{pattern:8s} unroll {unroll} grid {grid:5d} x {threads:4d}: {us:7.2f} us  {NBYTES / us / 1e3:7.1f} GB/s "
              f"({rng[0]:.2f}-{rng[1]:.2f})", flush=True)
    json.dump({"bytes": NBYTES, "copies": COPIES, "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
               "rows": rows}, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])
