"""Device experiment: the 7B q4f16_1 engine as shipped (verified in its step), timed by the decode
benchmark with attention's gate_up prefetch as the verification chose it and switched off,
alternately, in one process.

    python scripts/experiments/attn_prefetch_ab.py OUT_DIR
"""
import json
import sys
import tempfile
from pathlib import Path

import torch

from autosched import api
from autosched.benchmarks.decode import copy_bandwidth_gbps, engine_tokens_per_s
from autosched.database import Database
from autosched.engine.engine import Engine
from autosched.engine.weights import random_weights_torch


def main():
    out = Path(sys.argv[1])
    cfg = api.model_config("random:llama2-7b")
    bw = copy_bandwidth_gbps(torch)
    w = random_weights_torch(cfg, 1234, "cuda")
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db:
        eng = Engine(cfg, w, "q4f16_1", db=db, reverify=True)
    del w
    torch.cuda.empty_cache()
    chosen = eng.attn_prefetch
    limit = bw * 1e9 / eng.weight_bytes_per_token()
    runs = {"chosen": [], "off": []}
    for _ in range(5):
        for label, b in (("chosen", chosen), ("off", 0)):
            eng.attn_prefetch = b
            eng._graph = None
            runs[label].append(100 * engine_tokens_per_s(torch, eng, 64)["tokens_per_s"] / limit)
    res = {"copy_gbps": bw, "chosen_bytes": chosen, "in_step": eng.step_verification.get("attn_prefetch"),
           "pct": runs}
    print(json.dumps(res, default=str))
    (out / "attn-prefetch-ab.json").write_text(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()
