"""Device experiment: does a wider, footprint-diverse set of GEMV configs, timed inside the 7B
q4f16_1 step by coordinate descent (two passes), beat the engine's in-step choice among the 8
fastest in isolation?  Candidates per matmul: the fastest recorded config of each (threads, rows a
block) class among the 96 fastest, up to 14, plus the one served.

    python scripts/experiments/step_search.py OUT_DIR
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
from autosched.engine.engine import EPILOGUE, Engine, matmul_shapes
from autosched.engine.matmul import blocks_pair_rows, tuned_workload
from autosched.registry import templates_for
from autosched.selection import rank
from autosched.templates.epilogue import pairs_rows


def footprint(eng, name, cfg) -> dict:
    w = eng.mm[name].workload
    return templates_for(w)[0].derived_features(cfg, {"N": w.N, "K": w.K}, eng.info)


def diverse(eng, name, want=14) -> list:
    n, k = matmul_shapes(eng.cfg)[name]
    w = tuned_workload("q4f16_1", n, k)
    cands = rank(w, eng.info, None, k=96)
    if pairs_rows(EPILOGUE[name]):
        cands = [c for c in cands if blocks_pair_rows(w, c.config)]
    seen, out = set(), []
    cur = eng.mm[name].choice
    for c in [cur, *cands]:
        f = footprint(eng, name, c.config)
        key = (f["threads"], f["rows_per_block"])
        if key in seen:
            continue
        seen.add(key)
        out.append(c)
        if len(out) >= want:
            break
    return out


def pct(eng, bw, n=3) -> list:
    limit = bw * 1e9 / eng.weight_bytes_per_token()
    return [100 * engine_tokens_per_s(torch, eng, 64)["tokens_per_s"] / limit for _ in range(n)]


def main():
    out = Path(sys.argv[1])
    from autosched.build import Builder
    cfg = api.model_config("random:llama2-7b")
    bw = copy_bandwidth_gbps(torch)
    w = random_weights_torch_cached(cfg)
    res = {"copy_gbps": bw}
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db, Builder() as builder:
        t0 = time.perf_counter()
        eng = Engine(cfg, w, "q4f16_1", db=db, reverify=True, builder=builder)
        res["setup_s"] = time.perf_counter() - t0
        res["verification"] = {nm: [[c.config, us] for c, us in rows] for nm, rows in eng.step_verification.items()}
        res["start_pct"] = pct(eng, bw)
        print("start", [round(p, 2) for p in res["start_pct"]], flush=True)
        steps, reps = eng._step_timing()
        passes = []
        for p in range(2):
            rec = {}
            for name in ("qkv", "down", "o", "gate_up", "cls"):
                cands = diverse(eng, name)
                list(builder.build_many([eng._candidate(name, c).spec for c in cands]))
                timed = []
                for c in cands:
                    try:
                        us = eng._time_candidate(name, c, builder, steps, reps, None, None)
                    except Exception as e:     # noqa: BLE001 (an experiment: note and go on)
                        print(name, "failed", c.config, e, flush=True)
                        continue
                    timed.append((us, c))
                timed.sort(key=lambda t: t[0])
                best = timed[0][1]
                rec[name] = [[us, c.config, footprint(eng, name, c.config)] for us, c in timed]
                served = eng.mm[name].choice.config
                cur_us = next(us for us, c in timed if c.config == served)
                print(f"pass {p} {name}: served {cur_us:.1f} us, best {timed[0][0]:.1f} "
                      f"{footprint(eng, name, best.config)}", flush=True)
                if best.config != served and timed[0][0] < cur_us * 0.997:
                    eng._serve(name, best, w, builder)
            passes.append(rec)
            res[f"pass{p}_pct"] = pct(eng, bw)
            print(f"after pass {p}", [round(x, 2) for x in res[f"pass{p}_pct"]], flush=True)
        res["passes"] = passes
        res["served"] = {nm: m.choice.config for nm, m in eng.mm.items()}
    (out / "step-search.json").write_text(json.dumps(res, indent=1, default=str))


def random_weights_torch_cached(cfg):
    from autosched.engine.weights import random_weights_torch
    return random_weights_torch(cfg, 1234, "cuda")


if __name__ == "__main__":
    main()
