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

from dyn_splitk_common import TILES, WG, WGS, check_sequence, config, dispatcher  # (scripts/ is sys.path[0])

MS = [100, 1, 65, 300, 33, 100]


def main() -> int:
    import torch
    from cuda.core import Device, Stream

    from autosched.build import Builder
    Device(0).set_current()
    s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    N, K = 264, 520
    kernels = [(WGS, config(*t, split_k=sk)) for t, sk in zip(TILES, (8, 4, 3))] + [(WG, config(*TILES[0]))]
    with Builder() as b:
        g = dispatcher(b, N, K, kernels, [40, 90, 200], m_max=512)
        bad = check_sequence(g, s, N, K, MS)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
