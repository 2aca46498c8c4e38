"""q4f16_1 GEMV as an op on torch tensors, served by the fastest kernel known for this GPU.

    w = Q4Linear(a_q, a_scale)      # picks a config, builds it, packs the weights once
    y = w(v)                        # (N,) fp16 = dequant(a_q, a_scale) . v, on torch's stream

The config is the top of autosched.selection.rank: the tuning database for this exact device key,
then a shipped recording taken on the same device key, then the template's rule-based default.
"""

from __future__ import annotations

import numpy as np

from autosched import layouts
from autosched.build import Builder
from autosched.device import query
from autosched.launch import LoadedKernel
from autosched.registry import template_named
from autosched.runtime import ptr
from autosched.selection import rank
from autosched.workloads import GemvQ4F16

# torch and cuda.core are imported inside functions: optional / slow to import, a CPU install runs without
# them


class Q4Linear:
    """A packed q4f16_1 weight and the kernel chosen for it (needs a GPU and torch)."""

    def __init__(self, a_q, a_scale, *, db=None, builder=None, device_id: int = 0):
        import torch
        from cuda.core import Device
        a_q = a_q.cpu().numpy() if hasattr(a_q, "cpu") else np.asarray(a_q)
        a_scale = a_scale.cpu().numpy() if hasattr(a_scale, "cpu") else np.asarray(a_scale)
        self.workload = GemvQ4F16(a_q.shape[0], a_q.shape[1] * 8)
        self.workload.validate_inputs({"A_q": a_q, "A_scale": a_scale,
                                       "V": np.zeros(self.workload.K, dtype=np.float16)})
        self.device_info = query(device_id)
        Device(device_id).set_current()
        self.choice = rank(self.workload, self.device_info, db)[0]
        self.spec = template_named(self.choice.template).render(self.workload, self.choice.config, self.device_info)
        if builder is None:
            with Builder(workers=1) as b:
                self._kernel = LoadedKernel(self.spec, b)
        else:
            self._kernel = LoadedKernel(self.spec, builder)
        host = {"A_q": a_q, "A_scale": a_scale}
        self._packed = {a.name: torch.from_numpy(np.ascontiguousarray(
            layouts.apply(a.layout, a.params(), host[a.name])).view(np.uint8)).to(f"cuda:{device_id}")
            for a in self.spec.args if a.role == "input" and a.name in host}

    def __call__(self, v, out=None):
        import torch
        from cuda.core import Stream
        K, N = self.workload.K, self.workload.N
        if v.dtype != torch.float16 or v.numel() != K or not v.is_cuda or not v.is_contiguous():
            raise ValueError(f"v must be a contiguous CUDA float16 tensor of {K} elements, got "
                             f"{tuple(v.shape)} {v.dtype} on {v.device}")
        if out is None:
            out = torch.empty(N, dtype=torch.float16, device=v.device)
        args = [ptr(out) if a.role == "output" else ptr(v) if a.name == "V" else ptr(self._packed[a.name])
                for a in self.spec.args]
        stream = Stream.from_handle(torch.cuda.current_stream(v.device).cuda_stream)
        self._kernel(stream, *args)
        return out
