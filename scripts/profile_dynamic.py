"""Where one dynamic tuning run's time goes, on the GPU: the run (and optionally one per-instance
tuning of the same budget) under cProfile in this process and in the GPU worker
(AUTOSCHED_WORKER_PROFILE), both printed, with the runner's time split.

    python3 scripts/profile_dynamic.py Mx768x768_bt 16 2048 16 [--instance M] [--rounds 4 --per-round 12] [--out DIR]
"""

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("shape")
    p.add_argument("lo", type=int)
    p.add_argument("hi", type=int)
    p.add_argument("step", type=int, nargs="?", default=1)
    p.add_argument("--instance", type=int, default=None, help="also tune this M alone, to the same budget")
    p.add_argument("--out", default=os.environ.get("OUT", "/tmp/profile-dynamic"))
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--rounds", type=int, default=4, help="search rounds (default 4, the bench's)")
    p.add_argument("--per-round", type=int, default=12, help="micro-kernels a round (default 12, the bench's)")
    a = p.parse_args()
    out = Path(a.out)
    prof_dir = out / "worker-prof"
    os.environ["AUTOSCHED_WORKER_PROFILE"] = str(prof_dir)      # before the runner spawns its worker

    from autosched.benchmarks.dynamic import gpu_harness
    from autosched.dynamic.workload import DynamicWorkload
    dw = DynamicWorkload.parse("hgemm", a.shape, (a.lo, a.hi), step=a.step)
    h, closers = gpu_harness(None, rounds=a.rounds, per_round=a.per_round)
    main_prof = cProfile.Profile()
    try:
        before = h.spent()
        t0 = time.perf_counter()
        res = main_prof.runcall(h.tune_dynamic, dw)
        wall = time.perf_counter() - t0
        spent = {k: round(v - before[k], 3) for k, v in h.spent().items()}
        print(f"dynamic {dw.key}: {wall:.2f} s, {res.measurements} measurements, phases "
              f"{ {k: round(v, 2) for k, v in res.phase_s.items()} }, spent {spent}")
        if a.instance is not None:
            before = h.spent()
            t0 = time.perf_counter()
            got = h.tune_instance(dw.at(a.instance), res.measurements)
            spent = {k: round(v - before[k], 3) for k, v in h.spent().items()}
            print(f"per-instance M={a.instance}: {time.perf_counter() - t0:.2f} s, {got[3]} trials, spent {spent}")
    finally:
        for c in reversed(closers):
            c.close()               # the worker stops and writes its profile
    main_path = out / "main.prof"
    out.mkdir(parents=True, exist_ok=True)
    main_prof.dump_stats(str(main_path))
    print("\n== main process (the dynamic run), cumulative")
    pstats.Stats(str(main_path), stream=sys.stdout).sort_stats("cumulative").print_stats(a.top)
    for f in sorted(prof_dir.glob("*.prof")):
        print(f"\n== worker {f.name}, internal time")
        pstats.Stats(str(f), stream=sys.stdout).sort_stats("tottime").print_stats(a.top)
        print(f"\n== worker {f.name}, cumulative")
        pstats.Stats(str(f), stream=sys.stdout).sort_stats("cumulative").print_stats(a.top)


if __name__ == "__main__":
    main()
