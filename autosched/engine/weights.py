"""A model's weights as the engine keeps them on the GPU, in torch (needs torch; runs on any device,
so CI checks it on the CPU against the numpy quantizers of autosched.models.quantize).

The engine multiplies by fused matrices: Q, K and V stacked into one (q_dim + 2 kv_dim, dim) matrix
and gate (w1) and up (w3) into one (2 hidden, dim) matrix, so a layer makes four matmul launches.
The classifier is quantized like the other matmuls (as MLC's q4f16_1 does); the embedding table
stays float32 for the lookup.
"""

from __future__ import annotations

import numpy as np

from autosched.layouts import pack_nibbles
from autosched.models.llama2c import LlamaConfig
from autosched.workloads.gemv_q4f16 import GROUP

from autosched.models.quantize import FORMATS  # noqa: E402  (one list of weight formats)

# torch is imported inside functions: optional / slow to import, a CPU install runs without it


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown weight format {fmt!r}; choose from {', '.join(FORMATS)}")
    return fmt


def quantize_q4f16_1(w):
    """torch twin of models.quantize.quantize_q4f16_1: (N, K) float -> (A_q (N, K/8) int32 words
    holding the same bits as the numpy uint32 ones, A_scale (N, K/32) fp16)."""
    import torch
    n, k = w.shape
    if k % GROUP:
        raise ValueError(f"q4f16_1 needs the input dimension to be a multiple of {GROUP}, got {k}")
    g = w.float().reshape(n, k // GROUP, GROUP)
    scale = (g.abs().amax(dim=2) / 7.0).half()
    s = scale.float()[..., None]
    q = torch.where(s > 0, g / torch.where(s > 0, s, torch.ones_like(s)), torch.zeros_like(g))
    q = (torch.round(q) + 7).clamp_(0, 15).to(torch.int32).reshape(n, k // 8, 8)
    return pack_nibbles(q), scale


def quantize_int8(w):
    """torch twin of models.quantize.quantize_int8: per-row scale, values in [-127, 127]."""
    import torch
    w = w.float()
    scale = (w.abs().amax(dim=1) / 127.0).half()
    s = scale.float()[:, None]
    q = torch.where(s > 0, w / torch.where(s > 0, s, torch.ones_like(s)), torch.zeros_like(w))
    return torch.round(q).clamp_(-127, 127).to(torch.int8), scale


def fused(get, rms_att=None, rms_ffn=None) -> dict:
    """The four matrices of a layer as the engine multiplies by them; `get(name)` returns that
    layer's matrix `name` (llama2.c names) as a float32 torch tensor.

    Given the layer's norm weights (float32 torch vectors), the layout of the engine's fused step
    (kernels/epilogue.cuh): each norm's weight folded into the columns of the matrices it feeds,
    W diag(w), so the matmul reads the raw residual and applies only the norm's scalar scale; and
    gate and up rows interleaved (row 2i gate i, row 2i + 1 up i) so that one block finishes both
    halves of SiLU(gate) x up."""
    import torch
    qkv = torch.cat([get("wq"), get("wk"), get("wv")], dim=0)
    w1, w3 = get("w1"), get("w3")
    if rms_att is None:
        return {"qkv": qkv, "o": get("wo"), "gate_up": torch.cat([w1, w3], dim=0), "down": get("w2")}
    gate_up = torch.stack([w1, w3], dim=1).reshape(2 * w1.shape[0], w1.shape[1])
    return {"qkv": qkv * rms_att[None, :], "o": get("wo"), "gate_up": gate_up * rms_ffn[None, :],
            "down": get("w2")}


def step_matrices(weights, cfg: LlamaConfig, device, names=("qkv", "o", "gate_up", "down", "cls")):
    """(layer, {name: float32 (N, K) matrix}) of the step's matmuls `names` in the engine's layout
    (`fused`, the classifier times the final norm's weight), a layer at a time, on `device`: a 7B
    model never sits on the GPU in float32 all at once.  The classifier comes last, as layer None."""
    mats = set(names) - {"cls"}
    rms_att, rms_ffn = as_torch(weights["rms_att"], device), as_torch(weights["rms_ffn"], device)
    for layer in range(cfg.n_layers):
        if not mats:
            yield layer, {}
            continue
        get = lambda n: as_torch(weights[n][layer], device)  # noqa: E731
        yield layer, {name: w for name, w in fused(get, rms_att[layer], rms_ffn[layer]).items() if name in mats}
    if "cls" in names:
        yield None, {"cls": as_torch(classifier(weights), device) * as_torch(weights["rms_final"], device)[None, :]}


def classifier(weights) -> object:
    return weights["wcls"] if "wcls" in weights else weights["token_embedding"]


def as_torch(a, device):
    import torch
    if isinstance(a, np.ndarray):
        # torch warns when it wraps a read-only array (a checkpoint's memory map): copy such one first
        return torch.from_numpy(np.require(a, np.float32, ["C", "W"])).to(device)
    return a.to(device=device, dtype=torch.float32)


def random_weights_torch(cfg: LlamaConfig, seed: int, device) -> dict:
    """Seeded random weights like models.llama2c.random_weights (same scales, a different stream),
    generated on `device`: a 7B-shaped model in seconds instead of minutes on the host."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    w = {}
    for name, shape in cfg.shapes().items():
        t = torch.randn(shape, generator=gen, device=device, dtype=torch.float32)
        w[name] = 1.0 + 0.1 * t if name.startswith("rms") else t / np.sqrt(shape[-1])
    return w
