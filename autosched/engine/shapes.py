"""The decode step's matmuls by name: their shapes and the epilogue each applies (kernels/epilogue.cuh),
below the engine and its prefill, which both read them."""

from __future__ import annotations

from autosched.models.llama2c import LlamaConfig

# the epilogue each matmul of the step applies (templates/epilogue.py)
EPILOGUE = {"qkv": "norm", "o": "residual", "gate_up": "norm_swiglu", "down": "residual", "cls": "norm"}


def matmul_shapes(cfg: LlamaConfig) -> dict[str, tuple[int, int]]:
    """(N, K) of each matmul the engine launches (Q, K, V fused; gate and up fused)."""
    q_dim = cfg.n_heads * cfg.head_size
    return {"qkv": (q_dim + 2 * cfg.kv_dim, cfg.dim), "o": (cfg.dim, q_dim), "gate_up": (2 * cfg.hidden_dim, cfg.dim),
            "down": (cfg.dim, cfg.hidden_dim), "cls": (cfg.vocab_size, cfg.dim)}
