"""Does a residual epilogue's one-address double atomic (one a block) lengthen a kernel's tail?

The 7B step's o matmul (512 blocks, kernels/epilogue.cuh RESIDUAL) ends with 512 atomicAdds to one
double; its successor's dependency wait returned 1.5 us after o's last block, 0.5 us after gate_up's
(no atomics; bench/results/checks/layer-marks-7b-2026-11-26.json).  This times chains of kernels
with o's grid (and down's 128 blocks) that end with no atomic, one to one address, or one to a slot
of 32, back to back in a CUDA graph.  Writes JSON to argv[1].
"""
import json
import pathlib
import sys

import cupy as cp

from cupy_timing import graph_us

SRC = pathlib.Path(__file__).with_name("atomic_tail.cuh").read_text()
CHAIN = 64


def main(out_path: str = "atomic-tail.json") -> None:
    names = {"none": "atomic_tail<0, 1>", "one address": "atomic_tail<1, 1>", "32 slots": "atomic_tail<2, 32>"}
    mod = cp.RawModule(code=SRC, options=("-std=c++17", "-arch=sm_90"), name_expressions=list(names.values()))
    rows = []
    stream = cp.cuda.Stream(non_blocking=True)
    for grid, threads, per in ((512, 512, 1024), (128, 256, 4096), (512, 512, 64), (1024, 256, 64)):
        src = cp.random.randint(0, 2**31, size=grid * per * 4, dtype=cp.uint32)
        ss = cp.zeros(64, dtype=cp.float64)
        plain = cp.zeros(grid, dtype=cp.float64)
        for label, name in names.items():
            k = mod.get_function(name)

            def launch(s, k=k, grid=grid, threads=threads, src=src, per=per, ss=ss, plain=plain):
                for _ in range(CHAIN):
                    k((grid,), (threads,), (src, cp.int32(per), ss, plain))
            us, rng = graph_us(stream, launch, CHAIN)
            rows.append({"grid": grid, "threads": threads, "kb_a_block": per * 16 / 1024, "tail": label,
                         "us_per_kernel": us, "us_range": rng})
            print(f"grid {grid:5d} x {threads:4d}, {per * 16 // 1024:3d} KB a block, {label:12s}: {us:6.3f} us "
                  f"({rng[0]:.3f}-{rng[1]:.3f})", flush=True)
    json.dump({"chain": CHAIN, "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": rows},
              open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])
