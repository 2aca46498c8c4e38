"""The q4f16_1 weight layouts made on the worker's GPU (kernels/relayout_q4.cuh) from the natural
input it uploaded once: what layouts.apply computes on the host, for the layouts a GEMV config asks
for.  A tuning worker meets dozens of them per shape (76 among 256 configs of 4096 x 4096), and the
host packing, tens of milliseconds each, was work every GPU of a host repeated: on two H100s it held
the measuring rate of two GPUs to 1.74x one GPU's (2026-11-26).

    relayout = GpuRelayout(device, stream, arch)
    if relayout.handles(layout, params, host):
        buf = relayout(layout, params, natural_buf, host.shape)    # a new device buffer

Anything it does not handle (other layouts, shapes the tiles do not divide, which layouts.apply
refuses by name) stays on the host path.
"""

from __future__ import annotations

import numpy as np

from autosched.measure.reference_gpu import load_utility
from autosched.runtime import launch_config, ptr
from autosched.templates.base import ArgSpec, KernelSpec, kernel_source

# cuda.core is imported inside functions: optional / slow to import, a CPU install runs without it

THREADS = 256
NIBBLES = {"natural": 0, "k": 1, "rows": 2}


def relayout_spec(layout: str, params: dict, shape: tuple[int, int], sm_count: int, arch: str) -> KernelSpec:
    rows, cols = shape
    blocks = max(1, min(-(-rows * cols // THREADS), 8 * sm_count))
    if layout == "q4_words":
        name, scalars = f"relayout_q4_words<{NIBBLES[params['nibbles']]}>", ("rows", "kw", "ln", "lk")
        values, ctype = (rows, cols, params["n"], params["k"]), "unsigned*"
    elif layout == "q4_scales":
        name, scalars = "relayout_q4_scales", ("rows", "groups", "ln")
        values, ctype = (rows, cols, params["n"]), "unsigned short*"
    else:
        raise ValueError(f"no GPU relayout for layout {layout!r}")
    return KernelSpec(family="relayout_q4", workload_key=f"relayout:{rows}x{cols}", config=(),
                      source=kernel_source("relayout_q4.cuh"), name_expression=name,
                      grid=(blocks, 1, 1), block=(THREADS, 1, 1), smem_bytes=0,
                      args=(ArgSpec("in", "input", ctype="const " + ctype), ArgSpec("out", "output", ctype=ctype),
                            *(ArgSpec(s, "scalar", value=v, dtype="i64", ctype="long long")
                              for s, v in zip(scalars, values))),
                      arch=arch)


def handles(layout: str, params: dict, host: np.ndarray) -> bool:
    """Whether the GPU makes `layout` of `host` (as layouts.apply would, to the bit)."""
    if host.ndim != 2:
        return False
    rows, cols = host.shape
    if layout == "q4_words":
        return (host.dtype == np.uint32 and params.get("nibbles") in NIBBLES and rows % params["n"] == 0
                and cols % params["k"] == 0 and (params["nibbles"] != "rows" or rows % 2 == 0))
    if layout == "q4_scales":
        return host.dtype == np.float16 and rows % params["n"] == 0
    return False


class GpuRelayout:
    """Makes a layout of an input already on the GPU (its natural words or scales) into a new buffer,
    on the worker's stream.  Each kernel is built once (the build cache) on first use."""

    def __init__(self, device, stream, sm_count: int, arch: str):
        self.device, self.stream, self.sm_count, self.arch = device, stream, sm_count, arch
        self._kernels: dict[str, object] = {}

    handles = staticmethod(handles)

    def __call__(self, layout: str, params: dict, natural_buf, shape: tuple[int, int], itemsize: int):
        from cuda.core import launch
        spec = relayout_spec(layout, params, shape, self.sm_count, self.arch)
        kernel = self._kernels.get(spec.name_expression)
        if kernel is None:
            kernel = self._kernels[spec.name_expression] = load_utility(spec)
        out = self.device.allocate(max(1, shape[0] * shape[1] * itemsize), stream=self.stream)
        launch(self.stream, launch_config(spec, pdl=False), kernel, ptr(natural_buf), ptr(out),
               *(np.int64(a.value) for a in spec.args if a.role == "scalar"))
        return out
