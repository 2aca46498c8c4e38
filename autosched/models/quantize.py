"""Weight-only quantization of (out, in) matrices into the formats our kernels read.

q4f16_1: groups of 32 along `in`, scale = max|w| / 7 (fp16), q = clip(round(w / scale) + 7, 0, 15),
  packed eight to a uint32 (value j at bits 4j) - exactly GemvQ4F16's A_q / A_scale.
int8:    one fp16 scale per output row, scale = max|w| / 127, q = round(w / scale) in [-127, 127].
fp16:    a cast.
"""

from __future__ import annotations

import numpy as np

from autosched.workloads.gemv_q4f16 import GROUP, pack_q4, unpack_q4

FORMATS = ("fp32", "fp16", "int8", "q4f16_1")


def quantize_q4f16_1(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, k = w.shape
    if k % GROUP:
        raise ValueError(f"q4f16_1 needs the input dimension to be a multiple of {GROUP}, got {k}")
    g = w.astype(np.float32).reshape(n, k // GROUP, GROUP)
    scale = (np.abs(g).max(axis=2) / 7.0).astype(np.float16)
    s = scale.astype(np.float32)[..., None]
    q = np.clip(np.rint(np.divide(g, s, out=np.zeros_like(g), where=s > 0)) + 7, 0, 15).astype(np.uint8)
    return pack_q4(q.reshape(n, k)), scale


def dequantize_q4f16_1(a_q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    q = unpack_q4(a_q).astype(np.float32) - 7.0
    return q * np.repeat(scale.astype(np.float32), GROUP, axis=1)


def quantize_int8(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scale = (np.abs(w).max(axis=1) / 127.0).astype(np.float16)
    s = scale.astype(np.float32)[:, None]
    q = np.clip(np.rint(np.divide(w, s, out=np.zeros_like(w, dtype=np.float32), where=s > 0)), -127, 127)
    return q.astype(np.int8), scale


def dequantize_int8(q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    return q.astype(np.float32) * scale.astype(np.float32)[:, None]


def roundtrip(w: np.ndarray, fmt: str) -> np.ndarray:
    """The float32 weights a kernel of format `fmt` effectively multiplies by."""
    if fmt == "fp32":
        return w.astype(np.float32)
    if fmt == "fp16":
        return w.astype(np.float16).astype(np.float32)
    if fmt == "int8":
        return dequantize_int8(*quantize_int8(w))
    if fmt == "q4f16_1":
        return dequantize_q4f16_1(*quantize_q4f16_1(w))
    raise ValueError(f"unknown weight format {fmt!r}; choose from {FORMATS}")


MATMUL_WEIGHTS = ("wq", "wk", "wv", "wo", "w1", "w2", "w3")


# the norm whose weight the decode engine folds into each matrix's columns (engine/weights.fused)
FOLDED_NORM = {"wq": "rms_att", "wk": "rms_att", "wv": "rms_att", "w1": "rms_ffn", "w3": "rms_ffn"}


def quantized_model(weights: dict[str, np.ndarray], fmt: str) -> dict[str, np.ndarray]:
    """The model's weights as the `fmt` engine sees them: matmul weights and the classifier
    quantized (as a separate "wcls" when it is shared with the embedding), the embedding table (the
    lookup) kept.  As in the engine, each RMSNorm's weight is multiplied into the columns of the
    matrices it feeds before they are quantized, and the norm weights become ones: the same
    function, quantized as the engine quantizes it."""
    out = dict(weights)
    cls = weights.get("wcls", weights["token_embedding"]).astype(np.float32)
    for name in MATMUL_WEIGHTS:
        mats = weights[name].astype(np.float32)
        if name in FOLDED_NORM:
            mats = mats * weights[FOLDED_NORM[name]].astype(np.float32)[:, None, :]
        out[name] = np.stack([roundtrip(m, fmt) for m in mats])
    cls = cls * weights["rms_final"].astype(np.float32)[None, :]
    for norm in ("rms_att", "rms_ffn", "rms_final"):
        out[norm] = np.ones_like(weights[norm])
    out["wcls"] = roundtrip(cls, fmt)
    return out
