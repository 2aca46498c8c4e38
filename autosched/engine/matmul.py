"""The engine's matmuls: one weight matrix shape, every layer's copy of it, and the kernel for it.

    q4f16_1          the tuned GEMV (config from the database, else a same-device recording,
                     else the rule-based default: ops.gemv.choose_config), fp16 in and out
    fp32/fp16/int8   gemv_dense of kernels/decode.cuh
"""

from __future__ import annotations

import dataclasses

import numpy as np

from autosched import layouts
from autosched.engine.weights import quantize_int8, quantize_q4f16_1
from autosched.templates import template_for
from autosched.templates.decode import gemv_dense_spec
from autosched.workloads import GemvQ4F16


def launch_config(spec, pdl: bool):
    """The spec's launch shape; with `pdl`, launched with programmatic stream serialization (the
    kernel may start while its predecessor runs: see kernels/pdl.cuh)."""
    from cuda.core import LaunchConfig
    kw = {"programmatic_stream_serialization": True} if pdl else {}
    return LaunchConfig(grid=spec.grid, block=spec.block, shmem_size=spec.smem_bytes, **kw)


def pdl_supported() -> bool:
    try:
        from cuda.core import LaunchConfig
        LaunchConfig(grid=(1, 1, 1), block=(32, 1, 1), programmatic_stream_serialization=True)
        return True
    except TypeError:         # a cuda.core without the option: launch the ordinary way
        return False


class LoadedKernel:
    """A built KernelSpec, ready to launch."""

    def __init__(self, spec, builder, pdl: bool = False):
        from cuda.core import ObjectCode
        binary = builder.build(spec)
        if not binary.ok:
            raise RuntimeError(f"{spec.name_expression} failed to build:\n{binary.error}")
        self.spec = spec
        self.binary = binary
        mod = ObjectCode.from_cubin(binary.cubin, symbol_mapping={spec.name_expression: binary.symbol.encode()})
        self.kernel = mod.get_kernel(spec.name_expression)
        self.config = launch_config(spec, pdl)

    def __call__(self, stream, *args):
        from cuda.core import launch
        launch(stream, self.config, self.kernel, *args)


def ptr(t) -> np.uint64:
    return np.uint64(t.data_ptr()) if t is not None else np.uint64(0)


class Matmul:
    """out (N) = W_layer (N, K) . x for every layer's W of one shape."""

    def __init__(self, name: str, fmt: str, n: int, k: int, act: str, out: str, device_info, db=None,
                 config: dict | None = None, pdl: bool = False):
        self.name, self.fmt, self.n, self.k = name, fmt, n, k
        self.layers: list[dict] = []
        if fmt == "q4f16_1":
            if act != "half" or out != "half":
                raise ValueError("the q4f16_1 GEMV reads and writes fp16")
            from autosched.ops.gemv import Choice, choose_config
            self.workload = GemvQ4F16(n, k)
            self.choice = (Choice(config, "given") if config is not None
                           else choose_config(self.workload, device_info, db))
            self.spec = template_for(self.workload).render(self.workload, self.choice.config, device_info)
            if pdl:    # the same kernel plus the weight prefetch and the dependency wait
                self.spec = dataclasses.replace(self.spec, options=(*self.spec.options, "-DAUTOSCHED_PDL"))
        else:
            self.workload = None
            self.choice = None
            self.spec = gemv_dense_spec(n, k, fmt, act, out, device_info.arch)
        self.kernel = None
        self.pdl = pdl

    def load(self, builder) -> None:
        self.kernel = LoadedKernel(self.spec, builder, self.pdl)

    def add_layer(self, w) -> None:
        """w: (N, K) float32 torch tensor on the GPU; kept only in the packed form."""
        if tuple(w.shape) != (self.n, self.k):
            raise ValueError(f"{self.name}: expected a ({self.n}, {self.k}) matrix, got {tuple(w.shape)}")
        import torch
        if self.fmt == "q4f16_1":
            a_q, a_scale = quantize_q4f16_1(w)
            host = {"A_q": a_q, "A_scale": a_scale}
            packed = {a.name: layouts.apply(a.layout, a.params(), host[a.name]).contiguous()
                      for a in self.spec.args if a.role == "input" and a.name in host}
        elif self.fmt == "int8":
            q, s = quantize_int8(w)
            packed = {"w": q.contiguous(), "scale": s.contiguous()}
        else:
            packed = {"w": w.to(torch.float32 if self.fmt == "fp32" else torch.float16).contiguous()}
        self.layers.append(packed)

    def nbytes(self, layer: int) -> int:
        return sum(t.numel() * t.element_size() for t in self.layers[layer].values())

    def __call__(self, stream, layer: int, out, x) -> None:
        p = self.layers[layer]
        if self.fmt == "q4f16_1":
            args = [ptr(out) if a.role == "output" else ptr(x) if a.name == "V" else ptr(p[a.name])
                    for a in self.spec.args]
        else:
            args = [ptr(out), ptr(p["w"]), ptr(p.get("scale")), ptr(x), np.int32(self.n), np.int32(self.k)]
        self.kernel(stream, *args)

    def describe(self) -> str:
        if self.choice is not None:
            return f"{self.name} {self.n}x{self.k} q4f16_1 GEMV, config from {self.choice.source}"
        return f"{self.name} {self.n}x{self.k} {self.fmt} {self.spec.name_expression}"
