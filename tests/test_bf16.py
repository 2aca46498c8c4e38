"""BF16 as uint16 bit patterns: every BF16 survives float32 and back, narrowing rounds to nearest with
ties to even (checked against the two neighbours in float64, not against the same bit trick), and
NaN, infinities, overflow, zeros and subnormals come out as the GPU's cvt.rn.bf16.f32 gives them."""

import numpy as np
import pytest

from autosched.bf16 import bf16_bits_to_float32, float32_to_bf16_bits, round_to_bf16


def f32(bits: int) -> np.float32:
    return np.array([bits], dtype=np.uint32).view(np.float32)[0]


def test_every_bf16_pattern_round_trips():
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    x = bf16_bits_to_float32(bits)
    assert x.dtype == np.float32
    back = float32_to_bf16_bits(x)
    nan = np.isnan(x)
    assert np.array_equal(back[~nan], bits[~nan])
    assert np.all(np.isnan(bf16_bits_to_float32(back[nan])))
    # the value is the top half of the float32
    assert np.array_equal(x.view(np.uint32) >> 16, bits.astype(np.uint32))


def _nearest_even(x: np.float32) -> int:
    """The BF16 nearest to x by float64 distance, the even one of a tie: an independent reference."""
    u = int(np.array([x]).view(np.uint32)[0])
    lo = u >> 16
    hi = lo + 1
    v = float(x)
    dlo = abs(v - float(f32(lo << 16)))
    # past the largest BF16 the next step up is 2^128, as if the exponent went on: that rounds to inf
    dhi = abs(v - (float(f32(hi << 16)) if hi < 0x7F80 else 2.0**128))
    if dlo < dhi or (dlo == dhi and lo % 2 == 0):
        return lo
    return hi


def test_random_float32_round_to_nearest_even():
    rng = np.random.default_rng(0)
    # every exponent, and patterns whose low half sits at, just under and just over the tie
    u = rng.integers(0, 0x7F800000, 4000, dtype=np.uint32)
    low = np.array([0x8000, 0x7FFF, 0x8001, 0x0000, 0xFFFF], dtype=np.uint32)
    u = np.concatenate([u, np.array([0x7F7F0000], np.uint32), np.array([0x00010000], np.uint32)])
    u = np.concatenate([u, (u[-402:, None] & 0xFFFF0000 | low).ravel()])
    u = np.concatenate([u, u | 0x80000000])
    x = u.view(np.float32)
    want = np.array([_nearest_even(v) if v >= 0 else _nearest_even(-v) | 0x8000 for v in x], dtype=np.uint16)
    assert 0x7F80 in want and 0x7F7F in want            # the overflow edge was reached both ways
    assert np.array_equal(float32_to_bf16_bits(x), want)


@pytest.mark.parametrize("value, bits", [
    (1.0, 0x3F80),
    (1.0 + 2.0**-8, 0x3F80),                # tie between 1 and 1 + 2^-7: down to the even 1
    (1.0 + 3 * 2.0**-8, 0x3F82),            # tie between 1 + 2^-7 (odd) and 1 + 2^-6: up to the even
    (1.0 + 2.0**-8 + 2.0**-20, 0x3F81),     # just over the tie: up
    (-(1.0 + 2.0**-8), 0xBF80),
    (0.0, 0x0000),
    (-0.0, 0x8000),
    (float("inf"), 0x7F80),
    (float("-inf"), 0xFF80),
    (3.3895313892515355e38, 0x7F7F),        # the largest BF16
    (float(np.finfo(np.float32).max), 0x7F80),      # past the largest BF16's half ulp: inf
    (-float(np.finfo(np.float32).max), 0xFF80),
    (float(f32(0x00010000)), 0x0001),       # the smallest subnormal BF16
    (float(f32(0x00008000)), 0x0000),       # half of it: a tie, down to the even zero
    (float(f32(0x00018000)), 0x0002),       # 1.5 of it: a tie, up to the even 2
])
def test_exact_cases(value, bits):
    assert int(float32_to_bf16_bits(np.float32(value))) == bits


@pytest.mark.parametrize("pattern", [0x7FC00000, 0x7F800001, 0x7FFFFFFF, 0xFF800001, 0xFFC00000, 0x7F80FFFF])
def test_nan_stays_nan_and_keeps_its_sign(pattern):
    out = int(float32_to_bf16_bits(f32(pattern)))
    assert np.isnan(bf16_bits_to_float32(np.uint16(out)))
    assert out & 0x8000 == pattern >> 16 & 0x8000


def test_shapes_and_refusal():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    b = float32_to_bf16_bits(x)
    assert b.shape == (3, 4) and b.dtype == np.uint16
    assert np.array_equal(round_to_bf16(x), bf16_bits_to_float32(b))
    assert np.all(np.abs(round_to_bf16(x) - x) <= np.abs(x) * 2.0**-8)
    assert np.array_equal(float32_to_bf16_bits(x.T), b.T)          # strided input
    with pytest.raises(TypeError, match="uint16"):
        bf16_bits_to_float32(np.zeros(3, np.float16))
