"""q4f16_1 GEMV as an op on torch tensors, served by the fastest kernel known for this GPU.

    w = Q4Linear(a_q, a_scale)      # picks a config, builds it, packs the weights once
    y = w(v)                        # (N,) fp16 = dequant(a_q, a_scale) . v, on torch's stream

The config comes from an ordered chain of sources, each answering None when it has nothing: the
tuning database for this exact device key, then a shipped recording taken on the same device key,
then the template's rule-based default.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from autosched.templates import template_for
from autosched.workloads import GemvQ4F16


@dataclass(frozen=True)
class Choice:
    config: dict
    source: str                   # "database", "recording <name>" or "default"
    median_us: float | None = None


def from_database(workload, template, device, db, k: int = 1) -> list[Choice]:
    """Up to k configs that passed, fastest first, measured for this exact device key."""
    if db is None:
        return []
    return [Choice(r.config, "database", r.measurement.median_us)
            for r in db.fastest(workload.key, device.key, template.family, k)]


def from_recording(workload, template, device, recordings=None, k: int = 1) -> list[Choice]:
    from autosched.measure.recording import find_recording
    rec = find_recording(workload.key, template.family, recordings)
    if rec is None or rec.device.key != device.key:
        return []                 # numbers from another GPU or driver say nothing about this one
    return [Choice(c, f"recording {rec.name}", m.median_us) for c, m in rec.fastest(k)]


def ranked_configs(workload, device, db=None, recordings=None, k: int = 1) -> list[Choice]:
    """Up to k configs, fastest first, from the first source that has any: the database, then a
    same-device recording; the rule-based default when neither has one."""
    template = template_for(workload)
    space = template.space(workload, device)
    for source in (lambda: from_database(workload, template, device, db, k),
                   lambda: from_recording(workload, template, device, recordings, k)):
        choices = [c for c in source() if space.contains(c.config)]
        if choices:
            return choices
    return [Choice(template.default_config(workload, device), "default")]


def choose_config(workload, device, db=None, recordings=None) -> Choice:
    return ranked_configs(workload, device, db, recordings, 1)[0]


class Q4Linear:
    """A packed q4f16_1 weight and the kernel chosen for it (needs a GPU and torch)."""

    def __init__(self, a_q, a_scale, *, db=None, builder=None, device_id: int = 0):
        import torch
        from cuda.core import Device

        from autosched import layouts
        from autosched.build import Builder
        from autosched.device import query
        a_q = a_q.cpu().numpy() if hasattr(a_q, "cpu") else np.asarray(a_q)
        a_scale = a_scale.cpu().numpy() if hasattr(a_scale, "cpu") else np.asarray(a_scale)
        self.workload = GemvQ4F16(a_q.shape[0], a_q.shape[1] * 8)
        self.workload.validate_inputs({"A_q": a_q, "A_scale": a_scale,
                                       "V": np.zeros(self.workload.K, dtype=np.float16)})
        self.device_info = query(device_id)
        Device(device_id).set_current()
        self.choice = choose_config(self.workload, self.device_info, db)
        template = template_for(self.workload)
        self.spec = template.render(self.workload, self.choice.config, self.device_info)
        from autosched.launch import LoadedKernel
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

        from autosched.runtime import ptr
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
