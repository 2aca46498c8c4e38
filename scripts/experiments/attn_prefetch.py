"""Device experiment: the 7B q4f16_1 engine as shipped, with attention asking the L2 for the o
matmul's weights (kernels/decode.cuh rope_attention PF) none / early / late, and early with the
first MBs of gate_up's words in place of o's scales; then an engine verified in its step with
"early" from the start.  Prints what each matmul serves (config, grid, block, registers).

    python scripts/experiments/attn_prefetch.py OUT_DIR
"""
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from autosched import api
from autosched.benchmarks.decode import copy_bandwidth_gbps, engine_tokens_per_s
from autosched.database import Database
from autosched.engine.engine import NO_PREFETCH, Engine
from autosched.engine.weights import random_weights_torch
from autosched.launch import LoadedKernel
from autosched.runtime import ptr
from autosched.templates import decode as dk


def served(eng) -> dict:
    out = {}
    for name, m in eng.mm.items():
        res = m.kernel.binary.resources
        out[name] = {"config": m.choice.config, "grid": m.spec.grid, "block": m.spec.block,
                     "registers": res.registers, "smem": m.spec.smem_bytes + res.smem_static}
    res = eng.k["attn"].binary.resources
    out["attn"] = {"grid": eng.k["attn"].spec.grid, "block": eng.k["attn"].spec.block, "registers": res.registers}
    return out


def pct(eng, bw, n=3) -> list:
    limit = bw * 1e9 / eng.weight_bytes_per_token()
    return [100 * engine_tokens_per_s(torch, eng, 64)["tokens_per_s"] / limit for _ in range(n)]


def use(eng, builder, mode: str, ranges=None) -> None:
    c = eng.cfg
    spec = dk.rope_attention_spec(c.n_heads, c.head_size, eng.splits, eng.act, eng.info.arch, prefetch=mode)
    eng.k["attn"] = LoadedKernel(spec, builder, eng.pdl)
    eng.attn_prefetch = mode
    if ranges is not None:
        eng._prefetch_ranges = ranges
    eng._graph = None


def main():
    out = Path(sys.argv[1])
    from autosched.build import Builder
    cfg = api.model_config("random:llama2-7b")
    bw = copy_bandwidth_gbps(torch)
    w = random_weights_torch(cfg, 1234, "cuda")
    res = {"copy_gbps": bw}
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db, Builder() as builder:
        t0 = time.perf_counter()
        eng = Engine(cfg, w, "q4f16_1", db=db, reverify=True, builder=builder)
        res["setup_s"] = time.perf_counter() - t0
        res["served"] = served(eng)
        print(json.dumps(res["served"]), flush=True)
        runs = {}

        none2 = NO_PREFETCH[:4]

        def gate_up_first(mbytes):
            def ranges(layer, eng=eng):
                gu = eng.mm["gate_up"].layers[layer]["A_q"]
                n = min(mbytes << 20, gu.numel() * gu.element_size())
                return (ptr(gu), np.int32(1), np.int64(0), np.int64(n)) + none2
            return ranges

        def gate_up_tiles(fraction):
            # the start of each row tile of the tiled words (layouts.tile: a layout_n-row tile is
            # contiguous, in K order), so every block of gate_up finds its first K steps in the L2
            def ranges(layer, eng=eng):
                m = eng.mm["gate_up"]
                gu = m.layers[layer]["A_q"]
                ln = m.choice.config["layout_n"]
                stride = ln * m.k // 2
                chunk = int(stride * fraction) // 16 * 16
                return (ptr(gu), np.int32(m.n // ln), np.int64(stride), np.int64(chunk)) + none2
            return ranges

        plain = Engine._prefetch_ranges.__get__(eng)
        variants = [("none", "none", plain), ("late gate_up 16 MB", "late", gate_up_first(16))]
        variants += [(f"late gate_up tiles {f}", "late", gate_up_tiles(f)) for f in (0.125, 0.25, 0.375, 0.5)]
        variants += [(f"early gate_up tiles {f}", "early", gate_up_tiles(f)) for f in (0.25,)]
        variants += [("none again", "none", plain), ("late gate_up tiles 0.25 again", "late", gate_up_tiles(0.25))]
        for label, mode, ranges in variants:
            use(eng, builder, mode, ranges)
            runs[label] = pct(eng, bw)
            print(label, [round(p, 2) for p in runs[label]], flush=True)
        res["swapped"] = runs
    (out / "attn-prefetch.json").write_text(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()
