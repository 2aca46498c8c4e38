"""hgemm_wgmma_cluster's clusters of 2 (TMA multicast) beside hgemm_wgmma (cluster 1) and cuBLAS: for each shape, a few tiles
at cluster 1, cluster 2 along M (B multicast) and along N (A multicast), each checked against
float64, timed as scripts/wgmma_timing.py times (CUDA events, median, L2 not flushed: a first look),
checked again; the best of each printed with its share of cuBLAS.  Also prints the driver's
maximum of co-resident clusters for each pair kernel: the rendered persistent grid assumes
sm_count / 2 (66 on the H100); where the driver says fewer, the pair config is timed again on a grid
of that many clusters (a second wave of clusters would cost nearly a whole extra pass).

    python3 scripts/wgmma_cluster_timing.py [SHAPE ...]   # default 4096^3 nt and nn, 8192^3 nt
"""
import dataclasses
import sys

from wgmma_timing import median_us  # noqa: E402  (scripts/ is this script's sys.path[0])

TILES = [  # (bm, bn, consumers, stages, group), 128B swizzle, tried at every cluster choice
    (128, 256, 2, 3, 8), (128, 256, 2, 4, 8), (256, 128, 2, 4, 8), (128, 128, 2, 5, 8),
]
CLUSTERS = [(1, "m"), (2, "m"), (2, "n")]


def main(shapes):
    import numpy as np
    import torch
    from cuda.core import Device, Stream

    from autosched.benchmarks.common import Launchable, checked_launch
    from autosched.build import Builder
    from autosched.device import query
    from autosched.runtime import allow_dynamic_smem, launch_config
    from autosched.templates import HgemmWgmmaClusterTemplate, HgemmWgmmaTemplate
    from autosched.workloads import Hgemm
    info = query(0)
    Device(0).set_current()
    torch.cuda.init()
    stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    lone, pair = HgemmWgmmaTemplate(), HgemmWgmmaClusterTemplate()
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
            print(f"{shape}: cuBLAS {cublas:8.1f} us {flop / cublas / 1e6:6.1f} TFLOP/s", flush=True)
            spaces = {1: lone.space(w, info), 2: pair.space(w, info)}
            cfgs = [(cl, c) for cl, dim in CLUSTERS for bm, bn, cons, st, g in TILES
                    for c in [{"bm": bm, "bn": bn, "consumers": cons, "swizzle": 128, "stages": st, "group": g,
                               **({"cluster_dim": dim} if cl == 2 else {})}] if spaces[cl].contains(c)]
            specs = [(pair if cl == 2 else lone).render(w, c, info) for cl, c in cfgs]
            out = torch.empty((w.M, w.N), dtype=torch.float16, device="cuda")
            best = {}
            for (cl, c), spec, binary in zip(cfgs, specs, builder.build_many(specs)):
                label = "1" if cl == 1 else f"2{c['cluster_dim']}"
                runs = [spec]
                try:
                    if spec.cluster is not None:
                        k0 = Launchable(spec, binary, inputs, out, on_device={"A": a, "B": b})
                        allow_dynamic_smem(k0.kernel, spec.smem_bytes, 0)
                        most = k0.kernel.occupancy.max_active_clusters(launch_config(spec, pdl=False), stream=stream)
                        print(f"    {spec.name_expression}: at most {most} clusters co-resident "
                              f"(grid {spec.grid[0] // 2})", flush=True)
                        if 0 < most < spec.grid[0] // 2:
                            runs.append(dataclasses.replace(spec, grid=(2 * most, 1, 1)))
                    for s in runs:
                        k = Launchable(s, binary, inputs, out, on_device={"A": a, "B": b})
                        allow_dynamic_smem(k.kernel, s.smem_bytes, 0)
                        checked_launch(lambda st: k.launch(st), w, out, ref, stream, s.name_expression, bound)
                        us = median_us(lambda: k.launch(stream), None)
                        checked_launch(lambda st: k.launch(st), w, out, ref, stream, s.name_expression, bound)
                        print(f"    {s.name_expression:56s} grid {s.grid[0]:3d} {us:8.1f} us "
                              f"{100 * cublas / us:5.1f}% of cuBLAS", flush=True)
                        if label not in best or us < best[label][0]:
                            best[label] = (us, f"{s.name_expression} grid {s.grid[0]}")
                except Exception as e:     # report and go on: one bad config must not hide the others
                    bad += 1
                    print(f"  {spec.name_expression}: FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
            for label, (us, name) in sorted(best.items()):
                print(f"  cluster {label:2s}: {us:8.1f} us {flop / us / 1e6:6.1f} TFLOP/s {100 * cublas / us:5.1f}% of "
                      f"cuBLAS  ({name})", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["4096x4096x4096_bt", "4096x4096x4096", "8192x8192x8192_bt"]))
