"""Tuning-efficiency study: best time found vs trials, per strategy and seed, replayed over a
recording of a whole space (so every strategy sees the same real measurements, and the optimum of
the recording is the exhaustive optimum).

    python -m autosched.benchmarks.search_efficiency RECORDING.json.gz [...] --out bench/results
"""

from __future__ import annotations

import argparse
import os
import tempfile
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from autosched.benchmarks.common import write_results
from autosched.database import Database
from autosched.measure.recording import Recording, ReplayRunner
from autosched.registry import template_named
from autosched.workloads import workload_from_key

# matplotlib is imported inside functions: slow to import, and only a few functions need it; tune is imported
# inside functions too: looked up at call time, as tests replace it on its module

STRATEGIES = ("random", "evolutionary", "evolutionary-model")


def curve(recording, strategy: str, seed: int, trials: int) -> list[float]:
    """Best median (us) after each trial."""
    from autosched.tuner import tune
    w = workload_from_key(recording.workload_key)
    t = template_named(recording.template)
    best, out = float("inf"), []

    def on_result(cfg, m, res):
        nonlocal best
        if m.ok:
            best = min(best, m.median_us)
        out.append(best)

    with tempfile.TemporaryDirectory() as d, Database(Path(d) / "db") as db:
        # a fresh database per run: no strategy learns from another's measurements
        tune(w, t, ReplayRunner(recording), db, strategy=strategy, trials=trials, seed=seed, batch=16,
             on_result=on_result)
    return out


_LOADED: dict = {}


def _curve_of(path: str, strategy: str, seed: int, trials: int) -> list[float]:
    """curve() in a pool process, which loads each recording once."""
    if path not in _LOADED:
        _LOADED[path] = Recording.load(path)
    return curve(_LOADED[path], strategy, seed, trials)


def _one_thread_each() -> None:
    # the pool runs one search a core: a search's model fitting must not spread over them all too
    os.environ["OMP_NUM_THREADS"] = "1"


def trials_to_within(c: list[float], optimum: float, tol: float = 0.05) -> int | None:
    for i, v in enumerate(c):
        if v <= optimum * (1 + tol):
            return i + 1
    return None


def median_fraction(reach: list, total: int) -> float | None:
    """Median over seeds of trials-to-within-5% / space size; a seed that never got there counts as
    infinite, and a median that is infinite is None (not reached within the budget)."""
    m = float(np.median([r / total if r else float("inf") for r in reach]))
    return m if np.isfinite(m) else None


def study(recording, seeds=(0, 1, 2, 3, 4), strategies=STRATEGIES, trial_fraction: float = 0.15,
          jobs: int = 1, progress=None) -> dict:
    """Every (strategy, seed) search over `recording`, `jobs` at a time in a process pool (each search
    is seeded and deterministic, so the pool changes nothing but the wall time).  `progress(done,
    total)` is called as searches finish."""
    ok = [m.median_us for _, m in recording.entries.values() if m.ok]
    optimum = min(ok)
    total = len(recording.entries)
    trials = max(16, int(total * trial_fraction))
    # how hard the target is: with c configs within 5% of the optimum, random search needs about
    # total / c trials to hit one
    result = {"workload": recording.workload_key, "recorded": total, "space_size": recording.space_size,
              "optimum_us": optimum, "trials": trials,
              "configs_within_5pct": sum(t <= optimum * 1.05 for t in ok),
              "configs_within_1pct": sum(t <= optimum * 1.01 for t in ok), "strategies": {}}
    runs = [(s, seed) for s in strategies for seed in seeds]
    curves = {}
    if jobs > 1 and recording.path:         # a pool process loads the recording from its file
        with ProcessPoolExecutor(min(jobs, len(runs)), initializer=_one_thread_each) as pool:
            futures = {pool.submit(_curve_of, str(recording.path), s, seed, trials): (s, seed) for s, seed in runs}
            for f in as_completed(futures):
                curves[futures[f]] = f.result()
                if progress:
                    progress(len(curves), len(runs))
    else:
        for s, seed in runs:
            curves[s, seed] = curve(recording, s, seed, trials)
            if progress:
                progress(len(curves), len(runs))
    for s in strategies:
        cs = [curves[s, seed] for seed in seeds]
        reach = [trials_to_within(c, optimum) for c in cs]
        reach1 = [trials_to_within(c, optimum, 0.01) for c in cs]
        result["strategies"][s] = {
            "curves": cs, "trials_within_5pct": reach,
            "median_fraction_within_5pct": median_fraction(reach, total),
            "trials_within_1pct": reach1, "median_fraction_within_1pct": median_fraction(reach1, total),
        }
    return result


def plot(results: list[dict], out: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 4), squeeze=False)
    for ax, r in zip(axes[0], results):
        for i, (name, s) in enumerate(r["strategies"].items()):
            for j, c in enumerate(s["curves"]):
                ax.plot(range(1, len(c) + 1), c, color=f"C{i}", alpha=0.6, label=name if j == 0 else None)
        ax.axhline(r["optimum_us"], color="k", ls="--", label="exhaustive optimum")
        ax.axhline(r["optimum_us"] * 1.05, color="k", ls=":", lw=0.8, label="+5%")
        ax.set_title(r["workload"], fontsize=9)
        ax.set_xlabel("trials")
        ax.set_ylabel("best median time (us)")
        ax.set_xscale("log")
        ax.legend(fontsize=7)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n    python")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("recordings", nargs="+", help="recordings of whole spaces (.json.gz)")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--trial-fraction", type=float, default=0.15,
                   help="trials per search as a fraction of the space (default 0.15; the bar is 10%%)")
    p.add_argument("--out", default="bench/results")
    p.add_argument("--plots", default="bench/plots")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="searches run at once, one process each (default: one a CPU core)")
    args = p.parse_args(argv)
    recs = [Recording.load(x) for x in args.recordings]
    partial = [r.name for r in recs if len(r.entries) < r.space_size]
    if partial:
        p.error(f"these recordings do not hold their whole space, so their best is not the exhaustive "
                f"optimum: {partial}")
    results = []
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()) as bar:
        for r in recs:
            task = bar.add_task(f"{r.workload_key} ({len(r.entries):,} configs): searches", total=None)
            results.append(study(r, seeds=tuple(range(args.seeds)), trial_fraction=args.trial_fraction,
                                 jobs=args.jobs,
                                 progress=lambda done, n, task=task: bar.update(task, completed=done, total=n)))
    fracs = [r["strategies"]["evolutionary-model"]["median_fraction_within_5pct"] for r in results]
    med = float(np.median([f if f is not None else float("inf") for f in fracs]))
    summary = {"trials_fraction_within_5pct": med if np.isfinite(med) else None,
               "shapes": [r["workload"] for r in results], "seeds": args.seeds,
               "trial_fraction_budget": args.trial_fraction}
    path = write_results("search-efficiency", recs[0].device, results, summary, args.out)
    print(path, plot(results, Path(args.plots) / "search-efficiency.png"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
