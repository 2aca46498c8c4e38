"""The GPU side of issue 18's scaling study: one space measured on one GPU and on every GPU of the host.

    python -m autosched.benchmarks.scale_gpu [--family gemv-q4f16] [--shape 4096x4096] [--configs 256]

Three figures, on one list of configs sampled from the family's space (the same list for every run):
  * NVRTC: the configs built on a fresh compile cache by the build pool (all cores), configs per second;
  * measuring: the prebuilt binaries measured through GpuRunner on GPU 0 alone, then on GPUs 0..n-1,
    configs per second from the first result to the last (each runner's workers start, and each GPU
    prepares the shape's inputs, before the clock starts, as in a tuning of many configs), so the
    ratio is what the runner's one-worker-per-GPU design gives: `gpu2_throughput_speedup` (bar >= 1.8);
  * end to end: `tune` (exhaustive over the same configs' space, `trials` of them) on one GPU and on
    all, each with a fresh database and compile cache, builds running ahead of measuring: its rate,
    its NVRTC rate and the time the GPUs waited on builds, the figures `autosched tune` reports.

Every measurement is the tuner's (checked against the reference before and after timing); a config
that fails counts as measured (its result came back) and is reported by status.
Results: bench/results/scale-gpu-<device>-<date>.json.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections import Counter
from pathlib import Path

from autosched.benchmarks.common import write_results
from autosched.build import BuildCache, Builder
from autosched.database import Database
from autosched.registry import FAMILIES

# gpu_count, GpuRunner and tune are imported inside functions: looked up at call time, as tests replace them
# on their modules


def sample_configs(template, workload, device, n: int, seed: int = 0) -> list[dict]:
    """n distinct configs of the template's space (all of them where it holds fewer)."""
    configs = template.space(workload, device).enumerate()
    random.Random(seed).shuffle(configs)
    return configs[:n]


def measuring_rate(runner, specs, binaries) -> dict:
    """Configs per second from the first result to the last, and the statuses.  One config is measured
    first, off the clock, on every GPU, so that inputs and references are ready everywhere."""
    runner.warm(specs[0], binaries[0])
    slots = [s for s in getattr(runner, "slots", []) if hasattr(s, "measure_s")]
    busy0 = [s.measure_s for s in slots]
    stamps, statuses = [], Counter()
    for _, m in runner.measure_stream([(i, s, b) for i, (s, b) in enumerate(zip(specs, binaries))]):
        stamps.append(time.perf_counter())
        statuses[m.status.value] += 1
    rate = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 and stamps[-1] > stamps[0] else None
    out = {"configs": len(stamps), "measuring_s": round(stamps[-1] - stamps[0], 3) if stamps else 0.0,
           "configs_per_s": round(rate, 2) if rate else None, "statuses": dict(statuses)}
    if slots:
        # each GPU's seconds waiting on its worker: near the span when the GPUs are kept fed, and per
        # config as on one GPU unless the workers get in each other's way
        out["busy_s"] = [round(s.measure_s - b, 3) for s, b in zip(slots, busy0)]
    return out


def study(make_runner, make_builder, template, workload, device, configs: list[dict], gpu_sets: list[list[int]],
          tune_trials: int, log=print) -> tuple[list, dict]:
    """make_runner(ids) -> a runner on those GPUs; make_builder(dir) -> a Builder on a fresh cache
    there; `device` the GPUs' DeviceInfo.  gpu_sets: the GPU lists to compare, one GPU first."""
    from autosched.tuner import tune
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        specs = [template.render(workload, c, device) for c in configs]
        with make_builder(Path(scratch) / "build") as builder:
            t0 = time.perf_counter()
            binaries = list(builder.build_many(specs))
            build_s = time.perf_counter() - t0
        nvrtc = {"what": "nvrtc", "configs": len(specs), "seconds": round(build_s, 3),
                 "configs_per_s": round(len(specs) / build_s, 2), "jobs": builder.workers,
                 "failed": sum(not b.ok for b in binaries)}
        rows.append(nvrtc)
        log(f"NVRTC: {len(specs)} configs in {build_s:.1f} s ({nvrtc['configs_per_s']} configs/s, "
            f"{builder.workers} processes)")
        for ids in gpu_sets:
            runner = make_runner(ids)
            try:
                r = measuring_rate(runner, specs, binaries)
            finally:
                runner.close()
            rows.append({"what": "measuring", "gpus": ids, **r})
            log(f"measuring on GPUs {ids}: {r['configs_per_s']} configs/s {r['statuses']}")
        for ids in gpu_sets:
            d = Path(scratch) / f"tune-{'-'.join(map(str, ids))}"
            # as `autosched tune` does: the build pool starts beside the GPU workers (Builder.start)
            with make_builder(d / "build") as builder:
                builder.start()
                runner = make_runner(ids)
                try:
                    with Database(d / "tune.db") as db:
                        t0 = time.perf_counter()
                        res = tune(workload, template, runner, db, strategy="exhaustive", trials=tune_trials,
                                   builder=builder, seed=0)
                        wall = time.perf_counter() - t0
                finally:
                    runner.close()
            rows.append({"what": "tune", "gpus": ids, "configs": res.measured_now, "seconds": round(wall, 3),
                         "configs_per_s": round(res.measured_now / wall, 2) if wall > 0 else None,
                         "nvrtc_configs_per_s": round(res.build_rate, 2), "build_wait_s": round(res.build_wait_s, 3),
                         "statuses": dict(res.statuses), "best_us": res.best.median_us if res.best else None})
            log(f"tune on GPUs {ids}: {res.measured_now} configs in {wall:.1f} s, NVRTC {res.build_rate:.1f} "
                f"configs/s, GPUs waited {res.build_wait_s:.1f} s on builds")

    def rate(what, ids):
        return next((r["configs_per_s"] for r in rows if r["what"] == what and r["gpus"] == ids), None)

    one, many = gpu_sets[0], gpu_sets[-1]
    ratio = lambda a, b: round(a / b, 3) if a and b else None  # noqa: E731
    summary = {
        "gpus": len(many),
        "gpu2_throughput_speedup": ratio(rate("measuring", many), rate("measuring", one)) if len(many) == 2 else None,
        "gpu_all_throughput_speedup": ratio(rate("measuring", many), rate("measuring", one)),
        "tune_all_gpus_speedup": ratio(rate("tune", many), rate("tune", one)),
        "nvrtc_configs_per_s": nvrtc["configs_per_s"],
        "bars": {"gpu2_throughput_speedup": 1.8},
    }
    return rows, summary


def main(argv=None) -> int:
    from autosched.device import gpu_count
    from autosched.measure.gpu import GpuRunner
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", default="gemv-q4f16", choices=sorted(FAMILIES))
    ap.add_argument("--shape", default="4096x4096")
    ap.add_argument("--template", default=None, help="default: the family's first template for the shape")
    ap.add_argument("--configs", type=int, default=256, help="configs each measuring run takes (default 256)")
    ap.add_argument("--tune-trials", type=int, default=128, help="configs each end-to-end tune measures (default 128)")
    ap.add_argument("--out", default="bench/results")
    a = ap.parse_args(argv)
    n = gpu_count()
    if n < 2:
        ap.error(f"this machine has {n} GPU(s): the study compares one GPU with several")
    for name in ("configs", "tune_trials"):
        if getattr(a, name) < 2:
            ap.error(f"--{name.replace('_', '-')} must be at least 2")
    fam = FAMILIES[a.family]
    w = fam.parse(a.shape)
    ts = fam.templates_for(w)
    t = next((x for x in ts if x.family == a.template), None) if a.template else ts[0]
    if t is None:
        ap.error(f"no template {a.template!r} serves {a.family} {a.shape}: {', '.join(x.family for x in ts)}")
    probe = GpuRunner([0])
    device = probe.device_info
    probe.close()
    configs = sample_configs(t, w, device, a.configs)
    rows, summary = study(lambda ids: GpuRunner(ids), lambda d: Builder(cache=BuildCache(d)), t, w, device, configs,
                          [[0], list(range(n))], a.tune_trials)
    extra = {"workload": w.key, "template": t.family, "configs_sampled": len(configs)}
    out = write_results("scale-gpu", device, rows, summary, a.out, extra=extra)
    print(f"wrote {out}: {summary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
