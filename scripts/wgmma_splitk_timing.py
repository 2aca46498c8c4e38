"""hgemm_wgmma_splitk beside hgemm_wgmma and cuBLAS on the prefill shapes with few output tiles: for
each shape, split 1 (hgemm_wgmma itself) and split_k 2..8 (hgemm_wgmma_splitk), a few tiles (the best
of them printed per split), checked against float64 first, then timed as scripts/wgmma_timing.py
times (CUDA events, median, L2 not flushed: a first look).  The templates are used directly, so the
registry's split-K switch does not matter here.

    python3 scripts/wgmma_splitk_timing.py [SHAPE ...]   # default 128x4096x4096_bt 128x4096x11008_bt
"""
import sys

from wgmma_timing import median_us  # (scripts/ is this script's sys.path[0])

TILES = [  # (bm, bn, consumers, stages) tried at every split, 128B swizzle, raster group 1
    (128, 64, 2, 6), (64, 128, 1, 5), (128, 128, 2, 5), (64, 256, 1, 4), (128, 256, 2, 3),
]


def main(shapes):
    import numpy as np
    import torch
    from cuda.core import Device, Stream

    from autosched.benchmarks.common import Launchable, checked_launch
    from autosched.build import Builder
    from autosched.device import query
    from autosched.runtime import allow_dynamic_smem
    from autosched.templates import HgemmWgmmaSplitKTemplate, HgemmWgmmaTemplate
    from autosched.workloads import Hgemm
    info = query(0)
    Device(0).set_current()
    torch.cuda.init()
    stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    templates = {1: HgemmWgmmaTemplate(), **dict.fromkeys((2, 3, 4, 6, 8), HgemmWgmmaSplitKTemplate())}
    bad = 0
    with Builder() as builder:
        for shape in shapes:
            w = Hgemm.from_shape(shape)
            inputs = w.inputs(1)
            ref, bound, flop = w.reference(inputs), w.error_bound(inputs), w.flops()
            a = torch.from_numpy(np.ascontiguousarray(inputs["A"])).cuda()
            b = torch.from_numpy(np.ascontiguousarray(inputs["B"])).cuda()
            bt = b.t() if w.b_col else b
            cublas = median_us(lambda: torch.matmul(a, bt), None)
            print(f"{shape}: cuBLAS {cublas:7.1f} us {flop / cublas / 1e6:6.1f} TFLOP/s", flush=True)
            spaces = {sk: t.space(w, info) for sk, t in templates.items()}
            cfgs = [(sk, c) for sk in templates for bm, bn, cons, st in TILES
                    for c in [{"bm": bm, "bn": bn, "consumers": cons, "swizzle": 128, "stages": st, "group": 1,
                               **({"split_k": sk} if sk > 1 else {})}] if spaces[sk].contains(c)]
            specs = [templates[sk].render(w, c, info) for sk, c in cfgs]
            out = torch.empty((w.M, w.N), dtype=torch.float16, device="cuda")
            best = {}
            for (sk, c), spec, binary in zip(cfgs, specs, builder.build_many(specs)):
                try:
                    k = Launchable(spec, binary, inputs, out, on_device={"A": a, "B": b})
                    allow_dynamic_smem(k.kernel, spec.smem_bytes, 0)
                    checked_launch(lambda s: k.launch(s), w, out, ref, stream, spec.name_expression, bound)
                    us = median_us(lambda: k.launch(stream), None)
                    checked_launch(lambda s: k.launch(s), w, out, ref, stream, spec.name_expression, bound)
                except Exception as e:     # report and go on: one bad config must not hide the others
                    bad += 1
                    print(f"  {spec.name_expression}: FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
                    continue
                print(f"    {spec.name_expression:52s} grid {spec.grid[0]:3d} {us:7.1f} us", flush=True)
                if sk not in best or us < best[sk][0]:
                    best[sk] = (us, spec.name_expression)
            for sk, (us, name) in sorted(best.items()):
                print(f"  split_k={sk}: {us:7.1f} us {flop / us / 1e6:6.1f} TFLOP/s {100 * cublas / us:5.1f}% of "
                      f"cuBLAS  ({name})", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["128x4096x4096_bt", "128x4096x11008_bt"]))
