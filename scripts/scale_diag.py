"""Where the 2-GPU measuring rate goes (issue 18's diagnosis): the same configs measured
  (a) through GpuRunner([0]), (b) through GpuRunner([0, 1]), (c) as two OS processes at once, each its
  own GpuRunner([i]) on its own GPU (the ceiling of one-worker-per-GPU with nothing shared),
with each GPU's busy time (the parent waiting on its worker) beside the measuring time, and the CPU quota;
rates as the scaling study counts them (first result to last).

    python scripts/scale_diag.py [--configs 128] [--out DIR]
"""

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def measure(ids, specs, binaries):
    """The study's measuring rate (scale_gpu.measuring_rate: each GPU's busy seconds beside it) on `ids`."""
    from autosched.benchmarks.scale_gpu import measuring_rate
    from autosched.measure.gpu import GpuRunner
    r = GpuRunner(ids)
    try:
        return {"gpus": ids, **measuring_rate(r, specs, binaries)}
    finally:
        r.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", type=int, default=128)
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/out"))
    ap.add_argument("--solo", type=int, default=None)
    ap.add_argument("--pickle", default=None)
    ap.add_argument("--start-at", type=float, default=0.0)
    a = ap.parse_args()
    if a.solo is not None:
        specs, binaries = pickle.loads(Path(a.pickle).read_bytes())
        from autosched.measure.gpu import GpuRunner
        r = GpuRunner([a.solo])
        r.warm(specs[0], binaries[0])
        r.close()
        while time.time() < a.start_at:
            time.sleep(0.01)
        print(json.dumps(measure([a.solo], specs, binaries)))
        return
    from autosched.benchmarks.scale_gpu import sample_configs
    from autosched.build import BuildCache, Builder
    from autosched.measure.gpu import GpuRunner
    from autosched.registry import FAMILIES
    cpu = {"nproc": os.cpu_count(), "affinity": len(os.sched_getaffinity(0))}
    for f in ("/sys/fs/cgroup/cpu.max", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"):
        if os.path.exists(f):
            cpu[f] = Path(f).read_text().strip()
    print("cpu", cpu, flush=True)
    fam = FAMILIES["gemv-q4f16"]
    w = fam.parse("4096x4096")
    t = fam.templates_for(w)[0]
    probe = GpuRunner([0])
    dev = probe.device_info
    probe.close()
    configs = sample_configs(t, w, dev, a.configs)
    specs = [t.render(w, c, dev) for c in configs]
    with tempfile.TemporaryDirectory() as d:
        with Builder(cache=BuildCache(Path(d) / "b")) as b:
            binaries = list(b.build_many(specs))
        rows = [measure([0], specs, binaries), measure([1], specs, binaries), measure([0, 1], specs, binaries)]
        for r in rows:
            print(r, flush=True)
        pk = Path(d) / "work.pkl"
        pk.write_bytes(pickle.dumps((specs, binaries)))
        start = time.time() + 25
        procs = [subprocess.Popen([sys.executable, __file__, "--solo", str(i), "--pickle", str(pk),
                                   "--start-at", str(start)], stdout=subprocess.PIPE, text=True) for i in (0, 1)]
        solo = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
        print("two processes at once:", solo, flush=True)
    res = {"cpu": cpu, "rows": rows, "two_processes": solo,
           "two_processes_configs_per_s": round(sum(s["configs_per_s"] for s in solo), 2)}
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "scale-diag.json").write_text(json.dumps(res, indent=1))
    print(json.dumps(res))


if __name__ == "__main__":
    main()
