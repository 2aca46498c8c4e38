"""A plain numpy Llama decoder (float64 by default): the numerical reference the GPU engine is
checked against.  Semantics are llama2.c's run.c: RMSNorm, RoPE on adjacent pairs (2i, 2i+1) of
each head, grouped-query attention over a KV cache, SwiGLU FFN, residuals, final norm, classifier.
"""

from __future__ import annotations

import numpy as np

from autosched.models.llama2c import LlamaConfig
from autosched.models.rope import inv_freq


def rmsnorm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x: np.ndarray, pos: int, head_size: int, theta: float, freq: np.ndarray | None = None) -> np.ndarray:
    """Rotate each head's pairs (2i, 2i+1) by pos * freq[i], freq by default theta^(-2i/head_size)
    (a scaled model's: models/rope.inv_freq).  x: (heads*hs,)"""
    x = x.reshape(-1, head_size // 2, 2)
    if freq is None:
        freq = theta ** (-np.arange(0, head_size, 2, dtype=np.float64) / head_size)
    c, s = np.cos(pos * freq), np.sin(pos * freq)
    out = np.empty_like(x)
    out[..., 0] = x[..., 0] * c - x[..., 1] * s
    out[..., 1] = x[..., 0] * s + x[..., 1] * c
    return out.reshape(-1)


class ReferenceDecoder:
    """One token at a time, with a KV cache: (layers, seq_len, kv_dim) keys and values."""

    def __init__(self, cfg: LlamaConfig, weights: dict[str, np.ndarray], dtype=np.float64):
        self.cfg = cfg
        self.w = {k: np.asarray(v, dtype=dtype) for k, v in weights.items()}
        self.dtype = dtype
        self.freq = inv_freq(cfg)
        self.reset()

    def reset(self) -> None:
        c = self.cfg
        self.k_cache = np.zeros((c.n_layers, c.seq_len, c.kv_dim), dtype=self.dtype)
        self.v_cache = np.zeros_like(self.k_cache)
        self.pos = 0

    def step(self, token: int) -> np.ndarray:
        """Logits (vocab,) after feeding `token` at the next position."""
        c, w, pos = self.cfg, self.w, self.pos
        if pos >= c.seq_len:
            raise ValueError(f"context full: seq_len is {c.seq_len}")
        if not 0 <= token < c.vocab_size:
            raise ValueError(f"token {token} outside the vocabulary of {c.vocab_size}")
        hs, kv_mul = c.head_size, c.n_heads // c.n_kv_heads
        x = w["token_embedding"][token].copy()
        for layer in range(c.n_layers):
            xb = rmsnorm(x, w["rms_att"][layer], c.norm_eps)
            q = rope(w["wq"][layer] @ xb, pos, hs, c.rope_theta, self.freq)
            self.k_cache[layer, pos] = rope(w["wk"][layer] @ xb, pos, hs, c.rope_theta, self.freq)
            self.v_cache[layer, pos] = w["wv"][layer] @ xb
            att_out = np.empty(c.n_heads * hs, dtype=self.dtype)
            for h in range(c.n_heads):
                kvh = h // kv_mul
                keys = self.k_cache[layer, :pos + 1, kvh * hs:(kvh + 1) * hs]       # (pos+1, hs)
                vals = self.v_cache[layer, :pos + 1, kvh * hs:(kvh + 1) * hs]
                scores = keys @ q[h * hs:(h + 1) * hs] / np.sqrt(hs)
                p = np.exp(scores - scores.max())
                att_out[h * hs:(h + 1) * hs] = (p / p.sum()) @ vals
            x = x + w["wo"][layer] @ att_out
            xb = rmsnorm(x, w["rms_ffn"][layer], c.norm_eps)
            g, u = w["w1"][layer] @ xb, w["w3"][layer] @ xb
            x = x + w["w2"][layer] @ (g / (1.0 + np.exp(-g)) * u)
        x = rmsnorm(x, w["rms_final"], c.norm_eps)
        self.pos += 1
        return w.get("wcls", w["token_embedding"]) @ x

    def generate(self, prompt: list[int], steps: int) -> list[int]:
        """Greedy: the prompt, then `steps` argmax tokens."""
        self.reset()
        out = list(prompt)
        logits = None
        for t in prompt:
            logits = self.step(t)
        for _ in range(steps):
            nxt = int(np.argmax(logits))
            out.append(nxt)
            if len(out) >= self.cfg.seq_len:
                break
            logits = self.step(nxt)
        return out
