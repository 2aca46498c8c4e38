"""The tuner's own time: a tune of the README's shape with a runner that measures nothing.

    python -m autosched.benchmarks.tuner_overhead [--rate 69] [--trials 500] [--json OUT]

The runner answers every config at once, or after 1/rate seconds (a GPU measuring `rate` configs a
second: the H200 measures 69, benchmarks/scale_gpu), and needs no binary, so no build is in the
figures: what is left is the strategy (a model-guided search over the whole space, the shipped
recordings of the GPU the recordings were taken on as its prior), the database and the loop.  It
prints configs a second and the seconds to the first result; on a CPU.  --build N: the configs are
compiled too (NVRTC needs no GPU), by N processes, and a config is answered once its binary is in,
as the GPU runner waits for it: the rate builds allow on this machine's cores.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from autosched.build import Builder, BuildCache
from autosched.database import Database
from autosched.identity import build_id
from autosched.measure.recording import load_shipped
from autosched.measure.result import Measurement, Status
from autosched.measure.runner import Runner
from autosched.templates import GemvQ4F16Template
from autosched.tuner import tune
from autosched.workloads import GemvQ4F16

SHAPE = (12288, 4096)        # the README's main command


class InstantRunner(Runner):
    """A GPU runner's name and device (the recordings' GPU), answering after 1/rate s a config."""
    name = "gpu"
    needs_binary = False

    def __init__(self, device, rate: float | None, builds: bool = False):
        self._device, self.delay = device, (1.0 / rate if rate else 0.0)
        self.needs_binary = builds
        self.build_wait_s = 0.0

    @property
    def device_info(self):
        return self._device

    def build_id(self, template) -> str:
        return build_id(template)

    def measure_stream(self, items):
        for tag, spec, binary in items:
            if binary is not None and hasattr(binary, "result"):
                t0 = time.perf_counter()
                binary.result()              # as the GPU runner: a config is measured once it is built
                self.build_wait_s += time.perf_counter() - t0
            if self.delay:
                time.sleep(self.delay)
            us = 15.0 + (hash(spec.name_expression) % 1000) / 100
            yield tag, Measurement(Status.OK, us, us, 0.1, 0.0)


def run(rate: float | None = 69.0, trials: int = 500, build_workers: int = 0) -> dict:
    family = GemvQ4F16Template().family
    recs = [r for _, r in load_shipped() if r.template == family]
    if not recs:
        raise ValueError(f"no shipped {family} recording: nothing to take the GPU and the prior from")
    runner = InstantRunner(recs[0].device, rate, builds=build_workers > 0)
    first: list[float] = []
    with tempfile.TemporaryDirectory() as d, Database(Path(d) / "db") as db, \
            Builder(workers=build_workers or 1, cache=BuildCache(Path(d) / "build")) as builder:
        if build_workers:
            builder.start()
        t0 = time.perf_counter()
        res = tune(GemvQ4F16(*SHAPE), None, runner, db, strategy="model", trials=trials,
                   builder=builder if build_workers else None,
                   on_result=lambda c, m, r: first.append(time.perf_counter() - t0) if not first else None)
        seconds = time.perf_counter() - t0
    return {"trials": res.trials, "space": res.space_size, "rate": rate, "build_workers": build_workers,
            "seconds": round(seconds, 2), "configs_per_s": round(res.trials / seconds, 1),
            "first_result_s": round(first[0], 2) if first else None, "build_wait_s": round(runner.build_wait_s, 2),
            "built": res.built}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m autosched.benchmarks.tuner_overhead", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rate", type=float, default=69.0, help="configs a second the fake GPU measures (0: at once)")
    p.add_argument("--trials", type=int, default=500)
    p.add_argument("--build", type=int, default=0, metavar="N",
                   help="compile every config too, with N NVRTC processes, into a fresh cache (default: no builds)")
    p.add_argument("--json", default=None, help="also write the result to this file")
    a = p.parse_args(argv)
    row = run(a.rate or None, a.trials, a.build)
    print(f"{row['trials']} trials of a {row['space']}-config space in {row['seconds']} s: {row['configs_per_s']} "
          f"configs/s, first result after {row['first_result_s']} s (fake GPU at {a.rate or 'no'} configs/s, "
          + (f"{a.build} build processes: waited {row['build_wait_s']} s on builds)" if a.build else "no builds)"))
    if a.json:
        Path(a.json).write_text(json.dumps(row, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
