"""KernelSpecs of the decode step's non-matmul kernels (kernels/decode.cuh).

These take their sizes as arguments (one binary serves every layer and position); the only knob is
the block size of the reductions, so there is no search space to speak of yet.  The engine launches
them with its own arguments (see the signatures in the .cuh), so the specs list none.
"""

from __future__ import annotations

from autosched.templates.base import KernelSpec, kernel_source

HEADER = "decode.cuh"


def _spec(name: str, expr: str, arch: str, grid, block, smem: int = 0) -> KernelSpec:
    return KernelSpec(family="decode", workload_key=f"decode:{name}", config=(("kernel", expr),),
                      source=kernel_source(HEADER), name_expression=expr, grid=grid, block=block,
                      smem_bytes=smem, args=(), arch=arch)


def rmsnorm_spec(dim: int, arch: str, threads: int = 256) -> KernelSpec:
    del dim      # one block walks any dim; kept in the signature for when threads follow dim
    return _spec("rmsnorm", f"rmsnorm<{threads}>", arch, (1, 1, 1), (threads, 1, 1))


def rope_spec(q_dim: int, arch: str, threads: int = 128) -> KernelSpec:
    return _spec("rope", "rope", arch, (-(-q_dim // 2 // threads), 1, 1), (threads, 1, 1))


def elementwise_spec(kernel: str, n: int, arch: str, threads: int = 256) -> KernelSpec:
    if kernel not in ("silu_mul", "residual_add"):
        raise ValueError(f"unknown elementwise kernel {kernel!r}")
    return _spec(kernel, kernel, arch, (-(-n // threads), 1, 1), (threads, 1, 1))


def attention_spec(n_heads: int, seq_len: int, arch: str, threads: int = 128) -> KernelSpec:
    return _spec("attention", f"attention<{threads}>", arch, (n_heads, 1, 1), (threads, 1, 1), smem=4 * seq_len)
