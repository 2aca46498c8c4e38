"""The tuning loop: strategy -> render -> build (ahead, in a pool) -> runner -> database.

Every result is written to the database as it arrives; configs already there are not measured
again, so a killed run resumes where it stopped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from autosched import __version__
from autosched.database import Database
from autosched.measure.result import Measurement
from autosched.search import make_strategy
from autosched.space import config_hash


@dataclass
class TuneResult:
    workload_key: str
    device_key: str
    template: str
    runner: str
    space_size: int
    best_config: dict | None = None
    best: Measurement | None = None
    trials: int = 0            # configs evaluated in this run's budget, resumed ones included
    measured_now: int = 0      # configs this run sent to the runner
    resumed: int = 0           # configs found already in the database
    statuses: dict = field(default_factory=dict)
    elapsed_s: float = 0.0
    total_tuning_s: float = 0.0   # all runs on this workload, from the database (set by callers)
    total_trials: int = 0


def versions(runner_name: str) -> dict:
    from autosched.device import nvrtc_version
    return {"autosched": __version__, "nvrtc": nvrtc_version(), "runner": runner_name}


def tune(workload, template, runner, db: Database, *, strategy: str = "exhaustive",
         trials: int | None = None, time_budget_s: float | None = None, builder=None,
         seed: int = 0, batch: int = 64,
         on_result: Callable[[dict, Measurement, TuneResult], None] | None = None) -> TuneResult:
    device = runner.device_info
    space = template.space(workload, device)
    if hasattr(runner, "covers"):      # replay: search only what the recording can answer
        space = space.restricted("measured in the recording", runner.covers)
    n_space = space.size()
    res = TuneResult(workload.key, device.key, template.family, runner.name, n_space)
    build = runner.build_id(template)
    done = db.measured(workload.key, device.key, template.family, build=build)
    context = {}
    if strategy in ("model", "evolutionary", "evolutionary-model"):
        # everything this template has measured on this GPU trains the model; what this workload
        # already has is not proposed again
        context = {"workload_params": workload.params, "prior": db.samples(device.key, template.family, build=build),
                   "exclude": set(done),
                   "derive": lambda cfg, params: template.derived_features(cfg, params, device)}
        # these strategies never propose what is already measured, so the best known so far comes
        # from the database: a resumed run reports the best over every run, not only its own
        known = [r for r in done.values() if r.measurement.ok and space.contains(r.config)]
        if known:
            top = min(known, key=lambda r: r.measurement.median_us)
            res.best, res.best_config = top.measurement, top.config
    strat = make_strategy(strategy, space, seed, **context)
    if trials is not None and trials < 0:
        raise ValueError(f"trials must be >= 0, got {trials}")
    limit = n_space if trials is None else min(trials, n_space)
    vers = versions(runner.name)
    t0 = time.perf_counter()

    def account(cfg, m):
        res.trials += 1
        res.statuses[m.status.value] = res.statuses.get(m.status.value, 0) + 1
        strat.observe(cfg, m)
        if m.ok and (res.best is None or m.median_us < res.best.median_us):
            res.best, res.best_config = m, cfg
        if on_result:
            on_result(cfg, m, res)

    proposed = 0        # configs handed out by the strategy: in flight ones count against the limit

    def next_batch():
        """Propose a batch, answer resumed configs from the database, and start the builds of the
        rest at once, so they compile while the batch before them is measured."""
        nonlocal proposed
        while proposed < limit:
            if time_budget_s is not None and time.perf_counter() - t0 > time_budget_s:
                return None
            proposal = strat.propose(min(batch, limit - proposed))
            if not proposal:
                return None
            proposed += len(proposal)
            fresh = []
            for cfg in proposal:
                rec = done.get(config_hash(cfg))
                if rec is not None:
                    res.resumed += 1
                    if hasattr(runner, "observe"):      # a screening runner learns the best so far
                        runner.observe(workload.key, rec.measurement)
                    account(cfg, rec.measurement)
                else:
                    fresh.append(cfg)
            if fresh:
                items = []
                for i, c in enumerate(fresh):
                    spec = template.render(workload, c, device)
                    binary = builder.submit(spec) if (builder is not None and runner.needs_binary) else None
                    items.append((i, spec, binary))
                return fresh, items
        return None

    batch_now = next_batch()
    while batch_now is not None:
        fresh, items = batch_now
        # the next batch is proposed before this one's results are in (its model is one batch
        # behind), which keeps NVRTC and the GPU busy at the same time
        batch_next = next_batch()
        last = time.perf_counter()
        for i, m in runner.measure_stream(items):
            now = time.perf_counter()
            db.add(workload.key, device.key, template.family, fresh[i], m, vers, cost_s=now - last, build=build)
            last = now
            res.measured_now += 1
            account(fresh[i], m)
        if time_budget_s is not None and time.perf_counter() - t0 > time_budget_s:
            break           # the batch proposed ahead is dropped: a time budget overruns by at most one batch
        batch_now = batch_next
    res.elapsed_s = time.perf_counter() - t0
    return res


def measure_configs(workload, template, runner, configs: list[dict], builder=None) -> list[Measurement]:
    """Measure given configs (no search, no database): for benchmarks and verification."""
    device = runner.device_info
    specs = [template.render(workload, c, device) for c in configs]
    items = [(i, s, builder.submit(s) if (builder is not None and runner.needs_binary) else None)
             for i, s in enumerate(specs)]
    out: list[Measurement | None] = [None] * len(specs)
    for i, m in runner.measure_stream(items):
        out[i] = m
    return out  # type: ignore[return-value]


