"""FP16 GEMM Y (M, N) = X (M, K) . W^T, W stored (N, K) as a linear layer holds it, M given at each
call, on the dynamic-M micro-kernels (kernels/hgemm_dyn.cuh): one compiled kernel serves every M,
only its grid follows M.

    g = HgemmDispatch(N, K, device)             # finds this (N, K)'s dynamic tuning artifact, if any
    g.load(builder)                             # builds and loads each micro-kernel it may pick, once
    g(stream, x, w, y, M)                       # table lookup over M, then one launch
    y = linear(x, w)                            # the same on torch tensors (needs a GPU)

Which micro-kernel serves M:
  * `dispatched`: the decision tree of a dynamic tuning run (autosched.dynamic, `autosched
    tune-dynamic`) for this (N, K), layout nt, fp16, on this device key, whose range holds M; the
    artifact is the JSON beside the database (dynamic/export.artifact_path).  A run on the synthetic
    runner is modelled, not measured, and is never served.
  * `default`: otherwise the rule-based ladder DEFAULT_LADDER (no measurement): hgemm_dyn's own
    default (128 x 128 blocks of four 64 x 64 warps) from M = 257 up, smaller blocks below, so that a
    short prompt still gives the GPU more than a few dozen blocks.  hgemm_dyn rather than hgemm_mma:
    the same kernel family as the dispatched ones, compiled once for every M.

Host cost per call: a bisect over the tree's bounds (dynamic/dispatch.Dispatcher), a dict lookup of
the launch config per grid, and cuda.core's launch.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from autosched.templates.hgemm_dyn import HgemmDynTemplate, micro_kernel_space

# (largest M it serves, config): the default micro-kernel by M where no dynamic tuning covers M
DEFAULT_LADDER = (
    (64, {"bm": 64, "bn": 64, "wm": 32, "wn": 32, "bk": 32, "stages": 3, "pad": 8, "local_pad": 1}),
    (256, {"bm": 64, "bn": 128, "wm": 32, "wn": 64, "bk": 32, "stages": 3, "pad": 8, "local_pad": 1}),
    (None, {"bm": 128, "bn": 128, "wm": 64, "wn": 64, "bk": 32, "stages": 3, "pad": 8, "local_pad": 1}),
)
LAYOUT = "nt"          # Y = X . W^T with W (N, K): B stored (N, K), the `_bt` shapes


def artifact_folder(db_path) -> Path:
    """Where tune-dynamic saves its results for the database at db_path (dynamic/export.py)."""
    from autosched.dynamic.export import artifact_path
    return artifact_path(db_path, "x", "y").parent


def find_dynamic_result(db_path, N: int, K: int, device_key: str):
    """The dynamic tuning result saved beside the database for hgemm Mx{N}x{K}_bt fp16 on
    `device_key` (measured, not synthetic), the widest range first; None where there is none."""
    from autosched.dynamic.tune import DynamicResult
    folder = artifact_folder(db_path)
    found = []
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            d = json.loads(p.read_text())
            w = d["workload"]
            if (d.get("device_key") != device_key or d.get("runner") == "synthetic" or w.get("op") != "hgemm"
                    or (w["N"], w["K"], w["layout"], w["dtype"]) != (N, K, LAYOUT, "fp16")):
                continue
            found.append((w["range"][1] - w["range"][0], p, d))
        except (OSError, ValueError, KeyError, TypeError):
            continue                   # not an artifact of ours (or a damaged one): not served
    if not found:
        return None
    _, path, d = max(found, key=lambda f: (f[0], str(f[1])))
    res = DynamicResult.from_json(d)
    res.artifact = path
    return res


class HgemmDispatch:
    """Y = X . W^T for one (N, K) and any M in 1..m_max: the micro-kernel a dynamic tuning result's
    dispatcher picks for M where it covers M, else the DEFAULT_LADDER's."""

    def __init__(self, N: int, K: int, device, *, result=None, db_path=None, m_max: int = 4096):
        if K % 8:
            raise ValueError(f"K={K}: rows of X and W are read in 16-byte chunks, so K must be a multiple of 8")
        self.N, self.K, self.device, self.m_max = N, K, device, m_max
        self.template = HgemmDynTemplate()
        if result is None and db_path is not None:
            result = find_dynamic_result(db_path, N, K, device.key)
        if result is not None and (result.workload.N, result.workload.K) != (N, K):
            raise ValueError(f"a dynamic result for {result.workload.shape_str} cannot serve {N}x{K}")
        self.result = result
        space = micro_kernel_space(N, 1, device)
        self.configs: list[dict] = []
        self.lo, self.hi = (result.workload.lo, result.workload.hi) if result is not None else (1, 0)
        if result is not None:
            self.configs = [space.validate(k.config) for k in result.kernels]
        self._dispatched = len(self.configs)
        # the ladder rungs some M in 1..m_max outside [lo, hi] falls on
        self._ladder: list[tuple[int, int]] = []       # (largest M, index into configs)
        prev = 0
        for top, cfg in DEFAULT_LADDER:
            end = m_max if top is None else min(top, m_max)
            if not (self.lo <= prev + 1 and end <= self.hi):         # some M of the rung is not dispatched
                self.configs.append(space.nearest(cfg))
                self._ladder.append((end, len(self.configs) - 1))
            prev = end
            if end >= m_max:
                break
        self._kernels = None

    # -- host side: which kernel, its spec -------------------------------------------------------
    def index(self, M: int) -> int:
        """Index into self.configs of the micro-kernel that serves M."""
        if self._dispatched and self.lo <= M <= self.hi:
            return self.result.dispatcher(M)
        for top, i in self._ladder:
            if M <= top:
                return i
        if self._ladder:
            return self._ladder[-1][1]
        raise ValueError(f"M={M} is outside 1..{self.m_max}")

    def config(self, M: int) -> dict:
        return self.configs[self.index(M)]

    def source(self, M: int) -> str:
        """'dispatched' or 'default' for the micro-kernel that serves M."""
        return "dispatched" if self.index(M) < self._dispatched else "default"

    def grid(self, M: int) -> tuple[int, int, int]:
        c = self.config(M)
        return (-(-self.N // c["bn"]), -(-M // c["bm"]), 1)

    def specs(self) -> list:
        """Each micro-kernel's KernelSpec (rendered at M = m_max; the binary does not depend on M)."""
        from autosched.workloads import Hgemm
        w = Hgemm(self.m_max, self.N, self.K, b_col=1)
        return [self.template.render(w, c, self.device) for c in self.configs]

    def describe(self) -> str:
        n, k = self.N, self.K
        if self._dispatched:
            a = self.result.artifact
            where = f" ({Path(a).name})" if a else ""
            text = (f"{n}x{k} fp16 GEMM: DietCode dispatch over M in {self.lo}..{self.hi}, "
                    f"{self._dispatched} micro-kernels{where}")
            if self._ladder:
                text += "; M outside it: default hgemm_dyn configs by M"
            return text
        return f"{n}x{k} fp16 GEMM: default hgemm_dyn configs by M (no dynamic tuning artifact for {n}x{k} on this GPU)"

    # -- device side --------------------------------------------------------------------------
    def load(self, builder) -> None:
        from autosched.launch import LoadedKernel
        specs = self.specs()
        list(builder.build_many(specs))
        self._kernels = [LoadedKernel(s, builder) for s in specs]

    def __call__(self, stream, x, w, y, M: int) -> None:
        """y (M, N) = x (M, K) . w (N, K)^T: device pointers (or tensors), fp16, row-major."""
        from autosched.runtime import ptr
        if self._kernels is None:
            raise RuntimeError("HgemmDispatch.load(builder) first")
        i = self.index(M)
        c = self.configs[i]
        self._kernels[i].launch(stream, (-(-self.N // c["bn"]), -(-M // c["bm"]), 1), ptr(x), ptr(w), ptr(y),
                                np.int32(M), np.int32(self.N), np.int32(self.K))


_CACHE: dict = {}


def linear(x, w, out=None, *, db_path=None):
    """y (M, N) fp16 = x (M, K) . w (N, K)^T on torch CUDA tensors, on torch's current stream; the
    dispatcher of (N, K) is made and its kernels loaded on first use, then kept."""
    import torch
    from cuda.core import Device, Stream

    from autosched.device import query
    if x.dtype != torch.float16 or w.dtype != torch.float16 or not (x.is_cuda and w.is_cuda):
        raise ValueError("linear takes CUDA float16 tensors")
    if x.dim() != 2 or w.dim() != 2 or x.shape[1] != w.shape[1]:
        raise ValueError(f"x (M, K) and w (N, K) expected, got {tuple(x.shape)} and {tuple(w.shape)}")
    x, w = x.contiguous(), w.contiguous()
    M, K = x.shape
    N = w.shape[0]
    dev = x.device.index or 0
    key = (dev, N, K, str(db_path))
    g = _CACHE.get(key)
    if g is None:
        from autosched.build import Builder
        from autosched.database import default_db_path
        Device(dev).set_current()
        g = HgemmDispatch(N, K, query(dev), db_path=db_path or default_db_path(), m_max=max(4096, M))
        with Builder(workers=1) as b:
            g.load(b)
        _CACHE[key] = g
    if M > g.m_max:
        raise ValueError(f"M={M} is over the {g.m_max} this dispatcher was made for")
    if out is None:
        out = torch.empty((M, N), dtype=torch.float16, device=x.device)
    g(Stream.from_handle(torch.cuda.current_stream(x.device).cuda_stream), x, w, out, M)
    return out
