"""Where a decode step's time goes inside its CUDA graph: the kernels' start and end (CUPTI, through
torch.profiler) over graph replays, reduced by role (engine/kernel_timeline.py).

    python scripts/step_timeline.py llama2-7b q4f16_1 [--steps 48] [--db PATH] [--json OUT] [--no-pdl]

MODEL is a seed config name (llama2-7b, ...) or random:NAME; weights are random (speed does not
depend on them).  Without --db the engine reads a new, empty database: the shipped recordings only,
as on a fresh machine.  The step is also timed without the profiler (CUDA events over the same
number of graph replays) to show what the tracing itself costs.
"""
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

from autosched import api
from autosched.benchmarks.decode import copy_bandwidth_gbps, engine_tokens_per_s
from autosched.database import Database
from autosched.engine.engine import Engine
from autosched.engine.kernel_timeline import KernelEvent, events_from_chrome_trace, format_table, reduce, split_steps
from autosched.engine.weights import random_weights_torch


def kernel_events(trace_path: Path) -> list[KernelEvent]:
    return events_from_chrome_trace(json.loads(trace_path.read_text()))


def timed_steps(eng, steps: int) -> float:
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    eng.decode(steps)
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e3 / steps


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("fmt")
    ap.add_argument("--steps", type=int, default=48)
    ap.add_argument("--db", default=None, help="database to read (default: a new, empty one)")
    ap.add_argument("--json", default=None, help="write the table and the raw per-step figures here")
    ap.add_argument("--no-pdl", action="store_true")
    a = ap.parse_args(argv)
    cfg = api.model_config(a.model)
    bw = copy_bandwidth_gbps(torch)
    w = random_weights_torch(cfg, 1234, "cuda")
    with tempfile.TemporaryDirectory(prefix="autosched-timeline-") as tmp:
        with Database(a.db or Path(tmp) / "fresh.db") as db:
            t0 = time.perf_counter()
            eng = Engine(cfg, w, a.fmt, db=db, reverify=True, pdl=not a.no_pdl, step="kernels")
            setup = time.perf_counter() - t0
    del w
    torch.cuda.empty_cache()
    # after the decode benchmark's prompt and warm-up; the traced steps follow on from there
    plain_us = engine_tokens_per_s(torch, eng, a.steps)["us_per_token"]
    from torch.profiler import ProfilerActivity, profile
    with tempfile.TemporaryDirectory(prefix="autosched-trace-") as tmp:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            traced_us = timed_steps(eng, a.steps)
        trace = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(trace))
        events = kernel_events(trace)
    floors = {name: m.nbytes(0) / (bw * 1e3) for name, m in eng.mm.items()}
    steps = split_steps(events, eng.kernels_per_step())
    table = reduce(steps, cfg.n_layers, floors)
    wb = eng.weight_bytes_per_token()
    limit_us = wb / (bw * 1e3)
    print(f"{a.model} {a.fmt}: setup {setup:.1f} s, copy {bw:.0f} GB/s, weights {wb / 1e9:.3f} GB a step = "
          f"{limit_us:.1f} us at the copy bandwidth")
    print(f"step {plain_us:.1f} us without the profiler ({100 * limit_us / plain_us:.1f}% of the limit), "
          f"{traced_us:.1f} us traced; {len(events)} kernels traced, {table['steps']} whole steps")
    print("\n".join(format_table(table)))
    pf = [(b, us) for b, us in eng.step_verification.get("attn_prefetch", [])]
    if pf:
        print("the step with attention streaming gate_up into the L2 (in-step verification): " +
              ", ".join(f"{b / 2**20:.1f} MiB {us:.1f} us" for b, us in pf))
    print("\n".join(eng.describe(a.model)))
    if a.json:
        Path(a.json).write_text(json.dumps({
            "model": a.model, "format": a.fmt, "pdl": not a.no_pdl, "copy_gbps": bw, "weight_bytes": wb,
            "limit_us": limit_us, "step_us_plain": plain_us, "step_us_traced": traced_us, "setup_s": setup,
            "table": table, "describe": eng.describe(a.model), "attn_prefetch_in_step": pf,
            "first_step": [[e.name[:80], e.start_us, e.end_us] for e in steps[0]] if steps else []}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
