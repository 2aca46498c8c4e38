"""Split-K micro-kernels served for a dynamic M (ops.HgemmDispatch, one workspace per stream reused
across Ms and configs), for compute-sanitizer; each output, NaN-poisoned before, checked against
float64:

    AUTOSCHED_DYN_SPLIT_K=1 compute-sanitizer --tool memcheck python3 scripts/sanitize_dyn_splitk.py
    AUTOSCHED_DYN_SPLIT_K=1 compute-sanitizer --tool racecheck python3 scripts/sanitize_dyn_splitk.py

A ragged shape (N = 264, K = 520: tiles clipped at N, slices of unequal length), split_k 8, 4 and 3
on the three tiles of dyn_splitk_common, Ms from 1 to 300 in an order that grows and shrinks the
workspace.  Exit code 1 if any check failed.
"""
import sys

from dyn_splitk_common import TILES, WG, WGS, config, dispatcher, max_error  # (scripts/ is sys.path[0])

MS = [100, 1, 65, 300, 33, 100]


def main() -> int:
    import torch
    from cuda.core import Device, Stream

    from autosched.build import Builder
    Device(0).set_current()
    s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    N, K = 264, 520
    kernels = [(WGS, config(*t, split_k=sk)) for t, sk in zip(TILES, (8, 4, 3))] + [(WG, config(*TILES[0]))]
    bad = n = 0
    with Builder() as b:
        g = dispatcher(b, N, K, kernels, [40, 90, 200], m_max=512)
        w = (torch.randn((N, K), device="cuda") / K ** 0.5).half()
        for M in MS:
            x = torch.randn((M, K), device="cuda").half()
            y = torch.full((M, N), float("nan"), device="cuda").half()
            g(s, x, w, y, M)
            torch.cuda.synchronize()
            err, bound = max_error(y, x, w)
            n += 1
            ok = err <= bound
            bad += not ok
            print(f"M={M:4d} {g.family(M):18s} {g.config(M)} max error {err:.3g} (bound {bound:.3g})"
                  f"{'' if ok else ' WRONG'}", flush=True)
    print(f"{n - bad} of {n} launches right, {g.workspaces.allocations} workspace grants; checked {n} configs")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
