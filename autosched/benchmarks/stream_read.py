"""KernelSpec of the read-only streaming kernel (kernels/stream_read.cuh) used for the floor."""

from __future__ import annotations

from autosched.templates.base import ArgSpec, KernelSpec, kernel_source


def stream_read_spec(unroll: int, arch: str) -> KernelSpec:
    return KernelSpec(family="stream_read", workload_key="stream_read", config=(("unroll", unroll),),
                      source=kernel_source("stream_read.cuh"), name_expression=f"stream_read<{unroll}>",
                      grid=(1, 1, 1), block=(256, 1, 1), smem_bytes=0,
                      args=(ArgSpec("src", "input"), ArgSpec("n16", "scalar"), ArgSpec("never", "scalar"),
                            ArgSpec("sink", "output")), arch=arch)
