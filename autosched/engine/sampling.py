"""Choosing the next token from a step's logits on the host: greedy, or temperature with nucleus
(top-p) truncation, seeded so a run can be repeated."""

from __future__ import annotations

import numpy as np


def sample(logits: np.ndarray, temperature: float, top_p: float, rng: np.random.Generator) -> int:
    """temperature 0: argmax (the first of ties, as the engine's argmax on the GPU).  Otherwise
    softmax(logits / temperature), keep the most likely tokens whose mass first reaches top_p,
    and draw from them renormalized."""
    if temperature < 0 or not 0 < top_p <= 1:
        raise ValueError(f"need temperature >= 0 and 0 < top_p <= 1, got {temperature} and {top_p}")
    logits = np.asarray(logits, dtype=np.float64)
    if not np.all(np.isfinite(logits)):
        raise ValueError("the logits hold NaN or infinity: the step went wrong")
    if temperature == 0:
        return int(np.argmax(logits))
    z = (logits - logits.max()) / temperature
    p = np.exp(z)
    p /= p.sum()
    order = np.argsort(-p, kind="stable")
    keep = int(np.searchsorted(np.cumsum(p[order]), top_p) + 1)     # the smallest set reaching top_p
    chosen = order[:keep]
    q = p[chosen] / p[chosen].sum()
    return int(chosen[rng.choice(keep, p=q)])
