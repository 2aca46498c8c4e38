"""Scaling study on a CPU machine: a tuning replayed through the Ray runner with 1, 2 and 4 actors
on one space, and a run in which one actor is killed mid-way (every config must still be measured
exactly once).  Results: bench/results/scale-<replayed GPU>-<date>.json.

    python -m autosched.benchmarks.scale [--recording REC.json.gz] [--configs N] [--delay-ms D]

A replay answers from a recording, so a measurement costs almost nothing and, without more, the
figure would be the driver's per-call overhead.  `--delay-ms` makes each replay actor sleep that
long per config, standing in for the time a GPU spends measuring one (warm-up, 100 timed runs, the
check); the actor-scaling figure is reported both with and without it.  These are replay/CPU
figures: no GPU is used; the device named is the GPU whose recording is replayed.
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import tempfile
import time
import warnings
from pathlib import Path

from autosched.benchmarks.common import write_results
from autosched.database import Database
from autosched.measure.ray_runner import ActorLostWarning, RayRunner, connect
from autosched.measure.recording import Recording, ReplayRunner, shipped_recordings
from autosched.registry import template_named
from autosched.space import config_hash
from autosched.workloads import workload_from_key

# ray is imported inside functions: optional / slow to import, a CPU install runs without it; tune is imported
# inside functions too: looked up at call time, as tests replace it on its module

ACTORS = (1, 2, 4)


def _counting_db(path):
    class CountingDb(Database):
        """Counts writes per config (INSERT OR REPLACE would hide a second write in the row count)."""

        def __init__(self, p):
            super().__init__(p)
            self.writes = collections.Counter()

        def add(self, workload_key, device_key, template, config, m, *a, **kw):
            self.writes[config_hash(config)] += 1
            super().add(workload_key, device_key, template, config, m, *a, **kw)
    return CountingDb(path)


def _run(rec, runner, configs: int, on_result=None) -> dict:
    from autosched.tuner import tune
    w, t = workload_from_key(rec.workload_key), template_named(rec.template)
    stamps = []

    def stamp(cfg, m, res):
        stamps.append(time.perf_counter())
        if on_result:
            on_result(cfg, m, res)
    with tempfile.TemporaryDirectory() as d, _counting_db(Path(d) / "db") as db:
        t0 = time.perf_counter()
        res = tune(w, t, runner, db, strategy="exhaustive", trials=configs, batch=64, on_result=stamp)
        dt = time.perf_counter() - t0
        rows = len(db.measured(w.key, rec.device.key, t.family))
        writes = sum(db.writes.values())
    # the rate while measuring, first result to last: the tune's setup (pruning the space, which a
    # replay also checks against the recording) is the same whatever the runner and is left out
    rate = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else None
    return {"configs": res.measured_now, "seconds": round(dt, 3), "measuring_s": round(stamps[-1] - stamps[0], 3),
            "configs_per_s": round(rate, 1), "rows": rows, "writes": writes,
            "best_us": res.best.median_us if res.best else None, "best_config": res.best_config}


def study(rec, configs: int, delay_s: float, log=print) -> tuple[list, dict]:
    import ray
    rows = []
    single = _run(rec, ReplayRunner(rec), configs)
    rows.append({"runner": "replay (one process, no Ray)", "actors": 0, "delay_ms": 0.0, **single})
    log(f"single-process replay: {single['configs_per_s']} configs/s")
    for delay in (0.0, delay_s):
        base = None
        for n in ACTORS:
            with RayRunner(recordings=[rec], actors=n, measure_delay_s=delay) as run:
                r = _run(rec, run, configs)
            base = base or r["configs_per_s"]
            r["speedup_vs_1_actor"] = round(r["configs_per_s"] / base, 2)
            r["same_best_as_single_process"] = r["best_config"] == single["best_config"]
            rows.append({"runner": "ray replay actors", "actors": n, "delay_ms": delay * 1e3, **r})
            log(f"ray, {n} actors, delay {delay * 1e3:g} ms: {r['configs_per_s']} configs/s "
                f"(x{r['speedup_vs_1_actor']} of 1 actor)")
    # the kill: 4 actors, the second killed once a quarter of the configs are in
    seen = collections.Counter()
    with RayRunner(recordings=[rec], actors=4, measure_delay_s=delay_s) as run:
        victim = run.actors[1]

        def on_result(cfg, m, res):
            seen[config_hash(cfg)] += 1
            if sum(seen.values()) == configs // 4:
                ray.kill(victim)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ActorLostWarning)
            k = _run(rec, run, configs, on_result)
        k.update(actors_lost=len(run.lost), requeued=run.requeued, actors_left=len(run._alive))
    k["lost"] = configs - len(seen)
    k["duplicates"] = (sum(seen.values()) - len(seen)) + (k["writes"] - k["rows"])
    k["same_best_as_single_process"] = k["best_config"] == single["best_config"]
    rows.append({"runner": "ray replay actors, one killed after a quarter", "actors": 4, "delay_ms": delay_s * 1e3,
                 **k})
    log(f"killed-worker run: {k['configs']} measured, lost {k['lost']}, duplicates {k['duplicates']}, "
        f"{k['requeued']} re-sent")

    def rate(n, d):
        return next(r["configs_per_s"] for r in rows if r["actors"] == n and r["delay_ms"] == d * 1e3
                    and r["runner"] == "ray replay actors")
    summary = {
        "ray_killed_worker_lost": k["lost"],
        "ray_killed_worker_duplicates": k["duplicates"],
        "ray_killed_worker_completed": k["configs"] == configs,
        "ray_replay_4_actor_speedup_with_delay": round(rate(4, delay_s) / rate(1, delay_s), 2),
        "ray_replay_4_actor_speedup_no_delay": round(rate(4, 0.0) / rate(1, 0.0), 2),
        "gpu2_throughput_speedup": None,
        "gpu2_throughput_speedup_reason": "no GPU in this session: the 2-GPU bar (>= 1.8x) is left for a "
                                          "session on a 2-GPU machine",
    }
    return rows, summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recording", default=None, help="default: the shipped gemv_q4f16 4096x4096 recording")
    ap.add_argument("--configs", type=int, default=1500, help="configs each run measures")
    ap.add_argument("--delay-ms", type=float, default=20.0, help="per-config sleep in each replay actor, standing "
                    "in for a GPU's measuring time")
    ap.add_argument("--out", default="bench/results")
    args = ap.parse_args(argv)
    path = args.recording or next(p for p in shipped_recordings() if p.name.startswith("gemv_q4f16-4096x4096-"))
    rec = Recording.load(path)
    configs = min(args.configs, len(rec.entries))
    connect("local", num_cpus=max(ACTORS))     # a local cluster: one logical CPU per replay actor
    import ray
    try:
        rows, summary = study(rec, configs, args.delay_ms / 1e3)
    finally:
        ray.shutdown()
    extra = {"figures": "replay/CPU: Ray actors answering from a recording of real measurements taken on the "
                        "device named; no GPU was used. delay_ms > 0: each actor sleeps that long per config to "
                        "stand in for a GPU's measuring time; delay_ms 0: the driver's per-config overhead.",
             "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                         "ray": ray.__version__, "cluster": f"ray.init local, {max(ACTORS)} logical CPUs"},
             "recording": Path(path).name, "configs_per_run": configs, "strategy": "exhaustive"}
    out = write_results("scale", rec.device, rows, summary, args.out, extra=extra)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
