"""Device experiment: attention asking the L2 for the start of every row tile of gate_up's 4-bit
words (layouts.tile: a layout_n-row tile is contiguous in K order, so each block of gate_up finds
its first K steps there), the issue spread over the lanes of warp 0 of each head's first block,
against the first 16 MiB whole (as served) and off; the 7B q4f16_1 as shipped, verified in its
step, timed by the decode benchmark in rounds over the variants, one process.

    python scripts/experiments/attn_prefetch_tiles.py OUT_DIR
"""
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from autosched import api
from autosched.benchmarks.decode import copy_bandwidth_gbps, engine_tokens_per_s
from autosched.database import Database
from autosched.engine.engine import Engine
from autosched.engine.weights import random_weights_torch
from autosched.runtime import ptr


def main():
    out = Path(sys.argv[1])
    cfg = api.model_config("random:llama2-7b")
    bw = copy_bandwidth_gbps(torch)
    w = random_weights_torch(cfg, 1234, "cuda")
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db:
        eng = Engine(cfg, w, "q4f16_1", db=db, reverify=True)
    del w
    torch.cuda.empty_cache()
    gu = eng.mm["gate_up"]
    ln = gu.choice.config["layout_n"]
    stride = ln * gu.k // 2
    served = Engine._prefetch_args.__get__(eng)

    def tiles(fraction):
        def args(layer):
            t = gu.layers[layer]["A_q"]
            return ptr(t), np.int32(gu.n // ln), np.int64(stride), np.int64(int(stride * fraction) // 16 * 16)
        return args

    variants = [("off", 0, served), ("16 MiB whole", 16 << 20, served)]
    variants += [(f"tiles x {f}", 1, tiles(f)) for f in (0.125, 0.25, 0.375, 0.5)]
    limit = bw * 1e9 / eng.weight_bytes_per_token()
    pct = {label: [] for label, _, _ in variants}
    for _ in range(3):
        for label, nbytes, fn in variants:
            eng.attn_prefetch = nbytes
            eng._prefetch_args = fn
            eng._graph = None
            engine_tokens_per_s(torch, eng, 16)
            pct[label].append(100 * engine_tokens_per_s(torch, eng, 64)["tokens_per_s"] / limit)
    for label, v in pct.items():
        print(f"{label:16s}", [round(x, 2) for x in v], flush=True)
    (out / "attn-prefetch-tiles.json").write_text(json.dumps({"copy_gbps": bw, "layout_n": ln, "tile_bytes": stride,
                                                              "pct": pct}, indent=1))


if __name__ == "__main__":
    main()
