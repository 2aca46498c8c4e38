"""Device experiment: do configs the isolated ranking puts far down run faster inside the 7B
q4f16_1 step?  The engine as shipped (verified in its step, fresh database), then per matmul a
random sample of the recording's configs ranked 8-400 by their isolated time, each timed in the step
(random weights of the shape, the other matmuls as served) against the served config, timed again
between samples to follow drift.

    python scripts/experiments/step_sample.py OUT_DIR [PER_MATMUL]
"""
import gzip
import json
import random
import sys
import tempfile
from importlib import resources
from pathlib import Path

import torch

from autosched import api
from autosched.build import Builder
from autosched.database import Database
from autosched.engine.engine import Engine, matmul_shapes
from autosched.engine.matmul import blocks_pair_rows
from autosched.engine.weights import random_weights_torch
from autosched.selection import Candidate
from autosched.workloads import GemvQ4F16


def sample(n, k, pair, count, seed):
    rec = resources.files("autosched.data").joinpath(f"recordings/gemv_q4f16-{n}x{k}-NVIDIA_H100_80GB_HBM3.json.gz")
    d = json.loads(gzip.decompress(rec.read_bytes()))
    rows = sorted((r for r in d["rows"] if r[15] == "ok"), key=lambda r: r[17])
    pool = [(i, dict(zip(d["knobs"], r[:15])), r[17]) for i, r in enumerate(rows[8:400], start=8)]
    if pair:
        pool = [p for p in pool if blocks_pair_rows(GemvQ4F16(n, k), p[1])]
    return random.Random(seed).sample(pool, min(count, len(pool)))


def main():
    out = Path(sys.argv[1])
    per = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    cfg = api.model_config("random:llama2-7b")
    w = random_weights_torch(cfg, 1234, "cuda")
    res = {"rows": []}
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db, Builder() as b:
        eng = Engine(cfg, w, "q4f16_1", db=db, reverify=True, builder=b)
        del w
        torch.cuda.empty_cache()
        steps, reps = eng._step_timing()
        for name in ("gate_up", "qkv", "down", "o"):
            n, k = matmul_shapes(cfg)[name]
            picks = sample(n, k, name == "gate_up", per, seed=7)
            list(b.build_many([eng._candidate(name, Candidate("gemv_q4f16", c, "recording")).spec for _, c, _ in picks]))
            base = []
            for j, (rank, c, iso) in enumerate(picks):
                if j % 8 == 0:
                    base.append(eng._step_us(steps, reps))
                us = eng._time_candidate(name, Candidate("gemv_q4f16", c, "recording"), b, steps, reps, None, None)
                res["rows"].append({"matmul": name, "rank": rank, "isolated_us": iso, "step_us": us, "config": c})
            best = min((r for r in res["rows"] if r["matmul"] == name), key=lambda r: r["step_us"])
            res[name] = {"served": eng.mm[name].choice.config, "served_step_us": base, "best_sampled": best}
            print(name, "served", [round(x, 1) for x in base], "best sampled", round(best["step_us"], 1),
                  "rank", best["rank"], flush=True)
            (out / "step-sample-7b.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
