"""One tuning run for a whole range of M (DietCode): sketches -> probes -> micro-kernel cost model ->
evolutionary search -> selection -> verification -> decision tree.

    result = tune_dynamic(dw, HgemmDynTemplate(), runner, db)
    result.dispatcher(100)          # index of the micro-kernel for M = 100
    result.verification             # every tuning instance measured with its selected kernel

Seeds: with the first round's picks the rule-based configs that ops.hgemm serves over the range by
default (sketch.seed_kernels: the templates' ladders) are measured like any micro-kernel, in the same
batch of builds and probes (one round trip of NVRTC and the GPU, not two), so the search goes on from
the known-good kernels, and they set selection's floor.

Rounds: the population (jointly sampled sketches, then their mutations) is ranked by what the
ProbeModel predicts it would add to the instances' weighted throughput, each instance's as a share of
its best so far (so that small Ms, whose TFLOP/s are tiny, weigh as much as large ones); the best few
not yet measured are measured (two probes each) and the models refit.  Then the fewest measured
micro-kernels that serve the instances (greedy, each added while it raises the weighted share of the
best predicted throughput; then, whatever that costs in kernels, until no instance is predicted slower
than the seed its ladder serves it with) are selected, each instance is measured with its kernel
(predictions off by more than `tolerance` are reported), the correction is fitted on those
measurements, and a decision tree learns M -> kernel over the whole range.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

import numpy as np

from autosched.dynamic import sketch
from autosched.dynamic.cost_model import MicroKernelCostModel, ProbeModel
from autosched.dynamic.dispatch import Dispatcher, fit_tree, tree_nodes
from autosched.dynamic.measurer import MicroKernel, measure_pairs
from autosched.dynamic.workload import DynamicWorkload
from autosched.space import config_hash
from autosched.tuner import versions

TOLERANCE = 0.10
MAX_TREE_POINTS = 4096


@dataclass
class DynamicResult:
    workload: object                      # DynamicWorkload
    device_key: str
    runner: str
    template: str
    build: str
    kernels: list[MicroKernel]            # the selected micro-kernels, dispatcher labels index them
    measured: int                         # micro-kernels probed in all
    verification: list[dict]              # per instance: M, kernel, predicted_us, measured_us, error, flagged
    dispatcher: Dispatcher
    elapsed_s: float = 0.0
    measurements: int = 0                 # runner calls (probes and verification)
    history: list[dict] = field(default_factory=list)   # per round: measured, best weighted score
    seeds: int = 0                        # of `measured`, the rule-based seeds (sketch.seed_kernels)
    artifact: object = None               # where front.tune_dynamic saved it (a Path); not in the JSON
    # seconds by phase (probes: builds and probe timings, the seeds' with the first round's; search:
    # the models' fits and the evolution; verify: the instances' builds and timings; tree)
    phase_s: dict = field(default_factory=dict)

    @property
    def flagged(self) -> list[dict]:
        return [v for v in self.verification if v["flagged"]]

    def to_json(self) -> dict:
        return {"workload": self.workload.to_json(), "key": self.workload.key, "device_key": self.device_key,
                "runner": self.runner, "template": self.template, "build": self.build,
                "kernels": [k.to_json() for k in self.kernels], "measured": self.measured,
                "verification": self.verification, "dispatcher": self.dispatcher.to_json(),
                "elapsed_s": self.elapsed_s, "measurements": self.measurements, "history": self.history,
                "seeds": self.seeds, "phase_s": self.phase_s}

    @classmethod
    def from_json(cls, d: dict) -> "DynamicResult":
        return cls(DynamicWorkload.from_json(d["workload"]), d["device_key"], d["runner"], d["template"],
                   d["build"], [MicroKernel.from_json(k) for k in d["kernels"]], d["measured"], d["verification"],
                   Dispatcher.from_json(d["dispatcher"]), d.get("elapsed_s", 0.0), d.get("measurements", 0),
                   d.get("history", []), d.get("seeds", 0), phase_s=d.get("phase_s", {}))


def coverage(P: np.ndarray, weights) -> float:
    """Weighted mean over instances of the best throughput of the rows in P, as a share of each
    instance's best over all rows given (1: nothing lost)."""
    return float(np.dot(weights, P.max(axis=0) / np.maximum(P.max(axis=0), 1e-30)))


def select(P: np.ndarray, weights, max_kernels: int, min_gain: float = 0.002, floor=None) -> list[int]:
    """Greedy: rows of P (kernels x instances throughput) whose best per instance keeps the weighted
    share of each instance's best highest; stops at `max_kernels` or when a kernel adds < min_gain.
    `floor` (per instance, optional): then rows are added, past max_kernels if need be, until every
    instance's best chosen throughput is at least its floor (each the row lifting the most weight of
    instances still short to their floor; a floor no row reaches is ignored)."""
    best = P.max(axis=0)
    w = np.asarray(weights)
    chosen: list[int] = []
    cur = np.zeros(P.shape[1])
    score = 0.0
    while len(chosen) < max_kernels:
        gains = [(float(np.dot(w, np.maximum(cur, P[i]) / best)), i) for i in range(len(P)) if i not in chosen]
        if not gains:
            break
        s, i = max(gains)
        if chosen and s - score < min_gain:
            break
        chosen.append(i)
        cur = np.maximum(cur, P[i])
        score = s
    if floor is not None:
        floor = np.minimum(np.nan_to_num(np.asarray(floor, dtype=float), nan=0.0), best)
        while True:
            short = cur < floor
            if not short.any():
                break
            lifts = [(float(np.dot(w, m)) + 1e-9 * float(m.sum()), i) for i in range(len(P)) if i not in chosen
                     for m in [short & (P[i] >= floor)]]
            _, i = max(lifts)
            chosen.append(i)
            cur = np.maximum(cur, P[i])
    return chosen


def _key(family: str, cfg: dict) -> str:
    return f"{family}:{config_hash(cfg)}"


def ladder_floor(seeded, good, P: np.ndarray, insts) -> np.ndarray | None:
    """Per instance, the predicted throughput (a row of P, whose rows are `good`) of the seed that
    serves it on its template's ladder, the best over templates; 0 where no measured seed serves it.
    None without seeds."""
    if not seeded:
        return None
    row = {_key(mk.family, mk.config): i for i, mk in enumerate(good)}
    floor = np.zeros(len(insts))
    for fam, cfg, spans in seeded:
        i = row.get(_key(fam, cfg))
        if i is None:
            continue            # failed to measure: sets no floor
        for j, M in enumerate(insts):
            if any(a <= M <= b for a, b in spans):
                floor[j] = max(floor[j], P[i, j])
    return floor


def verified_row(M: int, weight: float, kernel: int, predicted_us: float, m, tolerance: float) -> dict:
    """The verification row of instance M measured (`m`) with `kernel`, flagged where the measurement
    failed or is more than `tolerance` off the prediction."""
    us = m.median_us if m.ok else float("nan")
    err = us / predicted_us - 1.0 if m.ok else float("nan")
    return {"M": M, "weight": float(weight), "kernel": kernel, "predicted_us": float(predicted_us),
            "measured_us": float(us), "error": float(err), "status": m.status.value,
            "flagged": bool((not m.ok) or abs(err) > tolerance)}


def _measured_us(row: dict) -> float:
    return row["measured_us"] if row["status"] == "ok" else float("inf")


def reselect(verification, assign, pred, measure, kernels, insts, obs, tolerance) -> int:
    """A flagged instance whose kernel measured slower than another selected kernel is now predicted to
    run (`pred`: the model corrected by the verification's measurements) is measured with that kernel
    too (`measure`: {instance index: Measurement} of (index, kernel) pairs), and served by whichever
    measured faster: its verification row then names the kernel served, with the first one's figures
    under "replaced".  So a kernel the model got wrong at an instance (a second tile row of one valid
    row predicted far faster than it ran) does not stay the label of that instance, which the tree
    weighs heavily, unless nothing measured beats it.  Updates `verification`, `assign`
    and `obs` in place; returns the measurements made."""
    tries = {}
    for j, v in enumerate(verification):
        if not v["flagged"] or len(kernels) < 2:
            continue
        alt = min((k for k in range(len(kernels)) if k != assign[j]), key=lambda k: pred[k, j])
        if pred[alt, j] < _measured_us(v):
            tries[j] = alt
    if not tries:
        return 0
    meas = measure(tries.items())
    for j, k in tries.items():
        m, v = meas[j], verification[j]
        if not m.ok:
            continue
        obs.append((kernels[k], insts[j], m.median_us))
        if m.median_us < _measured_us(v):
            first = {key: v[key] for key in ("kernel", "predicted_us", "measured_us", "error", "status")}
            verification[j] = {**verified_row(insts[j], v["weight"], k, pred[k, j], m, tolerance), "replaced": first}
            assign[j] = k
    return len(tries)


def tune_dynamic(dw, template, runner, db=None, *, rounds: int = 4, per_round: int = 12, population: int = 64,
                 generations: int = 3, max_kernels: int = 6, seed: int = 0, builder=None, local_pad=(1, 0),
                 tolerance: float = TOLERANCE, on_progress=None, seeds: bool = True,
                 row_probe: bool = True) -> DynamicResult:
    """`template`: one Template or a list (hgemm_dyn and HgemmWgmmaDynTemplate): the template is then
    a sketch dimension, each micro-kernel carries its family, and selection and the tree mix them.
    `seeds`: measure the templates' rule-based ladder configs first (besides the sampled sketches)
    and select no instance slower than its ladder's kernel predicts.
    `row_probe`: each micro-kernel probed on the range's smallest real shape too (measurer.py), which
    bounds the cost model's partial waves from below; on by default, since without it the small-M
    predictions were a third too fast (bench/results/checks/dynamic-row-probe-quick-*-2026-11-26.json)."""
    t0 = time.perf_counter()
    device = runner.device_info
    templates = list(template) if isinstance(template, (list, tuple)) else [template]
    by_family = {t.family: t for t in templates}
    spaces = {t.family: t.space(dw.largest, device) for t in templates}
    extents = (dw.hi, dw.N)
    rng = random.Random(seed)
    insts, weights = list(dw.instances), np.asarray(dw.weights)
    model = MicroKernelCostModel(dw, device)
    probe_model = ProbeModel(dw, device, templates)
    vers = versions(runner.name)
    calls = 0

    measured: dict[str, MicroKernel] = {}
    history = []
    phase_s: dict[str, float] = {}
    clock = [time.perf_counter()]

    def lap(name: str) -> float:
        now = time.perf_counter()
        took = now - clock[0]
        phase_s[name] = phase_s.get(name, 0.0) + took
        clock[0] = now
        return took

    def draw() -> tuple[str, dict]:
        return sketch.sample_any(spaces, extents, rng, local_pad=rng.choice(local_pad))

    def prebuild(pairs) -> None:
        """Submit the builds of (family, config) pairs ahead of their probes (the seeds' start while
        the first round's search runs).  The next round's likely picks are not built ahead: the
        refitted ranking keeps few of them, and their compiles would take cores from the GPU worker's
        launches and this round's builds."""
        if builder is not None:
            for fam, cfg in pairs:
                builder.submit(by_family[fam].render(dw.largest, cfg, device))

    # the seeds: measured with the first round's picks, in one batch of builds and probes (a batch of
    # their own before it would add a round trip of NVRTC and the GPU to every run); the first
    # round's picks are then ranked by the probe model's prior, as they would be without seeds
    seeded = sketch.seed_kernels(dw, templates, device) if seeds else []
    seed_picks = [(f, c) for f, c, _ in seeded]
    # their builds start now, so NVRTC (and its pool's start) runs beside the first round's search;
    # and the worker draws the row family every probe and instance is a corner of (the largest M's)
    # meanwhile, where it would wait for the first build and then grow the family probe by probe
    prebuild(seed_picks)
    runner.prepare_ahead(dw.largest.key)

    pop = []
    while len(pop) < population:
        pop.append(draw())
    for r in range(rounds):
        good = [mk for mk in measured.values() if mk.ok]
        if good:
            best = model.throughput(good, insts).max(axis=0)
        else:           # nothing measured yet: each instance's best guess of the population
            best = model.throughput(probe_model.guess_many([(f, c) for f, c in pop]), insts).max(axis=0)
        best = np.maximum(best, 1e-30)
        # evolution over the population, ranked by the predicted gain over what is measured, each
        # instance's throughput as a share of its best (a small M's TFLOP/s are tiny: raw ones would
        # rank by the large Ms alone); a generation's children are scored together (one query of
        # the probe model a family), which ranks exactly as scoring them one by one
        def score_all(fcs: dict) -> None:
            fcs = {k: fc for k, fc in fcs.items() if k not in scored}
            if not fcs:
                return
            P = model.throughput(probe_model.guess_many(fcs.values()), insts)
            for (k, fc), p in zip(fcs.items(), P):
                scored[k] = (float(np.dot(weights, np.maximum(p / best - 1.0, 0.0)))
                             + 1e-3 * float(np.dot(weights, p / best)), fc)
        scored: dict = {}
        score_all({_key(*fc): fc for fc in pop})
        for _ in range(generations):
            parents = sorted(scored.values(), key=lambda sc: -sc[0])[: max(4, population // 4)]
            children: dict = {}
            for _ in range(population):
                if rng.random() < 0.8:
                    fam, cfg = rng.choice(parents)[1]
                    m = sketch.mutate_any(spaces, fam, cfg, rng, extents)
                    child = (fam, m) if m is not None else None
                else:
                    child = draw()
                if child is not None:
                    children.setdefault(_key(*child), child)
            score_all(children)
        seeds_now = [fc for fc in seed_picks if _key(*fc) not in measured] if r == 0 else []
        ranked = [fc for _, fc in sorted(scored.values(), key=lambda sc: -sc[0])
                  if _key(*fc) not in measured and fc not in seeds_now]
        n_explore = max(1, per_round // 4)
        picks = ranked[: per_round - n_explore]
        rest = ranked[per_round - n_explore:]
        picks += rng.sample(rest, min(n_explore, len(rest)))
        picks = seeds_now + picks
        round_s = {"search_s": lap("search")}
        # one stream of probes for every template's picks (grouped by template, as the results are kept)
        timeline: dict = {}
        split = getattr(runner, "time_split", dict)
        before = split()
        new = measure_pairs([(t, c) for fam, t in by_family.items() for f, c in picks if f == fam], dw, runner, db,
                            builder, vers, row_probe=row_probe, timeline=timeline)
        calls += sum(len(mk.probes) + (mk.row_us is not None) for mk in new)
        for mk in new:
            measured[_key(mk.family, mk.config)] = mk
        round_s["probes_s"] = lap("probes")
        # the GPU runner's waits on its workers this round (inputs, then measurements): the rest of
        # probes_s is waiting on builds and the pipes
        round_s["timeline"] = {**timeline, **{k: round(v - before.get(k, 0.0), 4) for k, v in split().items()
                                              if k in ("prepare_s", "measure_s")}}
        if r + 1 < rounds:          # the last round's fit would rank nothing
            probe_model.fit(list(measured.values()))
        good = [mk for mk in measured.values() if mk.ok]
        P = model.throughput(good, insts)
        history.append({"round": r, "measured": len(measured), "ok": len(good), "seeds": len(seeded), **round_s,
                        "by_family": {f: sum(mk.family == f for mk in good) for f in by_family},
                        "weighted_tflops_best": float(np.dot(weights, P.max(axis=0))) if good else 0.0})
        if on_progress:
            on_progress(history[-1])
        pop = [fc for _, fc in sorted(scored.values(), key=lambda sc: -sc[0])[:population]]

    good = [mk for mk in measured.values() if mk.ok]
    if not good:
        errors = sorted({mk.error for mk in measured.values()})[:3]
        raise RuntimeError(f"no micro-kernel of {dw.key} could be measured ({'; '.join(errors)})")
    P = model.throughput(good, insts)
    chosen = select(P, weights, max_kernels, floor=ladder_floor(seeded, good, P, insts))
    kernels = [good[i] for i in chosen]
    pred_us = model.predict_us(kernels, insts)
    assign = [int(np.argmin(pred_us[:, j])) for j in range(len(insts))]

    lap("search")
    # performance verification: every instance with its kernel, before anything is output
    builds = {f: runner.build_id(t) for f, t in by_family.items()}

    def measure(pairs) -> dict:
        """{instance index: Measurement} of each (instance index, kernel) pair, each in the database."""
        pairs = list(pairs)
        specs = [by_family[kernels[k].family].render(dw.at(insts[j]), kernels[k].config, device) for j, k in pairs]
        items = [(j, sp, builder.submit(sp) if builder is not None else None) for (j, _), sp in zip(pairs, specs)]
        meas = dict(runner.measure_stream(items))
        if db is not None:
            for j, k in pairs:
                fam = kernels[k].family
                db.add(dw.at(insts[j]).key, device.key, fam, kernels[k].config, meas[j], vers, build=builds[fam])
        return meas

    meas = measure(enumerate(assign))
    calls += len(insts)
    verification = [verified_row(M, weights[j], k, pred_us[k, j], meas[j], tolerance)
                    for j, (M, k) in enumerate(zip(insts, assign))]
    obs = [(kernels[k], M, meas[j].median_us) for j, (M, k) in enumerate(zip(insts, assign)) if meas[j].ok]
    # the correction learns from those measurements
    model.fit(obs)
    again = reselect(verification, assign, model.predict_us(kernels, insts), measure, kernels, insts, obs, tolerance)
    if again:
        calls += again
        model.fit(obs)
    lap("verify")
    # the tree learns from the corrected model over the whole range and, at the instances, from the
    # verified assignment
    ms = dw.ms()
    if len(ms) > MAX_TREE_POINTS:
        ms = sorted(set(np.linspace(dw.lo, dw.hi, MAX_TREE_POINTS).astype(int) // dw.step * dw.step) | set(insts))
    labels = np.argmin(model.predict_us(kernels, ms), axis=0)
    x = list(ms) + insts
    y = list(labels) + assign
    sw = [1.0] * len(ms) + [float(len(ms)) / len(insts) * 0.5] * len(insts)
    tree = fit_tree(x, y, sw, max_leaf_nodes=max(2, 4 * len(kernels)), seed=seed)
    disp = Dispatcher(tree_nodes(tree), [k.config for k in kernels], dw.lo, dw.hi, [k.family for k in kernels])
    lap("tree")
    return DynamicResult(dw, device.key, runner.name, "+".join(by_family), "+".join(builds.values()), kernels,
                         len(measured),
                         verification, disp, time.perf_counter() - t0, calls, history, seeds=len(seeded),
                         phase_s=phase_s)
