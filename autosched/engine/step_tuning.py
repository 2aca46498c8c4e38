"""Step tuning: what an Engine decides by timing its own decode step, apart from what it serves.

The GEMV candidates of each matmul timed in the step (the fastest served), the L2 prefetch budget and
attention's prefetch, the one-knob descent (engine/descent.py), the dataflow step's knobs against the
per-kernel step, and where all of it is stored in the database so that the next engine of the same
model, device and candidates serves the winners without timing them.  A mixin of Engine: the methods
read and set the engine's matmuls, flags and buffers.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import json
import warnings

import numpy as np

from autosched.engine.dataflow import DataflowStep
from autosched.engine.descent import descend
from autosched.engine.matmul import Matmul, blocks_pair_rows, with_prefetch_budget
from autosched.engine.shapes import EPILOGUE, matmul_shapes
from autosched.measure.protocol import time_runs
from autosched.selection import Candidate, Timing, fastest, pick
from autosched.templates.dataflow import choices, source_digest
from autosched.templates.epilogue import pairs_rows

# torch is imported inside functions: optional / slow to import, a CPU install runs without it; templates_for
# is imported inside functions too: looked up at call time, as tests replace it on its module

# how a candidate timed in the step is named in its winner's source
IN_STEP, STEP_US = "in the decode step", "{:.0f} us a step"

# the tokens and tolerance the dataflow step's choices are checked with against the per-kernel step
# before they are timed: both sum in other orders (q4f16_1 in fp16 partials of eight products); the
# H200 measured 9e-4 (fp16) and 3.3e-3 (q4f16_1), bench/results/dataflow-q4-words-NVIDIA_H200-2026-11-28.json
FLOW_CHECK_TOKENS = (1, 17, 300)
FLOW_TOLERANCE = {"fp16": 5e-3, "q4f16_1": 2e-2}


class StepTuning:
    """Engine's timing in its own step: verification, descent, the dataflow step's knobs, stored choices."""

    def _step_timing(self) -> tuple[int, int] | None:
        """(steps, repetitions) a candidate is timed over in the step, or None where the context is
        too short to time a step meaningfully."""
        reps = 3
        steps = min(32, (self.cfg.seq_len - 6) // reps)
        return (steps, reps) if steps >= 4 else None

    def _verified(self) -> list[str]:
        """The matmuls the step verification times (more than one candidate), largest first."""
        order = sorted(self.candidates, key=lambda nm: -int(np.prod(matmul_shapes(self.cfg)[nm])))
        return [nm for nm in order if len(self.candidates[nm]) > 1]

    def _key(self, what: str, **more) -> str:
        """A database key of this engine's step: `what` it stores, everything a step verification
        depends on (device, model, format, launch options, timing and every candidate), and `more`."""
        fields = {"what": what, "device": self.info.key, "model": dataclasses.asdict(self.cfg), "format": self.fmt,
                  "pdl": self.pdl, "splits": self.splits, "timing": self._step_timing(),
                  "attn_prefetch": list(self.prefetch_choices), "prefetch_budget": list(self.budget_choices),
                  "candidates": {nm: [c.config for c in self.candidates[nm]] for nm in self._verified()}}
        return json.dumps({**fields, **more}, sort_keys=True)

    def _verification_key(self) -> str:
        return self._key("decode step")

    def _descent_key(self) -> str:
        """Where the step descent's moves are stored: everything the verification depended on."""
        return self._key("decode step descent")

    def _stored_descent(self, db) -> dict:
        """name -> Candidate of each matmul the stored step descent moved (none where no descent of
        this engine is stored)."""
        found = db.verification(self._descent_key()) if db is not None and self.descent else None
        if found is None:
            return {}
        when = datetime.date.fromtimestamp(found[1]).isoformat()
        out = {}
        for m in found[0]["moves"]:
            prior = out.get(m["name"]) or self.verification[m["name"]][0]
            out[m["name"]] = descended(prior, m["config"], m["change"], m["from_us"], m["us"], when)
        return out

    def _stored_verification(self, db):
        """(name -> [us a step per candidate], timestamp) stored for this engine, or None."""
        if db is None or not self._verified() or self._step_timing() is None:
            return None
        found = db.verification(self._verification_key())
        want = (set(self._verified()) | ({"attn_prefetch"} if len(self.prefetch_choices) > 1 else set())
                | ({"prefetch_budget"} if len(self.budget_choices) > 1 else set()))
        if found is None or set(found[0]) != want:
            return None
        return found

    def _step_winner(self, name: str, us: list, stored: float):
        """The fastest of matmul `name`'s candidates by `us` (a step each, as the database stored
        them at `stored`), its source saying so and when."""
        when = f", stored {datetime.date.fromtimestamp(stored).isoformat()}"
        return pick([Timing(c, u) for c, u in zip(self.candidates[name], us)], what=IN_STEP,
                    shown=STEP_US + when)

    def _verify_in_step(self, weights, builder, progress=None, db=None) -> dict:
        """name -> [(Candidate, us a step)]: each q4f16_1 matmul's candidates timed inside this
        engine's own step graph, one matmul at a time, largest first, the others as served; the
        fastest is served (its weights packed again if it is not the one already in place).  A step
        sees what an isolated graph of one kernel does not (the kernel before it, what it leaves in
        the L2): on the 7B model the gate/up config the isolated check chose was 3% slower a step
        than the tuner's own best (H100, 2026-11-23).  The times go to `db`; an engine that found
        them there (see _build) serves the stored winners from the start and times nothing.  A
        candidate that fails to build or run is skipped (its time None) and nothing is stored, so
        the next engine times again; where all fail, the one in place stays."""
        todo, timing = self._verified(), self._step_timing()
        if not todo or timing is None:
            return {}
        if self._stored_step is not None:
            times = self._stored_step[0]
            choices = {"attn_prefetch": self.prefetch_choices, "prefetch_budget": self.budget_choices}
            return {nm: list(zip(choices[nm] if nm in choices else self.candidates[nm], us))
                    for nm, us in times.items()}
        steps, reps = timing
        cands = self.candidates
        task = progress.add_task("timing GEMV configs in the step", total=sum(len(cands[nm]) for nm in todo) +
                                 len(self.prefetch_choices) - 1 + len(self.budget_choices) - 1) if progress else None
        out, times = {}, {}
        if len(self.budget_choices) > 1:
            # first, with each matmul's first candidate: how much each grid asks the L2 for before its
            # wait; the candidates are then timed as they will be served
            list(builder.build_many([with_prefetch_budget(m.spec, b) for b in self.budget_choices
                                     for m in self.mm.values()]))
            us = []
            for i, b in enumerate(self.budget_choices):
                self._set_prefetch_budget(b, builder)
                us.append(self._step_us(steps, reps))
                if task is not None and i:
                    progress.advance(task)
            self._set_prefetch_budget(self.budget_choices[int(np.argmin(us))], builder)
            times["prefetch_budget"] = us
            out["prefetch_budget"] = list(zip(self.budget_choices, us))
        # every candidate compiled in the pool before any timing
        list(builder.build_many([self._candidate(nm, c).spec for nm in todo for c in cands[nm]
                                 if c.config != self.mm[nm].choice.config]))
        for name in todo:
            winner, timed = fastest(cands[name], functools.partial(self._time_candidate, name, builder=builder,
                                                                   steps=steps, reps=reps, progress=progress,
                                                                   task=task),
                                    what=IN_STEP, shown=STEP_US, fallback=self.mm[name].choice, strict=True)
            us = [t.us for t in timed]
            times[name] = us
            self._serve(name, winner, weights, builder)
            out[name] = list(zip(cands[name], us))
        moves = self._descend(weights, builder, steps, reps, progress) if self.descent else []
        if len(self.prefetch_choices) > 1:
            # with the served configs: attention streaming the start of gate_up's weights into the L2,
            # or not (it pays on the 7B and may not on a model whose attention is short)
            us = []
            for b in self.prefetch_choices:
                self.attn_prefetch = b
                us.append(self._step_us(steps, reps))
                if task is not None and b:
                    progress.advance(task)
            self.attn_prefetch = self.prefetch_choices[int(np.argmin(us))]
            times["attn_prefetch"] = us
            out["attn_prefetch"] = list(zip(self.prefetch_choices, us))
        if db is not None and all(u is not None for us in times.values() for u in us):
            db.add_verification(self._verification_key(), times)
            if self.descent:
                db.add_verification(self._descent_key(), {"moves": [dataclasses.asdict(m) for m in moves]})
        self.descent_moves = moves
        self._graph = None
        self.reset()
        return out

    def _descend(self, weights, builder, steps: int, reps: int, progress=None) -> list:
        """engine/descent.py over the tuned matmuls, largest first, from the configs the
        verification served: each move served (its weights packed) with its source saying so."""
        from autosched.registry import templates_for
        names = sorted(self.candidates, key=lambda nm: -int(np.prod(matmul_shapes(self.cfg)[nm])))
        task = progress.add_task("walking GEMV configs one knob at a time in the step", total=None) if progress else None

        def space_of(nm):
            w = self.mm[nm].workload
            return templates_for(w)[0].space(w, self.info)

        def keep_of(nm):
            w = self.mm[nm].workload
            return (lambda c: blocks_pair_rows(w, c)) if pairs_rows(EPILOGUE[nm]) else None

        def cand(nm, c):
            return Candidate(self.mm[nm].choice.template, c, "one knob from the served config")

        def time_config(nm, c):
            return self._time_candidate(nm, cand(nm, c), builder, steps, reps, progress, task)

        def prepare(nm, configs):
            list(builder.build_many([self._candidate(nm, cand(nm, c)).spec for c in configs]))

        def serve(nm, c, move):
            self._serve(nm, descended(self.mm[nm].choice, c, move.change, move.from_us, move.us), weights, builder)

        return descend(names, lambda nm: self.mm[nm].choice.config, space_of, keep_of,
                       lambda: self._step_us(steps, reps), time_config, serve, prepare)

    def _candidate(self, name: str, choice):
        return Matmul(name, self.fmt, self.mm[name].n, self.mm[name].k, self.act, self.act, self.info,
                      pdl=self.pdl, choice=choice, epilogue=EPILOGUE[name], prefetch_budget=self.prefetch_budget)

    def _set_prefetch_budget(self, budget: int, builder) -> None:
        """Every matmul kernel compiled with L2 prefetch budget `budget` (their weights stay)."""
        self.prefetch_budget = budget
        for m in self.mm.values():
            m.set_prefetch_budget(budget, builder)

    def _time_candidate(self, name: str, choice, builder, steps: int, reps: int, progress, task) -> float:
        """us a step with `choice` serving matmul `name` (on random weights of its shape: the time
        does not depend on the values), the others as served."""
        import torch
        cur = self.mm[name]
        try:
            if choice.config == cur.choice.config:
                return self._step_us(steps, reps)
            trial = self._candidate(name, choice)
            trial.load(builder)
            trial.add_layer_copies(torch.randn((cur.n, cur.k), device=self.dev) / cur.k ** 0.5, len(cur.layers))
            self.mm[name] = trial
            try:
                return self._step_us(steps, reps)
            finally:
                self.mm[name] = cur
                trial.layers.clear()
                torch.cuda.empty_cache()
        finally:
            if task is not None:
                progress.advance(task)

    def _serve(self, name: str, choice, weights, builder) -> None:
        """Serve `choice` for matmul `name`: the one in place keeps its weights, another is loaded
        and the model's weights packed for it."""
        import torch
        cur = self.mm[name]
        if choice.config == cur.choice.config:
            cur.choice = choice
            return
        m = self._candidate(name, choice)
        m.load(builder)
        self.mm[name] = m
        del cur
        torch.cuda.empty_cache()
        self._pack(weights, [name])

    def _step_us(self, steps: int, reps: int) -> float:
        """Median microseconds a step of `steps` greedy graph replays, from a fresh context."""
        self._graph = None
        self.reset()
        self.step(1)
        self.decode(4)                  # captures the graph and warms it
        return time_runs(lambda: self.decode(steps), reps, steps)

    # -- the dataflow step or the per-kernel one ----------------------------------------------
    def _flow_key(self) -> str:
        """Where the step choice is stored: the per-kernel verification's fields (its configs), the
        dataflow step's choices and its source."""
        return self._key("decode step choice", dataflow=[k.label() for k in choices(self.cfg, self.fmt)],
                         dataflow_source=source_digest(), step=self.step_mode)

    def _choose_step(self, weights, builder, progress=None, db=None) -> None:
        """Build the dataflow step, time each of its knobs (and, for step="auto", the per-kernel
        step as verified) in this engine's own step, and serve the fastest.  The times go to `db`;
        an engine that finds them there serves the stored winner without timing."""
        timing = self._step_timing()
        stored = db.verification(self._flow_key()) if db is not None and timing is not None else None
        if stored is not None:
            self.flow_times = dict(stored[0])
            if self.step_mode == "auto" and min(self.flow_times, key=self.flow_times.get) == "kernels":
                return                  # the per-kernel step won here before: no second copy of the weights
        # time here: nothing stored, and graphs and a context long enough to time in
        time_now = stored is None and timing is not None and self.graphs_enabled
        if stored is None and not time_now and self.step_mode == "auto":
            return                      # nothing to choose by (no graphs, or too short a context)
        self.flow = DataflowStep(self, weights, builder)
        if time_now:
            self._drop_disagreeing_choices()
        if time_now and self.flow.choices:
            steps, reps = timing
            opts = [*(["kernels"] if self.step_mode == "auto" else []), *self.flow.choices]
            task = progress.add_task("timing the dataflow step's knobs in the step", total=len(opts)) if progress else None
            for o in opts:
                self.flow_served = o != "kernels"
                if self.flow_served:
                    self.flow.serve(o)
                self.flow_times[o if o == "kernels" else o.label()] = self._step_us(steps, reps)
                if task is not None:
                    progress.advance(task)
            if db is not None:
                db.add_verification(self._flow_key(), self.flow_times)
        by_label = {k.label(): k for k in self.flow.choices}
        timed = {k: us for k, us in self.flow_times.items() if k == "kernels" or k in by_label}
        # nothing timed: the default choice, or the per-kernel step where every choice disagreed
        fallback = self.flow.choices[0].label() if self.flow.choices else "kernels"
        best = min(timed, key=timed.get) if timed else fallback
        self.flow_served = best != "kernels"
        if self.flow_served:
            self.flow.serve(by_label[best])
        else:
            self.flow = None            # its packed weights and scratch go back to the allocator
        self._graph = None
        self.reset()

    def _step_logits(self, served: bool, tokens=FLOW_CHECK_TOKENS):
        """The logits of `tokens` fed from a fresh context by the dataflow step (served) or the
        per-kernel step, one row a token."""
        import torch
        self.flow_served = served
        self._graph = None
        self.reset()
        return torch.stack([self.step(t).float() for t in tokens])

    def _drop_disagreeing_choices(self) -> None:
        """A wrong kernel never wins: each dataflow choice's logits over a few steps against the
        per-kernel step's; a choice off by more than FLOW_TOLERANCE (max |diff| / max |logit|), or not
        finite, is dropped with a warning before anything is timed."""
        import torch
        ref = self._step_logits(False)
        scale = float(ref.abs().max()) or 1.0
        for k in list(self.flow.choices):
            self.flow.serve(k)
            got = self._step_logits(True)
            err = float((got - ref).abs().max()) / scale if bool(torch.isfinite(got).all()) else float("inf")
            if not err <= FLOW_TOLERANCE[self.fmt]:
                warnings.warn(f"the dataflow step {k.label()} disagrees with the per-kernel step (max |diff| / "
                              f"max |logit| = {err:.2e} over {len(FLOW_CHECK_TOKENS)} steps): not served")
                self.flow.choices.remove(k)
        self.flow_served = False

    def _times_note(self) -> str:
        if not self.flow_times:
            return ""
        return "; timed in the step: " + ", ".join(f"{k} {us:.0f} us" for k, us in self.flow_times.items())


def descended(prior, config: dict, change: str, from_us: float, us: float, when: str = ""):
    """The Candidate a step descent moved to from `prior` (engine/descent.py), its source saying so
    (and when it was stored, for one read back from the database)."""
    stored = f", stored {when}" if when else ""
    return Candidate(prior.template, config, f"{prior.source}; then one knob at a time in the decode step: "
                                             f"{change} ({us:.0f} us a step against {from_us:.0f}{stored})",
                     origin=prior.origin)
