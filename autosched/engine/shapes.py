"""The decode step's matmuls by name: their shapes (templates/decode.py, beside the kernels that run
them) and the epilogue each applies (kernels/epilogue.cuh), below the engine and its prefill, which
both read them."""

from __future__ import annotations

from autosched.templates.decode import matmul_shapes  # noqa: F401  (the engine's name for it)

# the epilogue each matmul of the step applies (templates/epilogue.py)
EPILOGUE = {"qkv": "norm", "o": "residual", "gate_up": "norm_swiglu", "down": "residual", "cls": "norm"}
