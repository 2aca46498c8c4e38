"""hgemm_stream micro-kernels served for a dynamic M (ops.HgemmDispatch, one workspace per stream reused
across Ms and configs), for compute-sanitizer; each output, NaN-poisoned before, checked against
float64:

    AUTOSCHED_DYN_STREAM=1 compute-sanitizer --tool memcheck python3 scripts/sanitize_dyn_stream.py
    AUTOSCHED_DYN_STREAM=1 compute-sanitizer --tool racecheck python3 scripts/sanitize_dyn_stream.py

A ragged shape (N = 264, K = 520: W rows clipped at N, slices of unequal length), split_k 4, 2 and 1,
Ms from 1 to 300 in an order that grows and shrinks the workspace.  Exit code 1 if any check failed.
"""
import sys

MS = [100, 1, 65, 300, 33, 100]
KERNELS = [
    {"rw": 2, "wn": 2, "wk": 2, "mt": 8, "kw": 32, "stages": 4, "split_k": 4},
    {"rw": 1, "wn": 4, "wk": 4, "mt": 64, "kw": 32, "stages": 3, "split_k": 2},
    {"rw": 1, "wn": 2, "wk": 4, "mt": 16, "kw": 64, "stages": 6, "split_k": 1},
]


def main() -> int:
    import torch
    from cuda.core import Device, Stream

    from autosched.build import Builder
    from autosched.device import query
    from autosched.dynamic.handmade import handmade_result
    from autosched.dynamic.workload import DynamicWorkload
    from autosched.ops import HgemmDispatch
    Device(0).set_current()
    s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    N, K = 264, 520
    dev = query(0)
    dw = DynamicWorkload.parse("hgemm", f"Mx{N}x{K}_bt", (1, 512))
    bad = n = 0
    with Builder() as b:
        g = HgemmDispatch(N, K, dev, result=handmade_result(dw, [("hgemm_stream", c) for c in KERNELS], [40, 90],
                                                            dev.key), backend="mma", m_max=512)
        g.load(b)
        w = (torch.randn((N, K), device="cuda") / K ** 0.5).half()
        for M in MS:
            x = torch.randn((M, K), device="cuda").half()
            y = torch.full((M, N), float("nan"), device="cuda").half()
            g(s, x, w, y, M)
            torch.cuda.synchronize()
            want = x.double() @ w.double().t()
            err = float((y.double() - want).abs().max()) if torch.isfinite(y).all() else float("inf")
            bound = 1e-2 * float(want.abs().max())
            n += 1
            ok = err <= bound
            bad += not ok
            print(f"M={M:4d} {g.family(M):14s} {g.config(M)} max error {err:.3g} (bound {bound:.3g})"
                  f"{'' if ok else ' WRONG'}", flush=True)
    print(f"{n - bad} of {n} launches right, {g.workspaces.allocations} workspace grants; checked {n} configs")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
