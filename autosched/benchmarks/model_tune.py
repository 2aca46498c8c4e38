"""Issue 17's model figures, on the GPU: `tune-model` of a Llama-3.2-1B-shaped model (its wall time,
decode tokens/s in fp16 and q4f16_1 before and after, beside the weight-bandwidth limit), and the 7B
q4f16_1 engine as shipped (the shipped recordings only: no tuning run).

    python -m autosched.benchmarks.model_tune [--budget-min 5] [--phases before,tune,after,7b]

Every phase reads its own database: `before` and `7b` a new, empty one (what a fresh machine has:
the recordings that ship in the package, nothing tuned here), `tune` and `after` the one under
--out that `tune` fills (model-tune.db), so a later call given `--phases after --merge JSON` goes on
where an earlier call stopped.  The engines are built as `generate` builds them (the step verified
on the GPU: each matmul's candidates timed inside the step), then decode greedily under the
decode benchmark's timing (graph replays back to back).  The bandwidth limit is the weight bytes one
step reads over the device-to-device copy bandwidth, measured right before each of ROUNDS decode
runs: the copy bandwidth alone moves between runs of one machine by ~2% (2905-2978 GB/s within
minutes on one H100, 2026-11-26), so a row reports its median round (its tokens/s, limit and share
from that one round) and the range of the rounds' shares beside it.

Summary keys: tune_model_1b_minutes, pct_of_bw_limit_1b_fp16, pct_of_bw_limit_1b_q4 (after the
tuning), the same before it (…_before), pct_of_bw_limit_7b_q4_as_shipped; each share's range over
the rounds under the key with _range appended.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from autosched import api, model_tuning
from autosched.benchmarks.common import write_results
from autosched.benchmarks.decode import copy_bandwidth_gbps, engine_tokens_per_s
from autosched.database import Database
from autosched.device import query
from autosched.engine.engine import Engine
from autosched.engine.weights import random_weights_torch
from autosched.models.llama2c import SEED_CONFIGS

# torch is imported inside functions: optional / slow to import, a CPU install runs without it

MODEL_1B = "random:llama3.2-1b"
MODEL_7B = "llama2-7b"
FORMATS_1B = ("fp16", "q4f16_1")
PHASES = ("before", "tune", "after", "7b")
ROUNDS = 5       # decode runs a row, each after its own copy-bandwidth measurement (odd: the median is one)
BARS = {"tune_model_1b_minutes": 10.0, "pct_of_bw_limit_1b_fp16": 75.0, "pct_of_bw_limit_1b_q4": 45.0,
        "pct_of_bw_limit_7b_q4_as_shipped": 80.0}


def summarize(rows: list[dict], tune: dict | None) -> dict:
    """The summary keys from the decode rows (model, format, phase, pct_of_bw_limit) and the tuning
    run's record; a key whose measurement is missing is left out, never guessed."""
    out = {}

    def put(key, model, fmt, phase):
        hit = [r for r in rows if (r["model"], r["format"], r["phase"]) == (model, fmt, phase)]
        if hit:
            out[key] = hit[-1]["pct_of_bw_limit"]
            if "pct_range" in hit[-1]:
                out[key + "_range"] = list(hit[-1]["pct_range"])

    if tune is not None:
        out["tune_model_1b_minutes"] = tune["seconds"] / 60.0
    for fmt, key in (("fp16", "pct_of_bw_limit_1b_fp16"), ("q4f16_1", "pct_of_bw_limit_1b_q4")):
        for phase, suffix in (("after", ""), ("before", "_before")):
            put(key + suffix, MODEL_1B, fmt, phase)
    put("pct_of_bw_limit_7b_q4_as_shipped", MODEL_7B, "q4f16_1", "as shipped")
    out["bars"] = {k: b for k, b in BARS.items()}
    return out


def median_round(rounds: list[dict]) -> dict:
    """Of the rounds ({copy_gbps, tokens_per_s, pct_of_bw_limit, ...}), the one whose share of the
    limit is the median (the lower middle of an even count): a round measured, not an average."""
    return sorted(rounds, key=lambda r: r["pct_of_bw_limit"])[(len(rounds) - 1) // 2]


def decode_row(torch, model: str, cfg, weights, fmt: str, db, phase: str, steps: int, rounds: int = ROUNDS) -> dict:
    t0 = time.perf_counter()
    eng = Engine(cfg, weights, fmt, db=db, reverify=True)
    setup_s = time.perf_counter() - t0
    wb = eng.weight_bytes_per_token()
    runs = []
    for _ in range(rounds):
        bw = copy_bandwidth_gbps(torch)
        tp = engine_tokens_per_s(torch, eng, steps)
        runs.append({**tp, "copy_gbps": bw, "bw_limit_tokens_per_s": bw * 1e9 / wb,
                     "pct_of_bw_limit": 100 * tp["tokens_per_s"] * wb / (bw * 1e9)})
    pcts = [r["pct_of_bw_limit"] for r in runs]
    row = {"model": model, "format": fmt, "phase": phase, **median_round(runs), "weight_bytes": wb,
           "pct_range": [min(pcts), max(pcts)], "rounds": runs, "setup_s": setup_s, "matmuls": eng.describe()}
    del eng
    torch.cuda.empty_cache()
    return row


def run(phases=PHASES, budget_min: float = 5.0, out_dir="bench/results", merge=None, log=print) -> Path:
    import torch
    bad = [p for p in phases if p not in PHASES]
    if bad:
        raise ValueError(f"unknown phase {', '.join(bad)}; choose from {', '.join(PHASES)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    prior = json.loads(Path(merge).read_text()) if merge else {}
    rows = list(prior.get("rows", []))
    extra = dict(prior.get("extra", {}))
    info = query(0)
    tuned_db = out / "model-tune.db"
    cfg1b = api.model_config(MODEL_1B)

    def partial():
        (out / "model-tune-partial.json").write_text(json.dumps({"rows": rows, "extra": extra}, default=str))

    def decode_all(model, cfg, formats, db_path, phase, steps):
        w = random_weights_torch(cfg, 1234, "cuda")
        with Database(db_path) as db:
            for fmt in formats:
                r = decode_row(torch, model, cfg, w, fmt, db, phase, steps)
                extra.setdefault("copy_gbps", []).extend(x["copy_gbps"] for x in r["rounds"])
                log(f"{model} {fmt} ({phase}): {r['tokens_per_s']:.0f} tok/s = {r['pct_of_bw_limit']:.1f}% of "
                    f"{r['bw_limit_tokens_per_s']:.0f} at {r['copy_gbps']:.0f} GB/s (median of {len(r['rounds'])} "
                    f"rounds; {r['pct_range'][0]:.1f}-{r['pct_range'][1]:.1f}%)")
                rows.append(r)
                partial()
        del w
        torch.cuda.empty_cache()

    with tempfile.TemporaryDirectory(prefix="autosched-model-tune-") as fresh:
        if "before" in phases:
            decode_all(MODEL_1B, cfg1b, FORMATS_1B, Path(fresh) / "before.db", "before", 256)
        if "tune" in phases:
            tuned_db.unlink(missing_ok=True)
            t0 = time.perf_counter()
            res = model_tuning.tune_model(MODEL_1B, formats=FORMATS_1B, budget_min=budget_min, runner="gpu", db=str(tuned_db))
            seconds = time.perf_counter() - t0
            extra["tune"] = {"seconds": seconds, "budget_min": budget_min, "runner": res.runner,
                             "shapes": [{"workload": r.shape.workload.key, "format": r.shape.fmt, "kernels": r.shape.names,
                                         "share": r.shape.share, "status": r.status, "trials": r.trials,
                                         "best_us": r.best_us, "default_us": r.default_us, "seconds": r.seconds}
                                        for r in res.rows],
                             "engine_tokens_per_s": dict(res.tokens_per_s)}
            log(f"tune-model {MODEL_1B} {','.join(FORMATS_1B)}: {seconds / 60:.2f} min (budget {budget_min} min)")
            partial()
        if "after" in phases:
            if not tuned_db.exists():
                raise FileNotFoundError(f"{tuned_db}: run the tune phase first (or carry its database here)")
            decode_all(MODEL_1B, cfg1b, FORMATS_1B, tuned_db, "after", 256)
        if "7b" in phases:
            decode_all(MODEL_7B, SEED_CONFIGS[MODEL_7B], ("q4f16_1",), Path(fresh) / "as-shipped.db", "as shipped", 64)
    summary = summarize(rows, extra.get("tune"))
    return write_results("model-tune", info, rows, summary, out_dir, extra=extra)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--phases", default=",".join(PHASES), help=f"comma-separated, in order: {', '.join(PHASES)}")
    ap.add_argument("--budget-min", type=float, default=5.0, help="tune-model's budget in minutes (default 5)")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--merge", default=None, help="a model-tune JSON (or partial) whose rows and tuning record to keep")
    a = ap.parse_args(argv)
    path = run([p.strip() for p in a.phases.split(",") if p.strip()], a.budget_min, a.out, a.merge)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
