"""Does timing ours and cuBLAS run by run in alternation (Timer.time_alternating, the hgemm bench's
paired ratio since 2026-11-27) hold the ratio steadier at 8192^3 than two series one after the other
(its protocol before)?  cuBLAS against itself: the true ratio is 100%.  Three rounds each way, twice.
Rows to $OUT/paired-drift.json.

    python3 scripts/experiments/paired_drift.py"""
import json
import os

import numpy as np


def main():
    import torch
    from cuda.core import Device, Stream

    from autosched.measure.protocol import Timer
    dev = Device(0)
    dev.set_current()
    timer = Timer(dev, Stream.from_handle(torch.cuda.current_stream().cuda_stream))
    n = 8192
    a, b = (torch.randn(n, n, device="cuda", dtype=torch.float16) for _ in range(2))
    c = torch.empty(n, n, device="cuda", dtype=torch.float16)
    run = lambda: torch.matmul(a, b, out=c)  # noqa: E731
    out = {"shape": f"{n}^3 fp16, cuBLAS against itself", "alternating": [], "series": []}
    for _ in range(2):
        for _ in range(3):
            ta, tb = timer.time_alternating(run, run)
            out["alternating"].append(100.0 * float(np.median(tb)) / float(np.median(ta)))
            sa, sb = timer.summary(run)["median_us"], timer.summary(run)["median_us"]
            out["series"].append(100.0 * sb / sa)
    print(json.dumps(out))
    with open(os.path.join(os.environ.get("OUT", "."), "paired-drift.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), **out}, f, indent=1)
    timer.close()


if __name__ == "__main__":
    main()
