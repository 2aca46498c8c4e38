"""hgemm_stream micro-kernels served for a dynamic M (ops.HgemmDispatch, one workspace per stream reused
across Ms and configs), for compute-sanitizer; each output, NaN-poisoned before, checked against
float64:

    AUTOSCHED_DYN_STREAM=1 compute-sanitizer --tool memcheck python3 scripts/sanitize_dyn_stream.py
    AUTOSCHED_DYN_STREAM=1 compute-sanitizer --tool racecheck python3 scripts/sanitize_dyn_stream.py

A ragged shape (N = 264, K = 520: W rows clipped at N, slices of unequal length), split_k 4, 2 and 1,
Ms from 1 to 300 in an order that grows and shrinks the workspace.  Exit code 1 if any check failed.
"""
import sys

from dyn_splitk_common import check_sequence, dispatcher  # (scripts/ is sys.path[0])

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
    Device(0).set_current()
    s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    N, K = 264, 520
    with Builder() as b:
        g = dispatcher(b, N, K, [("hgemm_stream", c) for c in KERNELS], [40, 90], m_max=512, backend="mma")
        bad = check_sequence(g, s, N, K, MS)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
