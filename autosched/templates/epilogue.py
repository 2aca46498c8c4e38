"""The decode-step epilogues a matmul kernel can apply to its row sums (kernels/epilogue.cuh).

    store         out = C
    norm          out = C * rsqrt(mean of the residual's squares + eps)   (norm weight folded into W)
    residual      x += C; out = x in the activation type; the next norm's sum of squares += x^2
    norm_swiglu   rows (2i, 2i+1) = (gate i, up i), both norm-scaled: out[i] = silu(gate) * up

A fused kernel takes five arguments after its own: x (float residual), ss_in, ss_out (sums of
squares, double), dim (int32) and eps (float32).
"""

from __future__ import annotations

EPILOGUES = {"store": 0, "norm": 1, "residual": 2, "norm_swiglu": 3}


def epilogue_id(name: str) -> int:
    if name not in EPILOGUES:
        raise ValueError(f"unknown epilogue {name!r}; choose from {', '.join(EPILOGUES)}")
    return EPILOGUES[name]


def pairs_rows(name: str) -> bool:
    """Does the epilogue need a block's rows in (gate, up) pairs?"""
    return name == "norm_swiglu"
