"""BF16 on the host as uint16 bit patterns: numpy has no bfloat16 dtype, and a kernel reads and writes
the same 16 bits a uint16 array holds, so inputs are made and outputs read back this way.

BF16 is the top half of an IEEE float32 (sign, 8 exponent bits, 7 mantissa bits): widening is a
shift; narrowing rounds to nearest, ties to even, as the GPU's cvt.rn.bf16.f32 does, so a
reference rounded here is what a correct kernel writes.
"""

from __future__ import annotations

import numpy as np

EPS_BF16 = 2.0 ** -7            # spacing of BF16 values in [1, 2): 7 stored mantissa bits
QUIET_NAN = 0x7FC0


def float32_to_bf16_bits(x) -> np.ndarray:
    """float32 values (anything numpy reads as them) -> uint16 BF16 bit patterns, rounded to
    nearest even; overflow past the largest BF16 rounds to inf; NaN stays NaN (quiet, sign kept)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32)
    # adding 0x7FFF plus the bit that will become the lowest kept one carries into the upper half
    # exactly when the dropped half is over a tie, or a tie with an odd upper half: round-half-even.
    # uint64 so that no pattern wraps (the NaNs above 0xFF80_0000 would)
    wide = u.astype(np.uint64)
    rounded = ((wide + 0x7FFF + ((wide >> 16) & 1)) >> 16).astype(np.uint16)
    # a NaN with only low mantissa bits set would otherwise truncate to an infinity
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    sign = ((u >> 16) & 0x8000).astype(np.uint16)
    return np.where(nan, sign | np.uint16(QUIET_NAN), rounded).astype(np.uint16)


def bf16_bits_to_float32(bits) -> np.ndarray:
    """uint16 BF16 bit patterns -> float32, exactly (every BF16 value is a float32)."""
    b = np.asarray(bits)
    if b.dtype != np.uint16:
        raise TypeError(f"BF16 values are uint16 bit patterns, got dtype {b.dtype}")
    return (b.astype(np.uint32) << 16).view(np.float32)


def round_to_bf16(x) -> np.ndarray:
    """float32 values rounded to the nearest BF16, as float32."""
    return bf16_bits_to_float32(float32_to_bf16_bits(x))
