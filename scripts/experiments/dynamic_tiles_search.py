"""Device experiment: the 7B q4f16_1 engine as shipped (verified in its step, fresh database, every
matmul one tile a block), then per matmul the recorded configs with small tiles (a block's rows
<= 16, the fastest few by their recorded time) run with their blocks taking row tiles from a counter
(gemv_q4f16_dynamic), on the grid the GPU holds and on 2 and 4 blocks an SM, each timed in the step
against the served config.

    python scripts/experiments/dynamic_tiles_search.py OUT_DIR
"""
import gzip
import json
import sys
import tempfile
from importlib import resources
from pathlib import Path

import torch

from autosched import api
from autosched.build import Builder
from autosched.database import Database
from autosched.engine.engine import EPILOGUE, Engine, matmul_shapes
from autosched.engine.matmul import Matmul
from autosched.engine.weights import random_weights_torch
from autosched.selection import Candidate


def small_tile_configs(n, k, pair, limit):
    rec = resources.files("autosched.data").joinpath(f"recordings/gemv_q4f16-{n}x{k}-NVIDIA_H100_80GB_HBM3.json.gz")
    d = json.loads(gzip.decompress(rec.read_bytes()))
    rows = sorted((r for r in d["rows"] if r[15] == "ok"), key=lambda r: r[17])
    out, seen = [], set()
    for r in rows:
        c = dict(zip(d["knobs"], r[:15]))
        rb = c["ts"] * c["tile_s"]
        if rb > 16 or (pair and rb % 2) or (rb, c["ts"] * c["tr"]) in seen:
            continue
        seen.add((rb, c["ts"] * c["tr"]))
        out.append((c, r[17]))
    return out[:limit]


def main():
    out = Path(sys.argv[1])
    cfg = api.model_config("random:llama2-7b")
    w = random_weights_torch(cfg, 1234, "cuda")
    res = {"rows": []}
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db, Builder() as b:
        eng = Engine(cfg, w, "q4f16_1", db=db, reverify=True, builder=b)
        del w
        torch.cuda.empty_cache()
        for name in eng.dynamic_names:       # every matmul one tile a block, as before
            if eng.mm[name].dynamic:
                m = eng.mm[name]
                s = Matmul(name, "q4f16_1", m.n, m.k, "half", "half", eng.info, pdl=eng.pdl, choice=m.choice,
                           epilogue=EPILOGUE[name])
                s.load(b)
                s.layers = m.layers
                eng.mm[name] = s
        steps, reps = eng._step_timing()
        for name in ("gate_up", "down", "qkv", "o"):
            n, k = matmul_shapes(cfg)[name]
            cur = eng.mm[name]
            base = eng._step_us(steps, reps)
            res["rows"].append({"matmul": name, "served": cur.choice.config, "step_us": base})
            print(name, "served", round(base, 1), flush=True)
            for c, iso in small_tile_configs(n, k, name == "gate_up", 5):
                m = Matmul(name, "q4f16_1", n, k, "half", "half", eng.info, pdl=eng.pdl,
                           choice=Candidate("gemv_q4f16", c, "recording"), epilogue=EPILOGUE[name], dynamic=True)
                m.load(b)
                m.add_layer_copies(torch.randn((n, k), device="cuda") / k ** 0.5, cfg.n_layers)
                full = m.grid[0]
                for grid in sorted({full, min(full, 2 * 132), min(full, 4 * 132)}):
                    m.grid = (grid, 1, 1)
                    eng.mm[name] = m
                    us = eng._step_us(steps, reps)
                    eng.mm[name] = cur
                    row = {"matmul": name, "config": c, "isolated_us": iso, "rows": c["ts"] * c["tile_s"],
                           "threads": c["ts"] * c["tr"], "grid": grid, "full_grid": full, "step_us": us}
                    res["rows"].append(row)
                    print(name, row["rows"], row["threads"], grid, full, round(us, 1), flush=True)
                m.layers.clear()
                del m
                torch.cuda.empty_cache()
    (out / "dynamic-tiles-search-7b.json").write_text(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()
