"""Device experiment: the 7B q4f16_1 engine as shipped with attention and the o matmul in one
launch (rope_attention_o) and in two, each verified in its own step, then timed alternately.

    python scripts/experiments/attn_o_ab.py OUT_DIR [MODEL]
"""
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

from autosched import api
from autosched.benchmarks.decode import copy_bandwidth_gbps, engine_tokens_per_s
from autosched.database import Database
from autosched.engine.engine import Engine
from autosched.engine.weights import random_weights_torch


def main():
    out, model = Path(sys.argv[1]), (sys.argv[2] if len(sys.argv) > 2 else "random:llama2-7b")
    cfg = api.model_config(model)
    bw = copy_bandwidth_gbps(torch)
    w = random_weights_torch(cfg, 1234, "cuda")
    res = {"model": model, "copy_gbps": bw, "runs": {}}
    engines = {}
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db:
        for label, fuse in (("one launch", None), ("two launches", False)):
            t0 = time.perf_counter()
            engines[label] = Engine(cfg, w, "q4f16_1", db=db, reverify=True, fuse_o=fuse)
            res["runs"][label] = {"setup_s": time.perf_counter() - t0, "fused_o": engines[label].fused_o,
                                  "describe": engines[label].describe()[:7], "pct": []}
    limit = bw * 1e9 / engines["one launch"].weight_bytes_per_token()
    for _ in range(3):
        for label, eng in engines.items():
            res["runs"][label]["pct"].append(100 * engine_tokens_per_s(torch, eng, 64)["tokens_per_s"] / limit)
    for label, r in res["runs"].items():
        print(label, r["fused_o"], [round(p, 2) for p in r["pct"]], flush=True)
    (out / f"attn-o-ab-{model.split(':')[-1]}.json").write_text(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()
