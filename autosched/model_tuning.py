"""tune-model: every tunable kernel a model's decode step launches, tuned in one run under one budget.

    run = autosched.tune_model("random:llama3.2-1b", formats=["q4f16_1"], budget_min=10)
    for r in run.rows: print(r.shape.workload.key, r.share, r.trials, r.speedup, r.source)

The plan (engine/plan.py) lists the step's kernels and splits the budget over the tunable shapes
by their share of the step.  Each shape is then tuned (api.tune: the model-guided search, which
starts from everything measured on this GPU model) for its part of the budget, the shapes with the
largest share first.  Without a GPU the run replays the shipped recordings: a shape no recording
holds cannot be measured, and its row says so (and which config it is served meanwhile: the cost
model's prediction, or the default).  On a GPU the engine is built afterwards for each format with
the configs just stored: its own step verification times the best candidates of every matmul in
the step and stores its winners, which `generate` and the decode bench then serve.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from autosched import api
from autosched.build import Builder
from autosched.database import DatabaseError
from autosched.device import gpu_count
from autosched.engine.engine import Engine
from autosched.engine.plan import Plan, Shape, step_plan
from autosched.models.quantize import FORMATS
from autosched.selection import rank

# torch is imported inside functions: optional / slow to import, a CPU install runs without it


@dataclass
class ShapeRun:
    """One tunable shape's part of the run."""
    shape: Shape
    status: str = "pending"      # "tuned", "not recorded", "nothing passed", "failed"
    trials: int = 0
    seconds: float = 0.0
    best_us: float | None = None
    default_us: float | None = None
    source: str = ""             # where the numbers came from (GPU, a recording) or what serves the shape
    note: str = ""

    @property
    def speedup(self) -> float | None:
        """The default's time over the best's (how much faster tuning made the shape)."""
        if self.best_us and self.default_us:
            return self.default_us / self.best_us
        return None


@dataclass
class ModelTuned:
    plan: Plan
    model: str
    runner: str                  # "gpu" or "replay"
    rows: list[ShapeRun] = field(default_factory=list)
    seconds: float = 0.0
    verification: dict = field(default_factory=dict)   # format -> [engine.describe() lines] (GPU)
    tokens_per_s: dict = field(default_factory=dict)    # format -> tokens/s of the verified engine (GPU)

    @property
    def untuned(self) -> list[ShapeRun]:
        return [r for r in self.rows if r.status != "tuned"]


def tune_model(model: str, *, formats=("q4f16_1",), budget_min: float = 10.0, runner: str = "auto", db=None,
               seed: int = 0, gpus: list[int] | None = None, verify: bool = True, on_plan=None, on_shape=None, on_result=None, on_done=None):
    """Tune every kernel shape the decode engine launches for `model` (a llama2.c .bin, a Hugging
    Face directory or random:NAME) in each weight format of `formats`, within `budget_min` minutes
    split by each kernel's share of the step; on a GPU the engine then verifies the stored configs
    in its own step (`verify`).  gpus: GPU ids to measure on (default every GPU here).  Returns a
    ModelTuned."""
    formats = [formats] if isinstance(formats, str) else list(formats)
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise api.AutoschedError(f"unknown weight format {', '.join(map(repr, bad)) or '(none given)'}; "
                             f"choose from {', '.join(FORMATS)}")
    if not (isinstance(budget_min, (int, float)) and 0 < budget_min < float("inf")):
        raise api.AutoschedError(f"the budget must be a number of minutes above 0, got {budget_min!r}")
    if runner not in ("auto", "gpu", "replay"):
        raise api.AutoschedError(f"tune-model runs on runner auto, gpu or replay, not {runner!r}")
    cfg = api.model_config(model)
    return tune_model_config(model, cfg, formats, 60.0 * budget_min, runner=runner, db=db, seed=seed, gpus=gpus, verify=verify,
               load_weights=lambda: api.load_model(model)[1], on_plan=on_plan, on_shape=on_shape,
               on_result=on_result, on_done=on_done)


def tune_model_config(model: str, cfg, formats, budget_s: float, *, runner: str = "auto", db=None, seed: int = 0,
               gpus: list[int] | None = None, verify: bool = True, load_weights: Callable | None = None,
               on_plan: Callable[[Plan, str], None] | None = None,
               on_shape: Callable[[ShapeRun, object], None] | None = None,
               on_result: Callable | None = None,
               on_done: Callable[[ShapeRun], None] | None = None) -> ModelTuned:
    """Tune every tunable shape of `cfg`'s decode step in `formats` within `budget_s` seconds.
    on_plan(plan, runner) once; for each shape on_shape(row, api.Plan) when its search starts,
    on_result(config, Measurement, TuneResult) per config, on_done(row) when it ends.
    load_weights() -> weights, for the engine's verification on a GPU (verify)."""
    plan = step_plan(cfg, formats, budget_s)
    kind = runner if runner != "auto" else ("gpu" if gpu_count() > 0 else "replay")
    out = ModelTuned(plan, model, kind)
    if on_plan:
        on_plan(plan, kind)
    t_start = time.perf_counter()
    with api._database(db) as database:
        # on the GPU every shape is tuned through one runner and one build pool: a new pair a shape
        # spent seconds of each shape's share starting GPU workers and NVRTC processes
        shared_runner, builder = _open_shared(api, kind, gpus)
        try:
            for shape in plan.shapes:
                row = ShapeRun(shape)
                out.rows.append(row)
                w = shape.workload
                # what was spent beyond their budgets by the shapes before is taken from the rest
                left = budget_s - (time.perf_counter() - t_start)
                later = sum(s.budget_s for s in plan.shapes[len(out.rows) - 1:])
                share_s = max(1.0, left * shape.budget_s / later) if later > 0 else 1.0
                t0 = time.perf_counter()
                try:
                    run = api.tune(w, runner=shared_runner or kind, builder=builder, db=database, strategy="model",
                                   time_s=share_s, seed=seed, gpus=None if shared_runner else gpus,
                                   on_start=(lambda p, row=row: on_shape(row, p)) if on_shape else None,
                                   on_result=on_result)
                except DatabaseError:
                    raise           # the file, not this shape: every later shape would fail alike
                except api.AutoschedError as e:
                    if kind != "replay" or "no recording" not in str(e):
                        row.status, row.note = "failed", str(e)
                    else:
                        served = rank(w, api.target_device(w), database)[0]
                        row.status = "not recorded"
                        row.source = f"served {served.source.split(' (')[0]}"
                        row.note = "no recording of this shape: a replay cannot measure it (tune it on a GPU)"
                    row.seconds = time.perf_counter() - t0
                    if on_done:
                        on_done(row)
                    continue
                res = run.result
                row.seconds, row.trials = time.perf_counter() - t0, res.trials
                if res.best is None:
                    row.status, row.note = "nothing passed", f"statuses {res.statuses}"
                else:
                    row.status, row.best_us = "tuned", res.best.median_us
                    row.default_us = run.default.median_us if run.default is not None and run.default.ok else None
                    row.source = (f"replay of {res.best.source.split(':', 1)[1]}" if run.replayed
                                  else f"measured on {run.plan.device.name}")
                if on_done:
                    on_done(row)
        finally:
            for x in (shared_runner, builder):
                if x is not None:
                    x.close()
        if kind == "gpu" and verify and load_weights is not None:
            _verify_in_engines(out, database, load_weights)
    out.seconds = time.perf_counter() - t_start
    return out


def _open_shared(api, kind: str, gpus):
    """(runner, builder) open for every shape of a GPU run (the pool started beside the workers); (None,
    None) elsewhere, where each shape's api.tune opens what it needs."""
    if kind != "gpu":
        return None, None
    builder = Builder().start()
    try:
        return api.open_runner("gpu", gpus=gpus)[0], builder
    except BaseException:
        builder.close()
        raise


def _verify_in_engines(out: ModelTuned, db, load_weights) -> None:
    """Build the engine of each format with what was stored: its step verification times every
    matmul's best candidates inside the step and stores the winners; a short greedy decode gives
    its tokens/s."""
    import torch

    weights = load_weights()
    for fmt in out.plan.formats:
        eng = Engine(out.plan.cfg, weights, fmt, db=db, reverify=True)
        out.verification[fmt] = eng.describe(out.model)
        steps = min(64, out.plan.cfg.seq_len - 2)
        eng.reset()
        eng.step(1)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        eng.decode(steps)
        torch.cuda.synchronize()
        out.tokens_per_s[fmt] = steps / (time.perf_counter() - t0)
        del eng
        torch.cuda.empty_cache()
