"""Where a dataflow decode step's time goes: per work-item kind (embed, qkv, attn, o, gate_up,
down, cls) how long a block waited for its inputs, worked, and of that work waited for its weights
to land (the ring was empty), from the instrumented build of kernels/dataflow_step.cuh
(-DAUTOSCHED_TIMELINE: %globaltimer stamps per block and phase).  ncu sees the step as one kernel;
this is the view inside it.  The per-kernel step's own view is engine/kernel_timeline.py.

    python -m autosched.engine.dataflow_timeline --model random:llama3.2-1b --format fp16
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from autosched.api import load_model
from autosched.build import Builder
from autosched.engine.dataflow import DataflowStep
from autosched.engine.engine import Engine
from autosched.runtime import ptr
from autosched.templates.dataflow import phase_names

# torch is imported inside functions: optional / slow to import, a CPU install runs without it

KINDS = ("embed", "qkv", "attn", "o", "gate_up", "down", "cls")


def reduce(stamps: np.ndarray, n_layers: int) -> dict:
    """stamps (phases, blocks, 4) int64 ns of one step (0 where a block had no work in a phase) ->
    per kind the medians over the blocks that worked, summed over the layers (us): wait, work,
    ring (weights not yet landed, inside work), and the step's span."""
    names = phase_names(n_layers)
    t0 = stamps[:, :, :3][stamps[:, :, :3] > 0].min()
    span = (stamps[:, :, 2].max() - t0) / 1e3
    out = {k: {"wait_us": 0.0, "work_us": 0.0, "ring_us": 0.0, "blocks": 0} for k in KINDS}
    for p, name in enumerate(names):
        kind = name.split(".")[-1]
        v = stamps[p]
        has = (v[:, 0] > 0) & (v[:, 1] >= v[:, 0]) & (v[:, 2] >= v[:, 1])
        if not has.any():
            continue
        row = out[kind]
        row["wait_us"] += float(np.median(v[has, 1] - v[has, 0])) / 1e3
        row["work_us"] += float(np.median(v[has, 2] - v[has, 1])) / 1e3
        row["ring_us"] += float(np.median(v[has, 3])) / 1e3
        row["blocks"] = max(row["blocks"], int(has.sum()))
    return {"span_us": float(span), "kinds": out}


def measure(eng, builder, steps: int = 8) -> dict:
    """The engine's dataflow step rebuilt with the timeline, `steps` steps after a short prompt;
    the reduction of each, and their medians.  The engine's own kernel is served again after."""
    import torch
    if eng.flow is None:
        raise ValueError("the engine serves no dataflow step (Engine(..., step='dataflow'), or 'auto' where it won)")
    flow, served = eng.flow, eng.flow_served
    c = eng.cfg
    timed = DataflowStep(eng, None, builder, knobs=[flow.knobs], grid=flow.grid, timeline=True, share=flow)
    buf = torch.zeros((5 * c.n_layers + 2) * timed.grid * 4, dtype=torch.int64, device=eng.dev)
    timed.extra_args = (ptr(buf),)
    graphs = eng.graphs_enabled
    try:
        eng.flow, eng.flow_served, eng.graphs_enabled, eng._graph = timed, True, False, None
        eng.reset()
        for t in (1, 2, 3, 4):
            eng.step(t)
        runs = []
        for _ in range(steps):
            buf.zero_()
            eng.step(eng.next_token())
            torch.cuda.synchronize(eng.dev)
            runs.append(reduce(buf.view(-1, timed.grid, 4).cpu().numpy().astype(np.int64), c.n_layers))
    finally:
        eng.flow, eng.flow_served, eng.graphs_enabled, eng._graph = flow, served, graphs, None
        eng.reset()
    med = {k: {f: float(np.median([r["kinds"][k][f] for r in runs])) for f in ("wait_us", "work_us", "ring_us")}
           for k in KINDS}
    return {"steps": steps, "knobs": flow.knobs.label(), "grid": timed.grid,
            "span_us": float(np.median([r["span_us"] for r in runs])), "kinds": med}


def format_table(t: dict) -> list[str]:
    lines = [f"dataflow step ({t['knobs']}, {t['grid']} blocks): {t['span_us']:.0f} us a step (median of "
             f"{t['steps']}); per kind, summed over layers, median block:",
             f"{'kind':8s} {'wait us':>9s} {'work us':>9s} {'of which ring us':>17s}"]
    for k, r in t["kinds"].items():
        lines.append(f"{k:8s} {r['wait_us']:9.1f} {r['work_us']:9.1f} {r['ring_us']:17.1f}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="the dataflow decode step's timeline per work-item kind (GPU)")
    ap.add_argument("--model", default="random:llama3.2-1b")
    ap.add_argument("--format", default="fp16", choices=("fp16", "q4f16_1"))
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--json", default=None, help="also write the table as JSON here")
    args = ap.parse_args(argv)
    cfg, weights, _ = load_model(args.model)
    with Builder() as b:
        eng = Engine(cfg, weights, args.format, builder=b, step="dataflow", batched_prefill=False, verify=1)
        t = measure(eng, b, args.steps)
    print("\n".join(format_table(t)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(t, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
