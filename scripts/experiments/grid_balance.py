"""Device experiment: is a 7B decode layer's weight stream slowed by how its blocks fall on the SMs?

Each of the layer's four matmuls (boundary_cost.KERNELS: bytes, served grid, threads) is a read of
its weight bytes, 32 of them back to back in one CUDA graph (different buffers, nothing stays in
the L2), timed with
  static G     G blocks, each its own region (the q4 GEMV's split); G the served grid and
               multiples of the SM count
  dynamic G/C  G blocks taking C-byte chunks from a counter (a memset zeroes the counters first)
and the whole layer (four kernels) with the served grids, with SM-multiple grids, and dynamic,
beside the same bytes at the copy bandwidth.

    python scripts/experiments/grid_balance.py OUT_DIR
"""
import json
import sys
from pathlib import Path

import numpy as np
import torch

from autosched.benchmarks.decode import copy_bandwidth_gbps
from autosched.build import Builder
from autosched.launch import LoadedKernel
from autosched.runtime import ptr
from layer_streams import KERNELS, LAYERS, setup, graph_us_a_layer as timed, stream_spec

HERE = Path(__file__).parent
UNROLL = 4
CHUNKS = (32 << 10, 128 << 10)


def source() -> str:
    return (HERE / "grid_balance.cuh").read_text().replace('#include "read_patterns.cuh"\n',
                                                             (HERE / "read_patterns.cuh").read_text())


def spec(name: str, threads: int, arch: str):
    return stream_spec("grid_balance", (("k", name), ("t", threads)), source(), name, threads, arch)


def main():
    out = Path(sys.argv[1])
    from cuda.core import Stream
    info, bufs, words, _ = setup()
    sms = info.sm_count
    counters = torch.zeros(LAYERS * 4 + 1, dtype=torch.int32, device="cuda")
    res = {"kernels": KERNELS, "layers": LAYERS, "sms": sms, "per_kernel": {}, "layer": {}}
    with Builder() as b:
        threads = sorted({t for *_, t in KERNELS})
        stat = {t: LoadedKernel(spec(f"stream_static<{UNROLL}>", t, info.arch), b) for t in threads}
        dyn = {(t, c): LoadedKernel(spec(f"stream_dynamic<{UNROLL}, {c // 16}>", t, info.arch), b)
               for t in threads for c in CHUNKS}

        def launch(s, kind, k, grid, threads_, chunk, layer, n):
            buf = bufs[layer][k]
            if kind == "static":
                stat[threads_].launch(s, (grid, 1, 1), ptr(buf), np.int64(buf.numel() // 16), ptr(words[n]),
                                      ptr(words[n + 1]))
            else:
                dyn[(threads_, chunk)].launch(s, (grid, 1, 1), ptr(buf), np.int64(buf.numel() // 16),
                                              ptr(counters[n:]), ptr(words[n + 1]))

        def chain_of(plan):   # plan: [(kind, k, grid, threads, chunk)] for one layer
            def chain():
                s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
                counters.zero_()
                n = 0
                for layer in range(LAYERS):
                    for item in plan:
                        launch(s, *item, layer, n)
                        n += 1
            return chain

        copy = [copy_bandwidth_gbps(torch)]
        best = {}
        for k, (name, nbytes, served, t) in enumerate(KERNELS):
            per_sm = max(1, min(2048 // t, 32))
            rows = {}
            grids = sorted({served} | {sms * m for m in range(1, per_sm + 1) if sms * m <= 4 * served})
            for g in grids:
                us, rng = timed(chain_of([("static", k, g, t, 0)]))
                rows[f"static {g}"] = {"us": us, "range": rng}
            for c in CHUNKS:
                for m in sorted({1, 2, per_sm}):
                    us, rng = timed(chain_of([("dynamic", k, sms * m, t, c)]))
                    rows[f"dynamic {sms * m}/{c >> 10}K"] = {"us": us, "range": rng}
            copy.append(copy_bandwidth_gbps(torch))
            res["per_kernel"][name] = {"bytes": nbytes, "threads": t, "rows": rows}
            best[name] = min(rows, key=lambda r: rows[r]["us"])
            print(f"{name} ({nbytes / 1e6:.1f} MB, {t} threads):", flush=True)
            for r, v in rows.items():
                print(f"  {r:18s} {v['us']:7.2f} us ({v['range'][0]:.2f}-{v['range'][1]:.2f})", flush=True)

        def item_of(k, row):
            kind, rest = row.split(" ")
            t = KERNELS[k][3]
            if kind == "static":
                return ("static", k, int(rest), t, 0)
            g, c = rest.split("/")
            return ("dynamic", k, int(g), t, int(c[:-1]) << 10)

        plans = {"served": [("static", k, g, t, 0) for k, (_, _, g, t) in enumerate(KERNELS)],
                 "best of each": [item_of(k, best[name]) for k, (name, *_) in enumerate(KERNELS)]}
        for label, plan in plans.items():
            us, rng = timed(chain_of(plan))
            res["layer"][label] = {"plan": plan, "us_a_layer": us, "range": rng}
            print(f"layer, {label:13s} {us:7.2f} us ({rng[0]:.2f}-{rng[1]:.2f})", flush=True)
        copy.append(copy_bandwidth_gbps(torch))
    bw = float(np.median(copy))
    res["copy_gbps"] = copy
    res["us_at_copy_bw"] = {name: nb / (bw * 1e3) for name, nb, _, _ in KERNELS}
    res["layer_us_at_copy_bw"] = sum(res["us_at_copy_bw"].values())
    print("at copy bandwidth:", {k: round(v, 2) for k, v in res["us_at_copy_bw"].items()},
          f"layer {res['layer_us_at_copy_bw']:.2f} us ({bw:.0f} GB/s)")
    (out / "grid-balance.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
