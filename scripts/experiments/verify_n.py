"""Device experiment: the 7B q4f16_1 engine as shipped with 4, 8, 16 candidates a matmul timed in its step."""
import json, sys, tempfile, time
from pathlib import Path
import torch
from autosched import api
from autosched.benchmarks.decode import engine_tokens_per_s, copy_bandwidth_gbps
from autosched.database import Database
from autosched.engine.engine import Engine
from autosched.engine.weights import random_weights_torch


def main():
    cfg = api.model_config("random:llama2-7b")
    bw = copy_bandwidth_gbps(torch)
    w = random_weights_torch(cfg, 1234, "cuda")
    res = {}
    for n in [int(x) for x in sys.argv[2].split(",")]:
        with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db:
            t0 = time.perf_counter()
            eng = Engine(cfg, w, "q4f16_1", db=db, reverify=True, verify=n)
            setup = time.perf_counter() - t0
        tp = [engine_tokens_per_s(torch, eng, 64) for _ in range(3)]
        limit = bw * 1e9 / eng.weight_bytes_per_token()
        pct = [100 * t["tokens_per_s"] / limit for t in tp]
        res[n] = {"setup_s": setup, "pct": pct, "tokens_per_s": [t["tokens_per_s"] for t in tp],
                  "describe": eng.describe()[:5]}
        print(n, f"setup {setup:.1f} s", [round(p, 2) for p in pct], flush=True)
        for line in eng.describe()[:5]:
            print("   ", line[:160])
        del eng
        torch.cuda.empty_cache()
    Path(sys.argv[1], "verify-n.json").write_text(json.dumps({"copy_gbps": bw, "runs": res}, indent=1))


if __name__ == "__main__":
    main()
