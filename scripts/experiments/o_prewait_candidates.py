"""Device experiment: the 7B q4f16_1 engine as shipped (verified in its step, fresh database), then
the o matmul's recorded configs that load all their weights before the dependency wait (prefetch 1,
one step along K, every block resident at once) timed inside the step against the served config,
with attention's gate_up prefetch as chosen and off.

    python scripts/experiments/o_prewait_candidates.py OUT_DIR
"""
import gzip
import json
import sys
import tempfile
from importlib import resources
from pathlib import Path

import torch

from autosched import api
from autosched.benchmarks.decode import copy_bandwidth_gbps, engine_tokens_per_s
from autosched.build import Builder
from autosched.database import Database
from autosched.engine.engine import Engine
from autosched.engine.weights import random_weights_torch
from autosched.selection import Candidate


def prewait_configs(n, k, limit):
    rec = resources.files("autosched.data").joinpath(f"recordings/gemv_q4f16-{n}x{k}-NVIDIA_H100_80GB_HBM3.json.gz")
    d = json.loads(gzip.decompress(rec.read_bytes()))
    rows = sorted((r for r in d["rows"] if r[15] == "ok"), key=lambda r: r[17])
    out = []
    for r in rows:
        c = dict(zip(d["knobs"], r[:15]))
        steps = -(-(k // 8) // (c["tr"] * c["tile_r"] // 8))
        thr, rows_b = c["ts"] * c["tr"], c["ts"] * c["tile_s"]
        per_sm = min(32, 2048 // thr, 65536 // (thr * max(r[20], 1)))
        if c["prefetch"] == 1 and steps == 1 and -(-n // rows_b) <= per_sm * 132:
            out.append((c, r[17]))
    return out[:limit]


def main():
    out = Path(sys.argv[1])
    cfg = api.model_config("random:llama2-7b")
    bw = copy_bandwidth_gbps(torch)
    w = random_weights_torch(cfg, 1234, "cuda")
    res = {"copy_gbps": bw}
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db, Builder() as b:
        eng = Engine(cfg, w, "q4f16_1", db=db, reverify=True, builder=b)
        res["served_o"] = eng.mm["o"].choice.config
        res["prefetch"] = eng.attn_prefetch
        steps, reps = eng._step_timing()
        cands = [(eng.mm["o"].choice, None)] + [(Candidate("gemv_q4f16", c, "recording"), us)
                                                for c, us in prewait_configs(4096, 4096, 6)]
        rows = []
        for pf in (eng.attn_prefetch, 0):
            eng.attn_prefetch = pf
            for c, iso in cands:
                us = eng._time_candidate("o", c, b, steps, reps, None, None)
                rows.append({"prefetch": pf, "config": c.config, "isolated_us": iso, "step_us": us})
                print(pf, iso, round(us, 1), c.config, flush=True)
        res["in_step"] = rows
        best = min((r for r in rows if r["prefetch"] == res["prefetch"]), key=lambda r: r["step_us"])
        eng.attn_prefetch = res["prefetch"]
        limit = bw * 1e9 / eng.weight_bytes_per_token()
        if best["config"] != res["served_o"]:
            eng._serve("o", Candidate("gemv_q4f16", best["config"], "recording"), w, b)
        pct = {"served": [], "best": []}
        for _ in range(4):
            for label, c in (("served", res["served_o"]), ("best", best["config"])):
                if eng.mm["o"].choice.config != c:
                    eng._serve("o", Candidate("gemv_q4f16", c, "recording"), w, b)
                eng._graph = None
                pct[label].append(100 * engine_tokens_per_s(torch, eng, 64)["tokens_per_s"] / limit)
        res["pct"] = pct
    print(json.dumps(res["pct"]))
    (out / "o-prewait-7b.json").write_text(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()
