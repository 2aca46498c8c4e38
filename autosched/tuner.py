"""The tuning loop: strategy -> render -> build (ahead, in a pool) -> runner -> database.

Every result is written to the database as it arrives; configs already there are not measured
again, so a killed run resumes where it stopped.
"""

from __future__ import annotations

import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from autosched import __version__
from autosched.database import Database
from autosched.device import nvrtc_version
from autosched.measure.result import Measurement
from autosched.search import STRATEGIES, make_strategy
from autosched.search.transfer import nearest_recordings, recorded_samples, recordings_of, scale_for
from autosched.space import SpaceUnion, config_hash

# templates_for is imported inside functions: looked up at call time, as tests replace it on its module


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
    elapsed_s: float = 0.0     # the search's measuring loop (what the time budget limits)
    wall_s: float = 0.0        # the whole run, its setup (space walk, the strategy's model) included
    total_tuning_s: float = 0.0   # all runs on this workload, from the database (set by callers)
    total_trials: int = 0
    best_template: str | None = None   # the template of best_config
    best_knobs: dict | None = None     # best_config without the "template" knob of a union
    built: int = 0                 # configs NVRTC compiled for this run (build-cache hits not counted)
    build_cpu_s: float = 0.0       # their compile time, summed over the build processes
    build_jobs: int = 0            # build processes
    build_wait_s: float = 0.0      # time the measuring side spent waiting for a binary (all GPUs)

    @property
    def measure_rate(self) -> float:
        """Configs measured per second of this run."""
        return self.measured_now / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def build_rate(self) -> float:
        """Configs the build pool compiles per second with all its processes busy: what NVRTC could
        feed the GPUs, to set beside measure_rate."""
        return self.built * self.build_jobs / self.build_cpu_s if self.build_cpu_s > 0 else 0.0


def versions(runner_name: str) -> dict:
    return {"autosched": __version__, "nvrtc": nvrtc_version(), "runner": runner_name}


class SearchSpace:
    """What a tuning run searches for one workload: the space of its one template, or the union of
    several templates' spaces with the template as a knob (`space.SpaceUnion`).  Results are stored
    per template with the template's own knobs, so a single-template run and its database rows are
    exactly what they were before unions existed.

    Of several templates, those whose space holds no config here (`empty`: split-K on a shape whose
    tiles fill the GPU already, wgmma on a GPU without it, a replay without a recording of it) are
    left out of the union (`searched` are the others): such a template has no default config to
    take its derived features from, and its measurements of other shapes would train the model on
    a template never proposed.  Its size is 0 and its name stays in `templates`."""

    def __init__(self, workload, templates, device, runner=None):
        self.templates = {t.family: t for t in templates}
        if not self.templates:
            raise ValueError(f"no template to tune {workload.key} with")
        self.spaces = {}        # template family -> its (pruned, maybe restricted) space
        for t in templates:
            sp = t.space(workload, device)
            if runner is not None and runner.partial:      # a replay searches only what it can answer
                sp = sp.restricted("measured in the recording",
                                   lambda c, f=t.family: runner.covers(workload.key, f, c))
            self.spaces[t.family] = sp
        self.empty = [f for f, sp in self.spaces.items() if next(iter(sp), None) is None]
        # all empty: nothing to search either way, and the union keeps its members' names
        members = {f: sp for f, sp in self.spaces.items() if f not in self.empty} or self.spaces
        self.searched = [self.templates[f] for f in members]
        self.union = len(self.spaces) > 1
        self.space = SpaceUnion(members) if self.union else next(iter(members.values()))
        self._sizes: dict[str, int] = {}
        self.workload, self.device = workload, device
        if self.union:      # every template's derived features, zero where a template has none
            self._derived_keys = sorted({k for t in self.searched if t.family not in self.empty
                                         for k in t.derived_features(t.default_config(workload, device),
                                                                     workload.params, device)})

    def size(self, family: str | None = None) -> int:
        """Configs in the searched space (or in one template's part of it), enumerated once: a
        space of tens of thousands takes seconds to walk."""
        if family is None:
            return sum(self.size(f) for f in self.spaces)
        if family not in self._sizes:
            self._sizes[family] = self.spaces[family].size()
        return self._sizes[family]

    def split(self, config: dict):
        """(template, its knobs) of a searched config."""
        if not self.union:
            return next(iter(self.templates.values())), config
        name, rest = self.space.split(config)
        return self.templates[name], rest

    def join(self, template, config: dict) -> dict:
        return self.space.join(template.family, config) if self.union else config

    def derived_features(self, config: dict, params: dict) -> dict:
        """The template's derived features; in a union, every member's columns (zero where a template
        has none), so that the cost model's rows are all of one length."""
        t, rest = self.split(config)
        d = t.derived_features(rest, params, self.device)
        return {k: d.get(k, 0.0) for k in self._derived_keys} if self.union else d

    def empty_notes(self) -> list[str]:
        """Why each template of `empty` has no config here: the rule that removed the most."""
        out = []
        for f in self.empty:
            rules = self.spaces[f].prune_report()
            why = f" (most removed by: {max(rules, key=lambda r: r[1])[0]})" if rules else ""
            out.append(f"{f} has no config for this shape{why}: not searched")
        return out


def _templates(workload, templates) -> list:
    if templates is None:
        from autosched.registry import templates_for
        return templates_for(workload)
    return [templates] if hasattr(templates, "render") else list(templates)


def tune(workload, templates, runner, db: Database, *, strategy: str = "exhaustive",
         trials: int | None = None, time_budget_s: float | None = None, builder=None,
         seed: int = 0, batch: int = 64, search: SearchSpace | None = None, recordings=None,
         on_result: Callable[[dict, Measurement, TuneResult], None] | None = None) -> TuneResult:
    """Search `workload`'s schedules with `runner`, writing every result to `db`.

    templates: a Template, several (searched as one space, the template a knob), or None for every
    template the registry has for the workload.  The result's best_config carries a "template" key
    only when several were searched; `best_template` names the winner's either way.
    search: the SearchSpace of these templates for this runner, where the caller built it already
    (api.tune sizes it for its plan), so the space is not built and walked again.
    recordings: where the model-guided strategies look for recordings of this GPU model to learn
    from (paths or Recordings; default the shipped ones)."""
    t_start = time.perf_counter()
    templates = _templates(workload, templates)
    device = runner.device_info
    if not runner.partial:
        # what the device query told of this GPU, kept beside its rows: a cost model of several GPU
        # models reads them with these figures (search/transfer.py across_gpus); a replay measures nothing
        db.note_device(device)
    search = search or SearchSpace(workload, templates, device, runner)
    searched = search.searched
    space = search.space
    n_space = search.size()
    res = TuneResult(workload.key, device.key, "+".join(search.templates), runner.name, n_space)
    # measurements count only under the build this runner measures (an edited .cuh is a new build)
    builds = {t.family: runner.build_id(t) for t in templates}
    done = {}       # hash of the searched config -> database record
    for t in templates:
        for r in db.measured(workload.key, device.key, t.family, build=builds[t.family]).values():
            cfg = search.join(t, r.config)
            done[config_hash(cfg)] = dataclasses.replace(r, config=cfg)
    context, held = {}, []
    if strategy in STRATEGIES and STRATEGIES[strategy].learns:
        # what the database holds of this space: never proposed again, so taken as resumed below
        held = [r for r in done.values() if space.contains(r.config)]
        # everything these templates have measured on this GPU trains the model; what this workload
        # already has is not proposed again
        prior = [(search.join(t, c), p, us) for t in searched
                 for c, p, us in db.samples(device.key, t.family, build=builds[t.family])]
        # and every recording of these templates taken on this GPU model, other shapes included, so
        # a shape never measured starts from a model (search/transfer.py); a replay answers from its
        # own shape's recording, which the model must not have seen beforehand
        own = (workload.key,) if runner.partial else ()
        prior += [(search.join(t, c), p, us) for t in searched
                  for c, p, us in recorded_samples(recordings_of(device.key, t.family, recordings, own))]
        if not prior:
            # a GPU nothing was measured on: the nearest GPU's recordings start the search instead
            prior = [(search.join(t, c), p, us) for t in searched
                     for c, p, us in recorded_samples(nearest_recordings(device, t.family, recordings, own))]
        context = {"workload_params": workload.params, "prior": prior, "exclude": set(done),
                   "derive": search.derived_features, "scale": scale_for(workload.name)}
        # these strategies never propose what is already measured, so the best known so far comes
        # from the database: a resumed run reports the best over every run, not only its own
        known = [r for r in held if r.measurement.ok]
        if known:
            top = min(known, key=lambda r: r.measurement.median_us)
            res.best, res.best_config = top.measurement, top.config
    strat = make_strategy(strategy, space, seed, **context)
    if trials is not None and trials < 0:
        raise ValueError(f"trials must be >= 0, got {trials}")
    limit = n_space if trials is None else min(trials, n_space)
    vers = versions(runner.name)
    t0 = time.perf_counter()
    # the worker makes the shape's inputs and reference while the first configs compile
    runner.prepare_ahead(workload.key)
    if context:
        # these strategies never propose a measured config again, so a run that resumes an
        # interrupted one (or repeats a finished one) counts what the database holds against its
        # budget up front: the same command run again finishes the budget, it does not start anew
        held.sort(key=lambda r: r.measurement.median_us if r.measurement.ok else float("inf"))
        for r in held[:limit]:
            res.trials += 1
            res.resumed += 1
            res.statuses[r.measurement.status.value] = res.statuses.get(r.measurement.status.value, 0) + 1
            if on_result:
                on_result(r.config, r.measurement, res)
        limit -= min(len(held), limit)

    best_seq = -1       # proposal number of the best: a database best (seq -1) wins every tie

    def account(cfg, m, seq, observe=True):
        nonlocal best_seq
        res.trials += 1
        res.statuses[m.status.value] = res.statuses.get(m.status.value, 0) + 1
        if observe:
            strat.observe(cfg, m)
        # a tie goes to the config proposed first, not to the first to arrive: a runner measuring on
        # several GPUs (or Ray actors) answers out of order and must still pick what one GPU picks
        if m.ok and (res.best is None or m.median_us < res.best.median_us
                     or (m.median_us == res.best.median_us and seq < best_seq)):
            res.best, res.best_config, best_seq = m, cfg, seq
        if on_result:
            on_result(cfg, m, res)

    proposed = 0        # configs handed out by the strategy: in flight ones count against the limit

    def next_batch():
        """Propose a batch and start the builds of its configs the database does not hold, so they
        compile while the batch before them is measured: (fresh, their proposal numbers, build
        items, resumed), resumed being the (config, record, number) the database answers, which the
        caller accounts for (this runs beside the measuring thread, and touches nothing it does);
        None when there is nothing more to propose."""
        nonlocal proposed
        resumed = []
        while proposed < limit:
            if time_budget_s is not None and time.perf_counter() - t0 > time_budget_s:
                break
            proposal = strat.propose(min(batch, limit - proposed))
            if not proposal:
                break
            first = proposed
            proposed += len(proposal)
            fresh, seqs = [], []
            for j, cfg in enumerate(proposal):
                rec = done.get(config_hash(cfg))
                if rec is not None:
                    resumed.append((cfg, rec, first + j))
                else:
                    fresh.append(cfg)
                    seqs.append(first + j)
            if fresh:
                items = []
                for i, c in enumerate(fresh):
                    t, knobs = search.split(c)
                    spec = t.render(workload, knobs, device)
                    # a builder given to a replay compiles too (tune --build): NVRTC checked on the CPU
                    binary = builder.submit(spec) if builder is not None else None
                    items.append((i, spec, binary))
                return fresh, seqs, items, resumed
        return ([], [], [], resumed) if resumed else None

    def take_resumed(got):
        """Account for the configs a batch found in the database; got itself, None at the end."""
        if got is not None:
            for cfg, rec, seq in got[3]:
                res.resumed += 1
                runner.observe(workload.key, rec.measurement)   # a screening runner learns the best so far
                account(cfg, rec.measurement, seq)
            if not got[0]:
                return None     # only resumed configs were left: the strategy has nothing more
        return got

    def measure_batch(fresh, seqs, items) -> dict:
        """Measure a batch, storing and accounting each result as it arrives: {index: measurement}.
        The strategy learns them only afterwards, in proposal order (it is proposing meanwhile), so
        what it proposes does not depend on the order results arrived in."""
        last = time.perf_counter()
        arrived = {}
        for i, m in runner.measure_stream(items):
            now = time.perf_counter()
            t, knobs = search.split(fresh[i])
            db.add(workload.key, device.key, t.family, knobs, m, vers, cost_s=now - last, build=builds[t.family])
            last = now
            res.measured_now += 1
            arrived[i] = m
            account(fresh[i], m, seqs[i], observe=False)
        return arrived

    # The next batch is proposed (its model one batch behind) in a thread while this one is measured:
    # a model-guided proposal over a space of tens of thousands takes about a second, which the GPU
    # and NVRTC waited through (bench/results/tuner-overhead-cpu-2026-11-28.json)
    proposer = ThreadPoolExecutor(1, thread_name_prefix="autosched-propose")
    try:
        batch_now = take_resumed(next_batch())
        while batch_now is not None:
            fresh, seqs, items, _ = batch_now
            ahead = proposer.submit(next_batch)
            try:
                arrived = measure_batch(fresh, seqs, items)
            finally:
                batch_next = ahead.result()      # the strategy is the measuring thread's again
            for i in sorted(arrived):
                strat.observe(fresh[i], arrived[i])
            for _, _, binary in items:
                _count_build(res, binary)
            if time_budget_s is not None and time.perf_counter() - t0 > time_budget_s:
                break           # the batch proposed ahead is dropped: a time budget overruns by at most one batch
            batch_now = take_resumed(batch_next)
    finally:
        proposer.shutdown(wait=True)
    now = time.perf_counter()
    res.elapsed_s, res.wall_s = now - t0, now - t_start
    if builder is not None:
        res.build_jobs = getattr(builder, "workers", 1)
    res.build_wait_s = getattr(runner, "build_wait_s", 0.0)
    if res.best_config is not None:
        t, knobs = search.split(res.best_config)
        res.best_template, res.best_knobs = t.family, knobs
    return res


def _count_build(res: TuneResult, binary) -> None:
    """Add a finished build (a Binary, or a done future of one) to the run's NVRTC figures."""
    if binary is None or (hasattr(binary, "done") and not (binary.done() and binary.exception() is None)):
        return
    b = binary.result() if hasattr(binary, "result") else binary
    if not getattr(b, "cached", True):
        res.built += 1
        res.build_cpu_s += b.compile_s


def measure_configs(workload, template, runner, configs: list[dict], builder=None) -> list[Measurement]:
    """Measure given configs (no search, no database): for benchmarks and verification."""
    device = runner.device_info
    specs = [template.render(workload, c, device) for c in configs]
    # as in tune: a builder given with a replay compiles too (tune --build)
    items = [(i, s, builder.submit(s) if builder is not None else None) for i, s in enumerate(specs)]
    out: list[Measurement | None] = [None] * len(specs)
    for i, m in runner.measure_stream(items):
        out[i] = m
    return out  # type: ignore[return-value]


