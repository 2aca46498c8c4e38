"""Device experiment: the 7B q4f16_1 engine as shipped (verified in its step from a fresh database,
which now also times each matmul with its blocks taking row tiles from a counter), then the decode
benchmark with the verification's choices and with every matmul one tile a block, alternately, in
one process.

    python scripts/experiments/dynamic_tiles_ab.py OUT_DIR [MODEL]
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
from autosched.engine.engine import DYNAMIC, Engine
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
        chosen = {n: m for n, m in eng.mm.items()}
        static = {n: (m if not m.dynamic else None) for n, m in eng.mm.items()}
        for n, m in chosen.items():
            if m.dynamic:     # the same config one tile a block, over the same weights
                from autosched.engine.engine import EPILOGUE
                from autosched.engine.matmul import Matmul
                s = Matmul(n, "q4f16_1", m.n, m.k, "half", "half", eng.info, pdl=eng.pdl, choice=m.choice,
                           epilogue=EPILOGUE[n])
                s.load(b)
                s.layers = m.layers
                static[n] = s
    del w
    torch.cuda.empty_cache()
    limit = bw * 1e9 / eng.weight_bytes_per_token()
    runs = {"chosen": [], "static": []}
    for _ in range(5):
        for label, mm in (("chosen", chosen), ("static", static)):
            eng.mm = dict(mm)
            eng._graph = None
            runs[label].append(100 * engine_tokens_per_s(torch, eng, 64)["tokens_per_s"] / limit)
    eng.mm = dict(chosen)
    res = {"model": model, "copy_gbps": bw, "setup_s": setup,
           "in_step": {k: v for k, v in eng.step_verification.items() if k.startswith(DYNAMIC) or k == "attn_prefetch"},
           "dynamic": [n for n, m in chosen.items() if m.dynamic],
           "grids": {n: m.grid for n, m in chosen.items() if m.dynamic},
           "describe": eng.describe()[:6], "pct": runs}
    print(json.dumps(res, default=str, indent=1))
    (out / f"dynamic-tiles-ab-{model.split(':')[-1]}.json").write_text(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()
