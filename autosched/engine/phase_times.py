"""Where a persistent decode step's time goes: a phase timeline of Engine(persistent=True).

ncu sees the persistent step as one kernel.  The instrumented build of kernels/persistent_step.cuh
(-DAUTOSCHED_PHASE_TIMES, templates/persistent.py's phase_times=True) has every block's thread 0
write %globaltimer at the start and end of each phase and after each grid barrier into a u64 buffer
(phases, blocks, 3); PhaseTimer swaps that build into an engine for a few steps, and reduce() turns
the buffers into a table per phase:

    span     max over blocks of the end - min over blocks of the start (the phase's work, idle
             blocks and stragglers included)
    slot     from the phase's first start to the next phase's first start: the slots tile the step,
             so span + the barrier's release latency; the last slot runs to the step's last mark
    busy     mean over blocks of a block's own end - start, as a share of the span (low: idle blocks)
    wait     a block's barrier exit - its end: median and max over blocks
    share    span / step, and slot / step (slot shares add up to 100%)

each the median over steps, and the sums per phase kind (embed, qkv, attn, o, gate_up, down, cls,
argmax) across layers (sums of the per-phase medians).

    with Builder() as b:
        eng = Engine(cfg, w, "fp16", builder=b, persistent=True, batched_prefill=False)
        with PhaseTimer(eng, b) as t:
            eng_step_logits = t.step(1)
            t.decode(64)
        table = reduce(t.times(), eng.cfg.n_layers)
        print("\\n".join(format_table(table)))
"""

from __future__ import annotations

import warnings

import numpy as np

from autosched.templates.persistent import PHASE_KINDS, phase_names

START, END, EXIT = 0, 1, 2      # the kernel's k in phase_times[(p * G + b) * 3 + k]


def phase_kind(name: str) -> str:
    return name.split(".", 1)[1] if "." in name else name


def reduce(times: np.ndarray, n_layers: int) -> dict:
    """times: (steps, phases, blocks, 3) timestamps in ns (0: not written, e.g. argmax on all blocks
    but the last).  The per-phase table, the per-kind sums and the step's time (all in us)."""
    t = np.asarray(times, dtype=np.float64)
    names = phase_names(n_layers)
    if t.ndim != 4 or t.shape[1] != len(names) or t.shape[3] != 3:
        raise ValueError(f"phase times of shape {t.shape}: want (steps, {len(names)}, blocks, 3)")
    t = np.where(t > 0, t, np.nan)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)      # all-NaN slices: cls and argmax have no barrier
        first = np.nanmin(t[..., START], axis=2)                        # (steps, phases)
        step_lo = first[:, 0]
        step_hi = np.nanmax(t.reshape(t.shape[0], -1), axis=1)
        step = step_hi - step_lo                                        # (steps,)
        span = np.nanmax(t[..., END], axis=2) - first
        slot = np.concatenate([first[:, 1:], step_hi[:, None]], axis=1) - first
        busy = np.nanmean(t[..., END] - t[..., START], axis=2) / span
        wait = t[..., EXIT] - t[..., END]                               # (steps, phases, blocks)
        # over steps: the median of each phase's figure
        span, slot, busy = (np.nanmedian(a, axis=0) for a in (span, slot, busy))
        wait_med = np.nanmedian(np.nanmedian(wait, axis=2), axis=0)
        wait_max = np.nanmedian(np.nanmax(wait, axis=2), axis=0)
    blocks = np.median(np.sum(~np.isnan(t[..., START]), axis=2), axis=0)
    step_us = float(np.median(step)) / 1e3
    rows = []
    for p, name in enumerate(names):
        r = {"phase": name, "kind": phase_kind(name), "span_us": span[p] / 1e3, "slot_us": slot[p] / 1e3,
             "busy_pct": 100 * busy[p], "wait_med_us": wait_med[p] / 1e3, "wait_max_us": wait_max[p] / 1e3,
             "blocks": int(blocks[p])}
        r["share_pct"] = 100 * r["span_us"] / step_us
        r["slot_pct"] = 100 * r["slot_us"] / step_us
        rows.append({k: (None if isinstance(v, (float, np.floating)) and np.isnan(v) else v) for k, v in r.items()})
    kinds = []
    for kind in ("embed", *PHASE_KINDS, "cls", "argmax"):
        rs = [r for r in rows if r["kind"] == kind]
        s = {"kind": kind, "phases": len(rs)}
        for key in ("span_us", "slot_us", "wait_med_us", "wait_max_us", "share_pct", "slot_pct"):
            vals = [r[key] for r in rs if r[key] is not None]
            s[key] = float(sum(vals)) if vals else None
        kinds.append(s)
    return {"steps": int(t.shape[0]), "blocks": int(t.shape[2]), "step_us": step_us,
            "step_us_all": [float(x) / 1e3 for x in step], "phases": rows, "kinds": kinds}


def _f(v, fmt="{:8.1f}") -> str:
    return fmt.format(v) if v is not None else f"{'-':>{len(fmt.format(0.0))}}"


def format_table(result: dict, per_phase: bool = True) -> list[str]:
    """The per-kind sums, then (per_phase) every phase, as text lines."""
    out = [f"persistent step timeline: {result['steps']} steps, {result['blocks']} blocks, "
           f"median step {result['step_us']:.1f} us (first mark to last)",
           f"{'kind':<10}{'n':>4}{'span us':>10}{'share%':>8}{'slot us':>10}{'slot%':>8}{'wait med':>10}{'wait max':>10}"]
    for k in result["kinds"]:
        out.append(f"{k['kind']:<10}{k['phases']:>4}  {_f(k['span_us'])}{_f(k['share_pct'], '{:8.1f}')}"
                   f"  {_f(k['slot_us'])}{_f(k['slot_pct'])}  {_f(k['wait_med_us'])}  {_f(k['wait_max_us'])}")
    if per_phase:
        out.append(f"{'phase':<12}{'span us':>9}{'share%':>8}{'slot us':>9}{'busy%':>7}{'wait med':>10}"
                   f"{'wait max':>10}{'blocks':>8}")
        for r in result["phases"]:
            out.append(f"{r['phase']:<12}{_f(r['span_us'], '{:9.1f}')}{_f(r['share_pct'])}{_f(r['slot_us'], '{:9.1f}')}"
                       f"{_f(r['busy_pct'], '{:7.0f}')}{_f(r['wait_med_us'], '{:10.2f}')}"
                       f"{_f(r['wait_max_us'], '{:10.2f}')}{r['blocks']:>8}")
    return out


class PhaseTimer:
    """Runs an Engine(persistent=True) on the instrumented build while entered: step() and decode()
    as the engine's, each step's timestamps kept (times()).  On exit the engine's own kernel is back
    (and its graph recaptured on the next step).  With graphs, the step that captures the graph is
    not kept: its warm-up launch and the replay write the same buffer."""

    def __init__(self, eng, builder):
        import torch

        from autosched.launch import LoadedKernel
        from autosched.templates import persistent as pt
        if eng.step_kernel is None:
            raise ValueError("PhaseTimer needs an Engine(..., persistent=True)")
        self.eng = eng
        info = eng.persistent_info
        spec = pt.persistent_step_spec(eng.cfg, eng.info.arch, phase_times=True)
        k = LoadedKernel(spec, builder, pdl=False, cooperative=True)
        res = k.binary.resources
        if res.spills:
            raise RuntimeError(f"instrumented persistent step spills ({res.spill_stores} B stores, "
                               f"{res.spill_loads} B loads)")
        per_sm = k.kernel.occupancy.max_active_blocks_per_multiprocessor(pt.THREADS, spec.smem_bytes)
        if per_sm < info["blocks_per_sm"]:
            raise RuntimeError(f"instrumented persistent step fits {per_sm} blocks an SM, the engine's grid "
                               f"needs {info['blocks_per_sm']}")
        self.kernel = k
        self.names = pt.phase_names(eng.cfg.n_layers)
        self.buf = torch.zeros((len(self.names), info["grid"], 3), dtype=torch.int64, device=eng.dev)
        self.records: list = []
        self._saved = None

    def __enter__(self):
        from autosched.runtime import ptr
        e = self.eng
        self._saved = (e.step_kernel, e.step_extra_args)
        e.step_kernel, e.step_extra_args, e._graph = self.kernel, (ptr(self.buf),), None
        return self

    def __exit__(self, *exc):
        e = self.eng
        e.step_kernel, e.step_extra_args = self._saved
        e._graph = None
        return False

    def _timed(self, run):
        e = self.eng
        capture = e.graphs_enabled and e._graph is None
        self.buf.zero_()
        out = run()
        if not capture:
            self.records.append(self.buf.clone())       # on the stream: no host round trip
        return out

    def step(self, token: int):
        return self._timed(lambda: self.eng.step(token))

    def decode(self, steps: int) -> None:
        for _ in range(steps):
            self._timed(lambda: self.eng.decode(1))

    def times(self) -> np.ndarray:
        """(steps, phases, blocks, 3) u64 ns of the kept steps."""
        import torch
        if not self.records:
            raise ValueError("no steps timed")
        return torch.stack(self.records).cpu().numpy().view(np.uint64)


def measure(eng, builder, steps: int = 64, prompt=(1, 5, 9)) -> dict:
    """reduce() of `steps` greedy steps after `prompt` (reset first), on the instrumented build."""
    eng.reset()
    with PhaseTimer(eng, builder) as t:
        for tok in prompt:
            t.step(tok)
        t.records.clear()                  # the prompt's steps: warm-up
        t.decode(steps)
    return reduce(t.times(), eng.cfg.n_layers)
