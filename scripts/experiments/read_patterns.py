"""Does the address order of a weight stream cost DRAM bandwidth on this GPU?

The q4 GEMV's blocks each walk their own contiguous rows; a copy sweeps the buffer with the whole
grid.  This times both orders over the 7B's gate_up-sized buffer (45 MB), back to back in one CUDA
graph over `copies` distinct buffers (so no launch gap and no L2 reuse), by grid and block size.
Writes JSON to argv[1] (default read-patterns.json).
"""
import json
import pathlib
import sys

import cupy as cp

SRC = (pathlib.Path(__file__).with_name("read_patterns.cuh")).read_text()
NBYTES = 22016 * 4096 // 2 + 22016 * 128 * 2      # gate_up's words and scales
COPIES = 16


def main(out_path: str = "read-patterns.json") -> None:
    mod = cp.RawModule(code=SRC, options=("-std=c++17", "-arch=sm_90"),
                       name_expressions=[f"read_{p}<{u}>" for p in ("sweep", "regions") for u in (4, 8)])
    n16 = NBYTES // 16
    bufs = [cp.random.randint(0, 2**31, size=n16 * 4, dtype=cp.uint32) for _ in range(COPIES)]
    sink = cp.zeros(1, dtype=cp.uint32)
    stream = cp.cuda.Stream(non_blocking=True)
    rows = []
    variants = [("sweep", u, g, t) for u in (4, 8) for g, t in ((132 * 4, 256), (132 * 8, 256), (132 * 16, 128))]
    variants += [("regions", u, g, t) for u in (4, 8) for g, t in ((344, 256), (688, 128), (528, 256), (132, 1024), (264, 512))]
    for pattern, unroll, grid, threads in variants:
        k = mod.get_function(f"read_{pattern}<{unroll}>")
        with stream:
            stream.begin_capture()
            for b in bufs:
                k((grid,), (threads,), (b, cp.int64(n16), cp.uint32(0x9E3779B9), sink))
            graph = stream.end_capture()
            graph.launch(stream)
            stream.synchronize()
            times = []
            for _ in range(7):
                e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                e0.record(stream)
                graph.launch(stream)
                e1.record(stream)
                e1.synchronize()
                times.append(cp.cuda.get_elapsed_time(e0, e1) * 1e3 / COPIES)
        times.sort()
        us = times[len(times) // 2]
        rows.append({"pattern": pattern, "unroll": unroll, "grid": grid, "threads": threads,
                     "us_per_kernel": us, "us_range": [times[0], times[-1]], "gbps": NBYTES / us / 1e3})
        print(f"{pattern:8s} unroll {unroll} grid {grid:5d} x {threads:4d}: {us:7.2f} us  {NBYTES / us / 1e3:7.1f} GB/s "
              f"({times[0]:.2f}-{times[-1]:.2f})", flush=True)
    json.dump({"bytes": NBYTES, "copies": COPIES, "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
               "rows": rows}, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])
