"""Weight layouts: the data transforms a kernel's config asks for.

A template names a layout in its KernelSpec (``ArgSpec.layout``); the runner applies it to the
workload's inputs before upload.  Each transform is a bijection on the data, so the kernel computes
the same function the workload's reference defines.

The transforms take numpy arrays (uint32 words) or, so that a 7B model is packed on the GPU
instead of the host, torch tensors (int32 words: the same bits; shifts and masks below never
depend on the sign).
"""

from __future__ import annotations

import numpy as np

# torch is imported inside functions: optional / slow to import, a CPU install runs without it

# nibble position p of a packed word takes natural element NIBBLE_ORDER_K[p]: pairs (2p, 2p+1)
# then come out of one LOP3 as a half2 that lines up with V's natural half2 pairs
NIBBLE_ORDER_K = (0, 2, 4, 6, 1, 3, 5, 7)


def _is_torch(a) -> bool:
    return type(a).__module__.startswith("torch")


def pack_nibbles(nibbles):
    """(..., 8) values of 4 bits -> (...) words, value j at bits 4j..4j+3."""
    if _is_torch(nibbles):
        out = nibbles[..., 0].clone()
        for j in range(1, 8):
            out |= nibbles[..., j] << (4 * j)       # bit 31 wraps into the sign: same bits as uint32
        return out
    shifts = np.arange(8, dtype=np.uint32) * 4
    return np.bitwise_or.reduce(nibbles.astype(np.uint32) << shifts, axis=-1).astype(np.uint32)


def _word_mask(bits: int, like):
    """`bits` (a 32-bit pattern) as a mask for `like`'s words: uint32 for numpy, the int32 of the same
    bits for torch."""
    if _is_torch(like):
        return bits - (1 << 32) if bits >= 1 << 31 else bits
    return np.uint32(bits)


def _move_nibbles(words, order):
    """Nibble p of each output word <- nibble order[p] of the input word, by whole-word shifts and
    masks, one per distance moved (no (..., 8) array of nibbles: an 8 MB weight packs in tens of
    milliseconds, which a tuning worker pays once per layout)."""
    out = None
    by_shift: dict[int, int] = {}
    for p, src in enumerate(order):
        by_shift[4 * (p - src)] = by_shift.get(4 * (p - src), 0) | (0xF << (4 * p))
    for shift, mask in by_shift.items():
        # a right shift of torch's int32 fills with the sign; the mask never keeps those top bits
        # (a nibble moved down lands at most at 7 - distance)
        moved = words << shift if shift > 0 else words >> -shift if shift < 0 else words
        part = moved & _word_mask(mask, words)
        out = part if out is None else out | part
    return out


def interleave_k(a_q: np.ndarray) -> np.ndarray:
    """Reorder the nibbles of every word to NIBBLE_ORDER_K."""
    return _move_nibbles(a_q, NIBBLE_ORDER_K)


def interleave_rows(a_q: np.ndarray) -> np.ndarray:
    """Rows (2m, 2m+1) -> words holding both: row 2m's word gets e0..e3 of row a then of row b,
    row 2m+1's word gets e4..e7 of a then of b.  One LOP3 then yields (a_e, b_e) as a half2."""
    n = a_q.shape[0]
    if n % 2:
        raise ValueError(f"row interleave needs an even number of rows, got {n}")
    a, b = a_q[0::2], a_q[1::2]
    low, high = _word_mask(0xFFFF, a_q), _word_mask(0xFFFF0000, a_q)
    first = (a & low) | (b << 16)                   # bits of b past 16 fall off the word
    second = ((a >> 16) & low) | (b & high)
    if _is_torch(a_q):
        import torch
        return torch.stack([first, second], dim=1).reshape(a_q.shape)
    return np.stack([first, second], axis=1).reshape(a_q.shape)


def tile(a: np.ndarray, n: int, k: int) -> np.ndarray:
    """(R, C) -> flat (R/n, C/k, n, k): an n x k tile of the matrix is contiguous."""
    r, c = a.shape
    if r % n or c % k:
        raise ValueError(f"tile ({n}, {k}) does not divide a ({r}, {c}) matrix")
    if _is_torch(a):
        return a.reshape(r // n, n, c // k, k).permute(0, 2, 1, 3).contiguous().reshape(-1)
    return np.ascontiguousarray(a.reshape(r // n, n, c // k, k).transpose(0, 2, 1, 3)).reshape(-1)


def apply(name: str, params: dict, a: np.ndarray) -> np.ndarray:
    """Apply layout ``name`` (as named in an ArgSpec) to array ``a``."""
    if name == "identity":
        return a.contiguous() if _is_torch(a) else np.ascontiguousarray(a)
    if name == "q4_words":
        if params["nibbles"] == "k":
            a = interleave_k(a)
        elif params["nibbles"] == "rows":
            a = interleave_rows(a)
        elif params["nibbles"] != "natural":
            raise ValueError(f"unknown nibble order {params['nibbles']!r}")
        return tile(a, params["n"], params["k"])
    if name == "q4_scales":
        return tile(a, params["n"], 1)
    raise ValueError(f"unknown layout {name!r}")
