"""Device experiment: where rope_attention asks the L2 for gate_up's weights (its PFW argument:
0 the first slice's blocks after the wait, 1 the same blocks after their attention, 2 every block
after its attention), at 16 and 24 MiB, and off; the 7B q4f16_1 as shipped, verified in its step,
timed by the decode benchmark in rounds over the variants, one process.

    python scripts/experiments/attn_prefetch_where.py OUT_DIR
"""
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

import torch

from autosched import api
from autosched.benchmarks.decode import copy_bandwidth_gbps, engine_tokens_per_s
from autosched.build import Builder
from autosched.database import Database
from autosched.engine.engine import Engine
from autosched.engine.weights import random_weights_torch
from autosched.launch import LoadedKernel


def main():
    out = Path(sys.argv[1])
    cfg = api.model_config("random:llama2-7b")
    bw = copy_bandwidth_gbps(torch)
    w = random_weights_torch(cfg, 1234, "cuda")
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db:
        eng = Engine(cfg, w, "q4f16_1", db=db, reverify=True)
    del w
    torch.cuda.empty_cache()
    base = eng.k["attn"].spec
    kernels = {}
    with Builder() as builder:
        for where in (0, 1, 2):
            spec = dataclasses.replace(base, name_expression=base.name_expression[:-1] + f", {where}>")
            kernels[where] = LoadedKernel(spec, builder, eng.pdl)
    variants = [("off", 0, 0)] + [(f"where {w}, {mb} MiB", w, mb << 20) for w in (0, 1, 2) for mb in (16, 24)]
    limit = bw * 1e9 / eng.weight_bytes_per_token()
    pct = {label: [] for label, _, _ in variants}
    for _ in range(3):
        for label, where, nbytes in variants:
            eng.k["attn"] = kernels[where]
            eng.attn_prefetch = nbytes
            eng._graph = None
            engine_tokens_per_s(torch, eng, 16)                  # the new graph warm
            pct[label].append(100 * engine_tokens_per_s(torch, eng, 64)["tokens_per_s"] / limit)
    for label, v in pct.items():
        print(f"{label:22s}", [round(x, 2) for x in v], flush=True)
    (out / "attn-prefetch-where.json").write_text(json.dumps({"copy_gbps": bw, "pct": pct}, indent=1))


if __name__ == "__main__":
    main()
