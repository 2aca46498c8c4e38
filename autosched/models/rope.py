"""RoPE frequencies of a Llama config, with Llama-3's frequency scaling, for both decoders.

    inv = inv_freq(cfg)                    # float64 numpy (the reference decoder)
    inv = inv_freq(cfg, torch)             # float32 torch, built in transformers' order (the engine)

A head of size hs rotates pair j by pos * inv[j], inv[j] = theta^(-2j/hs).  Llama-3 ("rope_type":
"llama3" in config.json's rope_scaling) stretches the context by `factor`: wavelengths 2 pi / inv
longer than original_max_position_embeddings / low_freq_factor are divided by `factor` (slowed),
those shorter than .. / high_freq_factor are kept, and between the two the frequency blends
linearly in original_max_position_embeddings / wavelength from the slowed to the kept one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RopeScaling:
    """config.json's rope_scaling of rope_type "llama3"."""
    factor: float
    low_freq_factor: float
    high_freq_factor: float
    original_max_position_embeddings: int
    rope_type: str = "llama3"

    def __post_init__(self):
        if self.rope_type != "llama3":
            raise ValueError(f"rope_scaling type {self.rope_type!r} is not supported (only llama3)")
        if not (self.factor > 0 and self.low_freq_factor > 0 and self.original_max_position_embeddings > 0
                and self.high_freq_factor > self.low_freq_factor):
            raise ValueError(f"rope_scaling needs factor > 0, 0 < low_freq_factor < high_freq_factor and "
                             f"original_max_position_embeddings > 0, got {self}")


def inv_freq(cfg, xp=None):
    """The rotation frequency of each pair of a head: float64 numpy by default; with xp=torch,
    float32 computed as transformers computes it (so an fp32 engine matches it to the last bit
    the kernels keep)."""
    hs = cfg.head_size
    if xp is None:
        inv = cfg.rope_theta ** (-np.arange(0, hs, 2, dtype=np.float64) / hs)
        where, pi = np.where, math.pi
    else:
        inv = 1.0 / (cfg.rope_theta ** (xp.arange(0, hs, 2, dtype=xp.int64).float() / hs))
        where, pi = xp.where, math.pi
    s = cfg.rope_scaling
    if s is None:
        return inv
    old = s.original_max_position_embeddings
    low_wavelen, high_wavelen = old / s.low_freq_factor, old / s.high_freq_factor
    wavelen = 2 * pi / inv
    slowed = where(wavelen > low_wavelen, inv / s.factor, inv)
    smooth = (old / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor)
    blended = (1 - smooth) * slowed / s.factor + smooth * slowed
    medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
    return where(medium, blended, slowed)
