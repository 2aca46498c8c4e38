"""Per-kernel vs persistent decode step on one model (fp16): tokens/s, per-step time and kernels a
step (a timeline proxy without nsys), beside the weight-bandwidth limit (weight bytes / the
device-to-device copy bandwidth measured here).  Writes persistent-timing.json under --out.
--phases: also the persistent step's phase timeline (engine/phase_times.py: the instrumented build,
each phase's span, barrier waits and share of the step, and the sums per phase kind), printed and
written to the JSON's "phases".

    python scripts/persistent_timing.py --model random:llama3.2-1b --steps 128 --phases --out $OUT
"""

import argparse
import json
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="random:llama3.2-1b")
    ap.add_argument("--steps", type=int, default=128)
    ap.add_argument("--out", default=".")
    ap.add_argument("--phases", action="store_true", help="the persistent step's phase timeline too")
    ap.add_argument("--per-phase", action="store_true", help="with --phases: print every phase, not only the kinds")
    args = ap.parse_args()
    import torch

    from autosched.api import load_model
    from autosched.benchmarks.decode import copy_bandwidth_gbps, engine_tokens_per_s
    from autosched.build import Builder
    from autosched.engine.engine import Engine
    cfg, w, _ = load_model(args.model)
    bw = copy_bandwidth_gbps(torch)
    print(f"copy bandwidth {bw:.0f} GB/s")
    rows = []
    phases = None
    with Builder() as b:
        for persistent in (False, True):
            t0 = time.perf_counter()
            try:
                eng = Engine(cfg, w, "fp16", builder=b, persistent=persistent, batched_prefill=False)
                tp = engine_tokens_per_s(torch, eng, args.steps)
            except Exception as e:        # report and go on: the other path's figure still counts
                print(f"persistent={persistent}: FAILED {type(e).__name__}: {e}")
                rows.append({"persistent": persistent, "error": f"{type(e).__name__}: {e}"})
                continue
            wb = eng.weight_bytes_per_token()
            limit = bw * 1e9 / wb
            row = {"persistent": persistent, **tp, "weight_bytes": wb, "bw_limit_tokens_per_s": limit,
                   "pct_of_bw_limit": 100 * tp["tokens_per_s"] / limit, "kernels_per_step": eng.kernels_per_step(),
                   "us_per_kernel": tp["us_per_token"] / eng.kernels_per_step(), "setup_s": time.perf_counter() - t0,
                   "describe": eng.describe()[-2:] if persistent else eng.describe()[-2:-1]}
            rows.append(row)
            print(f"{'persistent' if persistent else 'per-kernel'}: {tp['tokens_per_s']:.0f} tok/s, "
                  f"{tp['us_per_token']:.0f} us a step, {row['kernels_per_step']} kernels a step "
                  f"({row['us_per_kernel']:.1f} us each), {row['pct_of_bw_limit']:.0f}% of the {limit:.0f} tok/s limit")
            for line in row["describe"]:
                print("  ", line)
            if persistent and args.phases:
                phases = phase_timeline(eng, b, args.steps, row, args.per_phase)
            del eng
            torch.cuda.empty_cache()
    with open(f"{args.out}/persistent-timing.json", "w") as f:
        json.dump({"model": args.model, "format": "fp16", "copy_gbps": bw, "rows": rows,
                   **({"phases": phases} if args.phases else {})}, f, indent=1)
    ok = all("error" not in r for r in rows) and (not args.phases or (phases is not None and "error" not in phases))
    return 0 if ok else 1


def phase_timeline(eng, builder, steps: int, row: dict, per_phase: bool) -> dict:
    """The instrumented step's table, beside the plain step's wall time a step (row)."""
    from autosched.engine.phase_times import format_table, measure
    try:
        res = measure(eng, builder, steps)
    except Exception as e:
        print(f"phase timeline: FAILED {type(e).__name__}: {e}")
        return {"error": f"{type(e).__name__}: {e}"}
    res["plain_us_per_step"] = row["us_per_token"]
    for line in format_table(res, per_phase):
        print(line)
    print(f"timeline {res['step_us']:.0f} us a step (first block's start to the last mark) vs "
          f"{row['us_per_token']:.0f} us wall a step of the plain build")
    return res


if __name__ == "__main__":
    raise SystemExit(main())
