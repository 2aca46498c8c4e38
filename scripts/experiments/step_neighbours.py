"""Device experiment: an in-step neighbourhood search around the 7B q4f16_1 step's served GEMV
configs.  The engine as shipped (verified in its step, fresh database); then per matmul every config
of the space one knob away from the served one (gate_up: whose blocks pair rows) is timed once in
the step (random weights of the shape, the other matmuls as served); the five fastest are timed
again three times each, alternating with the served config.

    python scripts/experiments/step_neighbours.py OUT_DIR [START_JSON]

START_JSON: {matmul: config} served before the search starts (a previous round's winners).
"""
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from autosched import api
from autosched.build import Builder
from autosched.database import Database
from autosched.engine.descent import neighbours
from autosched.engine.engine import Engine, matmul_shapes
from autosched.engine.matmul import blocks_pair_rows
from autosched.engine.weights import random_weights_torch
from autosched.selection import Candidate
from autosched.templates import GemvQ4F16Template
from autosched.workloads import GemvQ4F16


def main():
    out = Path(sys.argv[1])
    cfg = api.model_config("random:llama2-7b")
    w = random_weights_torch(cfg, 1234, "cuda")
    res = {}
    t = GemvQ4F16Template()
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db, Builder() as b:
        eng = Engine(cfg, w, "q4f16_1", db=db, reverify=True, builder=b)
        del w
        torch.cuda.empty_cache()
        steps, reps = eng._step_timing()
        start = json.loads(Path(sys.argv[2]).read_text()) if len(sys.argv) > 2 else {}
        for name, c in start.items():       # served on random weights of the shape (timing only)
            cur = eng.mm[name]
            m = eng._candidate(name, Candidate("gemv_q4f16", c, "start"))
            m.load(b)
            m.add_layer_copies(torch.randn((cur.n, cur.k), device="cuda") / cur.k ** 0.5, len(cur.layers))
            eng.mm[name] = m
            del cur
            torch.cuda.empty_cache()
        for name in ("gate_up", "qkv", "down", "o"):
            n, k = matmul_shapes(cfg)[name]
            wl = GemvQ4F16(n, k)
            served = eng.mm[name].choice
            keep = (lambda c, wl=wl: blocks_pair_rows(wl, c)) if name == "gate_up" else None
            # each labelled by the one knob it changes, as knob=value
            cands = [Candidate("gemv_q4f16", c, next(f"{kn}={c[kn]}" for kn in c if c[kn] != served.config[kn]))
                     for c in neighbours(t.space(wl, eng.info), served.config, keep)]
            list(b.build_many([eng._candidate(name, c).spec for c in cands]))
            first = []
            for c in cands:
                try:
                    us = eng._time_candidate(name, c, b, steps, reps, None, None)
                except Exception as e:          # a neighbour that fails to build or run
                    us = None
                    print(name, c.source, "failed:", str(e)[:120], flush=True)
                first.append(us)
            ok = [(u, c) for u, c in zip(first, cands) if u is not None]
            top = sorted(ok, key=lambda x: x[0])[:5]
            confirm = {c.source: [] for _, c in top}
            base = []
            for _ in range(3):
                base.append(eng._step_us(steps, reps))
                for _, c in top:
                    confirm[c.source].append(eng._time_candidate(name, c, b, steps, reps, None, None))
            res[name] = {"served": served.config, "served_us": base,
                         "neighbours": [{"change": c.source, "us": u} for u, c in zip(first, cands)],
                         "confirmed": {s: {"us": v, "config": next(c.config for c in cands if c.source == s)}
                                       for s, v in confirm.items()}}
            print(name, f"{len(cands)} neighbours; served", [round(x, 1) for x in base], flush=True)
            for s, v in confirm.items():
                print("   ", s, [round(x, 1) for x in v], "median gain", round(np.median(base) - np.median(v), 1), flush=True)
            (out / "step-neighbours-7b.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
