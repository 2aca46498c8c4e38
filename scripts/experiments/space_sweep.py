"""What is the best kernel in our spaces for a shape, against cuBLAS in the same run?

First asked of BERT-base's dense layers at M = 160..192 (the DietCode bench, H100 2026-11-26, served
them at 0.80-0.92 of cuBLAS, and per-instance tuning of about 150 trials over every template did no
better); then of issue 15's prefill shapes.  Each template's whole space (hgemm_wgmma, its split-K,
the pairs) is measured exhaustively through the tuner's runner, hgemm_stream on a random sample of
400, within a time budget each; cuBLAS timed in this process beside them.  The best five of each
template to $OUT/<name>.json.

    python scripts/experiments/space_sweep.py NAME SHAPE... [--templates fam,fam]"""
import argparse
import json
import os
import time

BUDGET_S = {"hgemm_wgmma_splitk": 90, "hgemm_wgmma": 30, "hgemm_stream": 30, "hgemm_wgmma_cluster": 60}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("shapes", nargs="+")
    ap.add_argument("--templates", default="hgemm_wgmma_splitk,hgemm_wgmma,hgemm_stream")
    a = ap.parse_args()
    plan = [(f, "random" if f == "hgemm_stream" else "exhaustive", 400 if f == "hgemm_stream" else None,
             BUDGET_S[f]) for f in a.templates.split(",")]
    import tempfile

    from autosched.database import Database
    from autosched.registry import family
    from autosched.tuner import tune
    from autosched.workloads import Hgemm
    from gemm_bench_kit import RunnerKit
    temps = {t.family: t for t in family("hgemm").templates}
    db = Database(os.path.join(tempfile.mkdtemp(), "sweep.db"))
    out = {"shapes": {}}
    with RunnerKit() as kit:
        for shape in a.shapes:
            w = Hgemm.from_shape(shape)
            ops = kit.operands(w.M, w.N, w.K)
            cub = [kit.cublas_us(*ops) for _ in range(3)]
            res = {"cublas_us": cub}
            for fam, strategy, trials, budget in plan:
                t0 = time.perf_counter()
                seen = []
                r = tune(w, temps[fam], kit.runner, db, strategy=strategy, trials=trials, time_budget_s=budget,
                         builder=kit.builder, seed=3, on_result=lambda c, m, _r: seen.append((c, m)))
                ok = sorted(((c, m) for c, m in seen if m.ok), key=lambda cm: cm[1].median_us)
                best = [{"config": c, "us": m.median_us} for c, m in ok[:5]]
                res[fam] = {"trials": r.trials, "space": r.space_size, "s": time.perf_counter() - t0, "best": best}
                print(shape, fam, json.dumps(res[fam]), "cublas", min(cub), flush=True)
            out["shapes"][shape] = res
            kit.write(a.name + ".json", out)       # after each shape: a run cut short keeps what it did
    db.close()
    print(json.dumps({s: {"cublas": min(v["cublas_us"]), **{f: (v[f]["best"][0]["us"] if v[f]["best"] else None)
                                                        for f, *_ in plan}} for s, v in out["shapes"].items()}))

if __name__ == "__main__":
    main()
