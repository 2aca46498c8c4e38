"""The dataflow decode step (kernels/dataflow_step.cuh) on an Engine's buffers: one persistent
kernel a step, its weights in the layout it streams (fp16 rows, or q4f16_1 words then scales, every
matrix as one contiguous block), its own scratch (split-KV partials, per-block winners, the phase
counters), and the choice among its knobs (templates/dataflow.py CHOICES) by timing in the step.

    flow = DataflowStep(eng, weights, builder)      # packs, builds every choice that fits
    flow.serve(knobs)                               # which kernel launch() uses
    flow.launch(stream)                             # one step, as Engine._launch_step does
"""

from __future__ import annotations

import numpy as np

from autosched.engine.weights import quantize_q4f16_1, step_matrices
from autosched.launch import LoadedKernel
from autosched.layouts import interleave_k
from autosched.runtime import ptr
from autosched.templates import dataflow as df

# torch is imported inside functions: optional / slow to import, a CPU install runs without it

MATS = ("qkv", "o", "gate_up", "down")


class DataflowStep:
    def __init__(self, eng, weights, builder, knobs: list | None = None, grid: int | None = None,
                 timeline: bool = False, share: "DataflowStep | None" = None):
        """knobs: the choices to build (default: every one of CHOICES that fits the model); grid:
        blocks (default each choice's per_sm an SM; fewer is allowed, more is refused: the grid must
        be co-resident);
        timeline: the instrumented build (engine/dataflow_timeline.py); share: another step of the
        same engine whose packed weights this one reads (weights may then be None)."""
        import torch
        c, fmt = eng.cfg, eng.fmt
        problem = df.refusal(c, fmt)
        if problem:
            raise ValueError(problem)
        self.eng = eng
        self.choices = knobs or df.choices(c, fmt)
        specs = [df.dataflow_step_spec(c, fmt, eng.info.arch, k, timeline) for k in self.choices]
        list(builder.build_many(specs))
        self.kernels = {}
        for k, spec in zip(self.choices, specs):
            lk = LoadedKernel(spec, builder, pdl=False, cooperative=True)
            res = lk.binary.resources
            if res.spills:
                raise RuntimeError(f"dataflow step {k.label()} spills ({res.spill_stores} B stores, "
                                   f"{res.spill_loads} B loads)")
            per_sm = lk.kernel.occupancy.max_active_blocks_per_multiprocessor(df.THREADS, spec.smem_bytes)
            if per_sm < k.per_sm:
                raise RuntimeError(f"dataflow step {k.label()}: {per_sm} block(s) fit an SM, not {k.per_sm} "
                                   f"({res.registers} registers, {spec.smem_bytes + res.smem_static} B shared)")
            self.kernels[k] = (lk, res)
        sms = eng.info.sm_count
        fewest = min(k.per_sm for k in self.choices) * sms
        if grid is not None and not 1 <= grid <= fewest:
            raise ValueError(f"a dataflow grid of {grid} blocks: between 1 and {fewest} (the knobs' blocks an SM "
                             f"x {sms} SMs, all co-resident) on this GPU")
        # blocks and attention slices a head, per choice
        self.grids = {k: grid or k.per_sm * sms for k in self.choices}
        self.nsplits = {k: df.splits(c, g) for k, g in self.grids.items()}
        dev = eng.dev
        z = lambda n, dt: torch.zeros(n, dtype=dt, device=dev)  # noqa: E731
        most = max(self.grids.values())
        self.part = z(c.n_heads * max(self.nsplits.values()) * (c.head_size + 2), torch.float32)
        self.count = z(c.n_heads, torch.int32)
        self.best_v, self.best_i = z(most, torch.float32), z(most, torch.int32)
        self.best_count = z(1, torch.int32)
        self.done = z(5 * c.n_layers + 1, torch.int32)
        if share is not None:
            self.tensors, self.wt = share.tensors, share.wt
        else:
            self._pack(weights)
        self.knobs = self.choices[0]
        self.extra_args = ()

    def _pack(self, weights) -> None:
        """Every matrix in the kernel's layout; the table of (rows, scales) pointers per matrix.  The
        per-kernel step's fp16 matrices are that layout already: they are shared, not copied (and
        held here, so that a later repacking there leaves these valid)."""
        import torch
        eng, c = self.eng, self.eng.cfg
        mm = getattr(eng, "mm", {})
        shared = eng.fmt == "fp16" and all(n in mm and len(mm[n].layers) == (1 if n == "cls" else c.n_layers)
                                           for n in (*MATS, "cls"))
        self.tensors, table = [], []

        def add(w):
            if eng.fmt == "fp16":
                t = (w.half().contiguous(),)      # the per-kernel step's own tensor where it is one already
            else:
                q, s = quantize_q4f16_1(w)
                t = (interleave_k(q).contiguous(), s.contiguous())     # the kernel's nibble order
            self.tensors.append(t)
            table.extend([t[0].data_ptr(), t[1].data_ptr() if len(t) > 1 else 0])

        if shared:
            for layer in range(c.n_layers):
                for name in MATS:
                    add(mm[name].layers[layer]["w"])
            add(mm["cls"].layers[0]["w"])
        else:
            for _, mats in step_matrices(weights, c, eng.dev):
                for w in mats.values():       # qkv, o, gate_up, down; then the classifier
                    add(w)
        self.wt = torch.tensor(table, dtype=torch.int64, device=eng.dev)
        torch.cuda.synchronize(eng.dev)

    @property
    def grid(self) -> int:
        return self.grids[self.knobs]

    @property
    def nsplit(self) -> int:
        return self.nsplits[self.knobs]

    def serve(self, knobs) -> None:
        if knobs not in self.kernels:
            raise ValueError(f"dataflow knobs {knobs.label()} were not built; built: "
                             f"{', '.join(k.label() for k in self.kernels)}")
        self.knobs = knobs

    def launch(self, stream) -> None:
        e, c = self.eng, self.eng.cfg
        i32 = np.int32
        lk = self.kernels[self.knobs][0]
        lk.launch(stream, (self.grid, 1, 1),
                  ptr(e.x), ptr(e.x16), ptr(e.ss), ptr(e.qkv), ptr(e.att), ptr(e.hb), ptr(e.logits), ptr(e.logits_f),
                  ptr(self.part), ptr(self.count), ptr(self.best_v), ptr(self.best_i), ptr(self.best_count),
                  ptr(self.done), ptr(e.token), ptr(e.pos_d), ptr(e.embedding), ptr(e.rope_cs), ptr(self.wt),
                  ptr(e.k_cache), ptr(e.v_cache), i32(c.dim), i32(c.hidden_dim), i32(c.n_layers), i32(c.n_heads),
                  i32(c.kv_dim), i32(c.head_size), i32(c.seq_len), i32(c.vocab_size), i32(self.nsplit),
                  np.float32(c.norm_eps), *self.extra_args)

    def describe(self) -> str:
        lk, res = self.kernels[self.knobs]
        return (f"decode step: dataflow, one persistent kernel a step ({self.grid} blocks, ring {self.knobs.label()}, "
                f"{res.registers} registers, attention in {self.nsplit} slice(s) a head)")
