"""How an SGEMM config's time depends on where its buffers were allocated, beside cuBLAS's.

    python3 scripts/sgemm_buffers.py 4096x4096x4096 '<config json>' [--out bench/results]

One process, one protocol: our kernel and cuBLAS (TF32 off) read the very same A and B and write
the same C, in each of these placements, timed in interleaved rounds:
  pool          the device's stream-ordered memory pool (where the tuner's worker measures)
  torch         three tensors of torch's caching allocator (as a user's would be)
  slab+OFFSET   one torch allocation holding A, B and C, each OFFSET bytes after the one before
Each placement's kernel output is checked against the float64 reference first.  Writes
sgemm-buffers-<device>-<date>.json.  With --profile, each placement's kernel runs once (its check)
and nothing is timed, for ncu:

    ncu --kernel-name regex:sgemm --section MemoryWorkloadAnalysis python3 scripts/sgemm_buffers.py \
        4096x4096x4096 '<config json>' --profile --placements pool,torch
"""
import argparse
import json

import numpy as np
import torch
from cuda.core import Device, Stream

from autosched.benchmarks.common import Launchable, pool_tensor, write_results
from autosched.build import Builder
from autosched.device import query
from autosched.measure.protocol import Protocol, Timer
from autosched.runtime import allow_dynamic_smem
from autosched.templates import SgemmTemplate
from autosched.workloads import Sgemm

OFFSETS = (0, 4096, 1 << 16, 1 << 20, 2 << 20, 24 << 20)


def placements(w, dev, stream):
    """name -> (A, B, C) as torch tensors, uninitialized."""
    a_shape = (w.K, w.M) if w.trans_a else (w.M, w.K)
    shapes = (a_shape, (w.K, w.N), (w.M, w.N))
    out = {"pool": tuple(pool_tensor(dev, stream, s) for s in shapes),
           "torch": tuple(torch.empty(s, dtype=torch.float32, device="cuda") for s in shapes)}
    sizes = [int(np.prod(s)) for s in shapes]
    for off in OFFSETS:
        gap = off // 4
        slab = torch.empty(sum(sizes) + 3 * gap, dtype=torch.float32, device="cuda")
        views, at = [], 0
        for s, n in zip(shapes, sizes):
            views.append(slab[at:at + n].view(s))
            at += n + gap
        out[f"slab+{off}"] = tuple(views)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("shape", help="MxNxK")
    p.add_argument("config", help="the SGEMM config, as JSON")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default="bench/results")
    p.add_argument("--placements", help="comma-separated names to run (default: all)")
    p.add_argument("--profile", action="store_true", help="one checked launch a placement, nothing timed")
    args = p.parse_args(argv)
    w, t = Sgemm.from_shape(args.shape), SgemmTemplate()
    cfg = json.loads(args.config)
    info = query(0)
    dev = Device(0)
    dev.set_current()
    torch.cuda.init()
    torch.backends.cuda.matmul.allow_tf32 = False
    stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    timer = Timer(dev, stream, Protocol())
    inputs = w.inputs(seed=1234)
    ref, bound = w.reference(inputs), w.error_bound(inputs)
    spec = t.render(w, cfg, info)
    with Builder() as b:
        binary = b.build(spec)
    places = placements(w, dev, stream)
    if args.placements:
        want = args.placements.split(",")
        unknown = sorted(set(want) - set(places))
        if unknown:
            raise SystemExit(f"unknown placements {unknown}; there are {sorted(places)}")
        places = {k: v for k, v in places.items() if k in want}
    runs = {}
    for name, (a, bm, c) in places.items():
        a.copy_(torch.from_numpy(inputs["A"]))
        bm.copy_(torch.from_numpy(inputs["B"]))
        k = Launchable(spec, binary, inputs, c, on_device={"A": a, "B": bm})
        allow_dynamic_smem(k.kernel, spec.smem_bytes, dev.device_id)
        if spec.output_init == "zero":
            raise SystemExit("a split-K config accumulates into C: pass a config with splitk 1")
        c.fill_(float("nan"))
        k.launch(stream)
        torch.cuda.synchronize()
        chk = w.check(c.cpu().numpy(), ref, bound)
        if not chk.ok:
            raise SystemExit(f"{name}: the kernel failed its check: {chk.message}")
        at = a.t() if w.trans_a else a
        runs[name] = (lambda k=k: k.launch(stream), lambda at=at, bm=bm, c=c: torch.matmul(at, bm, out=c),
                      [hex(x.data_ptr()) for x in (a, bm, c)])
        print(f"{name}: checked ({', '.join(runs[name][2])})", flush=True)
    if args.profile:
        return 0
    times = {name: {"ours": [], "cublas": []} for name in runs}
    for _ in range(args.rounds):
        for name, (ours, cublas, _) in runs.items():
            times[name]["ours"].append(timer.summary(ours)["median_us"])
            times[name]["cublas"].append(timer.summary(cublas)["median_us"])
    rows = []
    for name, (_, _, ptrs) in runs.items():
        o, cb = float(np.median(times[name]["ours"])), float(np.median(times[name]["cublas"]))
        rows.append({"placement": name, "pointers": ptrs, "ours_us": o, "cublas_us": cb,
                     "pct_of_cublas": 100 * cb / o, "rounds": times[name]})
        print(f"{name:14s} ours {o:9.2f} us  cuBLAS {cb:9.2f} us  {100 * cb / o:6.2f}% of cuBLAS")
    timer.close()
    path = write_results("sgemm-buffers", info, rows, {"shape": args.shape, "config": cfg}, args.out)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
