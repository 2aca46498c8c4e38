"""Device experiment: the 7B q4f16_1 engine as shipped (verified in its step, from a fresh
database), timed by the decode benchmark with attention waiting on the qkv grid and on each kv
group's rows (kernels/step_flags.cuh), alternately, in one process.

    python scripts/experiments/attn_flags_ab.py OUT_DIR [MODEL]
"""
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

from autosched import api
from autosched.benchmarks.decode import copy_bandwidth_gbps, engine_tokens_per_s
from autosched.build import Builder
from autosched.database import Database
from autosched.engine.engine import Engine
from autosched.engine.weights import random_weights_torch


def main():
    out = Path(sys.argv[1])
    model = sys.argv[2] if len(sys.argv) > 2 else "random:llama2-7b"
    cfg = api.model_config(model)
    bw = copy_bandwidth_gbps(torch)
    w = random_weights_torch(cfg, 1234, "cuda")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db, Builder() as b:
        eng = Engine(cfg, w, "q4f16_1", db=db, reverify=True, builder=b)
        setup = time.perf_counter() - t0
        if eng.qkv_signal is None and "flags" in eng.sync_choices:
            eng._setup_flags(b)
    del w
    torch.cuda.empty_cache()
    chosen = eng.attn_sync
    limit = bw * 1e9 / eng.weight_bytes_per_token()
    runs = {m: [] for m in eng.sync_choices}
    for _ in range(5):
        for m in eng.sync_choices:
            eng.attn_sync = m
            eng._graph = None
            runs[m].append(100 * engine_tokens_per_s(torch, eng, 64)["tokens_per_s"] / limit)
    res = {"model": model, "copy_gbps": bw, "setup_s": setup, "chosen": chosen,
           "in_step": eng.step_verification.get("attn_sync"), "prefetch": eng.step_verification.get("attn_prefetch"),
           "describe": eng.describe(), "pct": runs}
    print(json.dumps(res, default=str, indent=1))
    name = model.split(":")[-1]
    (out / f"attn-flags-ab-{name}.json").write_text(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()
