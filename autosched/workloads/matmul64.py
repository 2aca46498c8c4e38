"""The float64 products every GEMM reference and error bound is made of, on the GPU when one is here.

A check against float64 costs three M x N x K products on the host (the reference, and the bound's
|A||B| and |AB|): for the dynamic tuner's probes and verification (a new shape for each micro-kernel
and each instance, up to 4096^3) that was most of a tuning run's time on the H100 (~30 s of numpy
float64 against a few seconds of compiling and timing).  The GPU's float64 GEMM does the same
product in milliseconds, to the same precision (float64 sums in another order: differences of
~1e-16 relative, far below any bound here).  torch is optional: without it, or without a CUDA GPU,
or for a product too small to be worth the copies, numpy computes it as before.
"""

from __future__ import annotations

import numpy as np

GPU_MIN_MACS = 1 << 27          # below this numpy is about as quick as the copies alone

_torch = None                   # the module once it has been found usable, False once not


def _gpu_torch():
    global _torch
    if _torch is None:
        try:
            import torch
            _torch = torch if torch.cuda.is_available() else False
        except Exception:       # not installed, or a broken install: numpy serves
            _torch = False
    return _torch or None


def matmul64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b in float64 (a (M, K), b (K, N), any real dtype) as a host array."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    torch = _gpu_torch() if a.shape[0] * a.shape[1] * b.shape[1] >= GPU_MIN_MACS else None
    if torch is None:
        return a @ b
    ta = torch.from_numpy(np.ascontiguousarray(a)).cuda()
    tb = torch.from_numpy(np.ascontiguousarray(b)).cuda()
    out = (ta @ tb).cpu().numpy()
    del ta, tb
    return out
