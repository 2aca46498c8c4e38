"""Why did DietCode's tuner not pick hgemm_wgmma_swap's cluster-summed kernels at 768 x 3072 in the full
run of 2026-11-27 (dynamic-*-27-4.json), where paired with cuBLAS they were 2.5-7% faster than the same
tiles summed through the workspace (checks/cluster-reduce-sweep-2026-11-27.json)?  Here the tuner's own
measurement: the worker process (GpuRunner, the protocol's series after a flush), each config measured
in turn, four passes, at the Ms of the run's tuning instances and untuned points.  If the worker ranks
them the other way or inside its own spread, the selection cannot see the gain.
Rows to $OUT/cluster-in-worker.json.

    python3 scripts/experiments/cluster_in_worker.py"""
import json
import os

import numpy as np

TILES = [{"bw": 64, "bt": 40, "swizzle": 128, "stages": 16, "split_k": 2},
         {"bw": 64, "bt": 32, "swizzle": 128, "stages": 16, "split_k": 3}]
MS = [80, 112, 128, 160, 176, 192]
PASSES = 4


def main():
    from autosched.build import Builder
    from autosched.measure.gpu import GpuRunner
    from autosched.templates.hgemm_wgmma_swap import HgemmWgmmaSwapDynTemplate
    from autosched.workloads import Hgemm
    t = HgemmWgmmaSwapDynTemplate()
    runner = GpuRunner()
    rows = []
    try:
        with Builder() as b:
            for M in MS:
                w = Hgemm.from_shape(f"{M}x768x3072_bt")
                cfgs = [{**c, "reduce": r} for c in TILES for r in ("workspace", "cluster")]
                specs = [t.render(w, c, runner.device_info) for c in cfgs]
                bins = list(b.build_many(specs))
                times = {i: [] for i in range(len(cfgs))}
                for _ in range(PASSES):
                    for i, (s, bn) in enumerate(zip(specs, bins)):
                        m = runner.measure(s, bn)
                        times[i].append(m.median_us if m.ok else float("nan"))
                row = {"M": M, "configs": [{"config": c, "us": times[i], "median_us": float(np.median(times[i]))}
                                           for i, c in enumerate(cfgs)]}
                print(M, [(c["bt"], c["split_k"], c["reduce"][0], round(float(np.median(times[i])), 2),
                           round(float(np.ptp(times[i])), 2)) for i, c in enumerate(cfgs)], flush=True)
                rows.append(row)
    finally:
        runner.close()
    with open(os.path.join(os.environ.get("OUT", "."), "cluster-in-worker.json"), "w") as f:
        json.dump({"device": runner.device_info.name, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
