"""Where a per-kernel decode step's time goes: its kernels' start and end on the GPU, reduced to a
table by role (embed, qkv, attn, o, gate_up, down, cls, argmax).

ncu serializes kernels and runs each cold, so its durations add up to far more than a step inside
a CUDA graph with programmatic dependent launch, where a kernel's prologue overlaps its
predecessor's tail.  A timeline of the graph replays (CUPTI's kernel records, read here through
torch.profiler by scripts/step_timeline.py) shows the overlap.  Per kernel:

    dur        its own end - start (overlap with neighbours included)
    advance    end - the previous kernel's end: how far it moved the step's critical path.  The
               advances of a step's kernels add up to the step's span; the gap to the next step's
               first kernel (the graph launch) is counted apart

and per role: the median over steps of each layer's figures, summed over the layers (so `advance`
is the role's share of the step), beside the bytes it reads at the copy bandwidth (its floor).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

# the kernel that opens a step, and the order of a layer's kernels after it (engine._launch_step)
STEP_OPENER = "embed_norm"
LAYER_ROLES = ("qkv", "attn", "o", "gate_up", "down")
TAIL_ROLES = ("cls", "argmax")


@dataclass(frozen=True)
class KernelEvent:
    name: str
    start_us: float
    end_us: float


def events_from_chrome_trace(trace: dict) -> list[KernelEvent]:
    """The GPU kernels of a Chrome trace (torch.profiler's export_chrome_trace: events of category
    "kernel", `ts` and `dur` in microseconds)."""
    return [KernelEvent(e["name"], float(e["ts"]), float(e["ts"]) + float(e["dur"]))
            for e in trace.get("traceEvents", []) if e.get("cat") == "kernel" and "dur" in e]


def base_name(name: str) -> str:
    """`void gemv_q4f16_fused<12288, ...>(...)` -> `gemv_q4f16_fused`."""
    s = re.sub(r"^void\s+", "", name.strip())
    return re.split(r"[<(]", s, maxsplit=1)[0].strip()


def split_steps(events: list[KernelEvent], kernels_per_step: int) -> list[list[KernelEvent]]:
    """The events (any order) cut into whole steps: each starts at a STEP_OPENER kernel and holds
    kernels_per_step kernels; a partial step at either end is dropped."""
    ev = sorted(events, key=lambda e: e.start_us)
    opens = [i for i, e in enumerate(ev) if base_name(e.name) == STEP_OPENER]
    steps = []
    for i in opens:
        chunk = ev[i:i + kernels_per_step]
        if len(chunk) == kernels_per_step and all(base_name(e.name) != STEP_OPENER for e in chunk[1:]):
            steps.append(chunk)
    return steps


def roles(n_layers: int) -> list[str]:
    return ["embed"] + [r for _ in range(n_layers) for r in LAYER_ROLES] + list(TAIL_ROLES)


def reduce(steps: list[list[KernelEvent]], n_layers: int, floor_us: dict[str, float] | None = None) -> dict:
    """The per-role table over whole steps (split_steps' output).  floor_us: a role's bytes at the
    copy bandwidth, per kernel (e.g. one layer's qkv), to print beside it."""
    names = roles(n_layers)
    if not steps:
        raise ValueError("no whole step in the timeline: was the profiler on during the replays?")
    bad = [len(s) for s in steps if len(s) != len(names)]
    if bad:
        raise ValueError(f"a step of {bad[0]} kernels: want {len(names)} (1 + 5 x {n_layers} layers + 2)")
    start = np.array([[e.start_us for e in s] for s in steps])
    end = np.array([[e.end_us for e in s] for s in steps])
    dur = end - start
    prev_end = np.concatenate([start[:, :1], end[:, :-1]], axis=1)
    advance = end - prev_end
    span = end[:, -1] - start[:, 0]
    gaps = start[1:, 0] - end[:-1, -1] if len(steps) > 1 else np.zeros(0)
    overlap = np.maximum(prev_end - start, 0.0)       # how long a kernel ran beside its predecessor
    floor_us = floor_us or {}
    table = {}
    for role in ["embed", *LAYER_ROLES, *TAIL_ROLES]:
        cols = [i for i, n in enumerate(names) if n == role]
        med_dur = np.median(dur[:, cols], axis=0)
        med_adv = np.median(advance[:, cols], axis=0)
        med_ovl = np.median(overlap[:, cols], axis=0)
        table[role] = {"kernels": len(cols), "dur_us": float(med_dur.mean()), "advance_us": float(med_adv.mean()),
                       "overlap_us": float(med_ovl.mean()), "advance_sum_us": float(med_adv.sum()),
                       "floor_us": floor_us.get(role)}
    step_us = float(np.median(span))
    for row in table.values():
        row["share"] = row["advance_sum_us"] / step_us
        f = row["floor_us"]
        row["advance_over_floor"] = row["advance_us"] / f if f else None
    return {"steps": len(steps), "step_span_us": step_us, "step_gap_us": float(np.median(gaps)) if len(gaps) else None,
            "step_period_us": step_us + (float(np.median(gaps)) if len(gaps) else 0.0), "roles": table}


def format_table(t: dict) -> list[str]:
    lines = [f"{'role':8s} {'n':>3s} {'dur us':>8s} {'advance':>8s} {'overlap':>8s} {'floor':>7s} {'adv/fl':>6s} "
             f"{'sum us':>8s} {'share':>6s}"]
    for role, r in t["roles"].items():
        fl = f"{r['floor_us']:7.2f}" if r["floor_us"] else f"{'':7s}"
        ratio = f"{r['advance_over_floor']:6.2f}" if r["advance_over_floor"] else f"{'':6s}"
        lines.append(f"{role:8s} {r['kernels']:3d} {r['dur_us']:8.2f} {r['advance_us']:8.2f} {r['overlap_us']:8.2f} "
                     f"{fl} {ratio} {r['advance_sum_us']:8.1f} {100 * r['share']:5.1f}%")
    gap = t["step_gap_us"]
    lines.append(f"step span {t['step_span_us']:.1f} us (median of {t['steps']})"
                 + (f", gap to the next step's first kernel {gap:.1f} us, period {t['step_period_us']:.1f} us"
                    if gap is not None else ""))
    return lines
