"""The fp16 GEMM workload: shapes it takes and refuses, inputs in both B layouts, the float64
reference, and a bound that passes fp16 rounding and fails a wrong tile."""

import numpy as np
import pytest

from autosched.workloads import Hgemm, WorkloadError, workload_from_key


def test_shapes_keys_and_refusals():
    w = Hgemm.from_shape("100x72x40_bt")
    assert (w.M, w.N, w.K, w.b_col) == (100, 72, 40, 1) and w.shape_str == "100x72x40_bt"
    assert workload_from_key(w.key) == w and Hgemm.from_shape("1x4096x4096").b_col == 0
    with pytest.raises(WorkloadError, match="K must be a multiple of 8"):
        Hgemm(16, 16, 20)
    with pytest.raises(WorkloadError, match="N must be a multiple of 8"):
        Hgemm(16, 20, 16)
    assert Hgemm(16, 20, 16, b_col=1).N == 20          # B stored (N, K): any N
    with pytest.raises(WorkloadError, match="shape must be MxNxK"):
        Hgemm.from_shape("16x16")


@pytest.mark.parametrize("b_col", [0, 1])
def test_reference_and_bound(b_col):
    w = Hgemm(33, 24, 64, b_col=b_col)
    x = w.inputs(3)
    assert x["A"].dtype == np.float16 and x["A"].shape == (33, 64)
    assert x["B"].shape == ((24, 64) if b_col else (64, 24))
    ref = w.reference(x)
    b = x["B"].astype(np.float64)
    np.testing.assert_allclose(ref, x["A"].astype(np.float64) @ (b.T if b_col else b))
    bound = w.error_bound(x)
    # an fp16 output of an exact fp32 sum passes ...
    assert w.check(ref.astype(np.float32).astype(np.float16), ref, bound).ok
    # ... one tile of 16 x 8 missing does not
    bad = ref.astype(np.float16)
    bad[:16, :8] = 0
    assert not w.check(bad, ref, bound).ok


@pytest.mark.parametrize("text", ["--", "\u00b2x8x8", "9" * 5000 + "x8x8", "1x8x8_bt_bt", "_bt", None])
def test_from_shape_refuses_junk_with_the_syntax(text):
    with pytest.raises(WorkloadError, match="MxNxK"):
        Hgemm.from_shape(text)


def test_m_past_the_launch_grid_is_refused():
    from autosched.workloads.sgemm import MAX_M
    with pytest.raises(WorkloadError, match="grid.y"):
        Hgemm(MAX_M + 1, 8, 8)


# -- layouts and dtypes (issue 15) --------------------------------------------------------------

from autosched.bf16 import bf16_bits_to_float32, float32_to_bf16_bits  # noqa: E402
from autosched.workloads.hgemm import DTYPES, LAYOUTS, from_blocked, to_blocked  # noqa: E402

CASES = [(lay, dt) for lay in LAYOUTS for dt in DTYPES]


def _values(stored, dt):
    return (bf16_bits_to_float32(stored) if dt == "bf16" else stored.astype(np.float32)).astype(np.float64)


def _logical(stored, trans, blocked):
    """The logical matrix from its storage, by the index formula (not the workload's own reshape)."""
    if blocked:
        rt, ct = stored.shape[:2]
        out = np.empty((rt * 16, ct * 16), stored.dtype)
        for i in range(rt * 16):
            for j in range(ct * 16):
                out[i, j] = stored[i // 16, j // 16, i % 16, j % 16]
        return out
    return stored.T if trans else stored


def _rounded(ref64, w):
    """The reference as a correct kernel writes it: rounded once to the output dtype."""
    r32 = ref64.astype(np.float32)
    return float32_to_bf16_bits(r32) if w.bf16 else r32.astype(np.float16)


@pytest.mark.parametrize("layout, dtype", CASES)
def test_every_layout_and_dtype(layout, dtype):
    M, N, K = 48, 32, 64
    w = Hgemm.from_shape(f"{M}x{N}x{K}", layout=layout, dtype=dtype)
    assert (w.layout, w.dtype) == (layout, dtype)
    x = w.inputs(5)
    store = np.uint16 if dtype == "bf16" else np.float16
    assert x["A"].dtype == store and x["B"].dtype == store
    want_a = {"n": (M, K), "t": (K, M), "b": (M // 16, K // 16, 16, 16)}[layout[0]]
    want_b = {"n": (K, N), "t": (N, K), "b": (K // 16, N // 16, 16, 16)}[layout[1]]
    assert x["A"].shape == want_a and x["B"].shape == want_b
    assert x["A"].flags.c_contiguous and x["B"].flags.c_contiguous
    a = _values(_logical(x["A"], layout[0] == "t", layout == "bb"), dtype)
    b = _values(_logical(x["B"], layout[1] == "t", layout == "bb"), dtype)
    # the same seed draws the same logical values in every layout (rounded to the dtype)
    base = Hgemm(M, N, K, bf16=w.bf16).inputs(5)
    assert np.array_equal(a, _values(base["A"], dtype)) and np.array_equal(b, _values(base["B"], dtype))
    d = a @ b
    ref = w.reference(x)
    shape, out_dtype = w.output_spec()
    assert out_dtype == store and ref.shape == shape
    np.testing.assert_array_equal(from_blocked(ref) if layout == "bb" else ref, d)
    bound = w.error_bound(x)
    assert bound.shape == ref.shape
    assert w.check(_rounded(ref, w), ref, bound).ok
    bad = _rounded(ref, w).copy()
    flat = bad.reshape(-1)
    i = int(np.argmax(np.abs(ref).reshape(-1)))
    # one output off by 3% of its value: far past the output's rounding in either dtype
    flat[i] = _rounded(ref.reshape(-1)[i:i + 1] * 1.03, w)[0]
    res = w.check(bad, ref, bound)
    assert not res.ok and "1 of" in res.message
    # a missing 16x16 tile is refused too
    tile = _rounded(ref, w).copy()
    (tile[0, 0] if layout == "bb" else tile[:16, :16])[...] = 0
    assert not w.check(tile, ref, bound).ok
    assert w.bytes_moved() == 2 * (M * K + K * N + M * N) and w.flops() == 2 * M * N * K


def test_bf16_bound_is_the_bf16_rounding_and_fp32_accumulation():
    w, h = Hgemm(32, 16, 256, bf16=1), Hgemm(32, 16, 256)
    x = w.inputs(1)
    ref, bound = w.reference(x), w.error_bound(x)
    a, b = (bf16_bits_to_float32(x[k]).astype(np.float64) for k in "AB")
    mag = np.abs(a) @ np.abs(b)
    np.testing.assert_allclose(bound, 2.0**-7 * np.abs(ref) + 8 * 16 * np.finfo(np.float32).eps * mag + 1e-30)
    # the same values as fp16 inputs: the bound's rounding term is FP16's, 8x narrower
    hx = {k: bf16_bits_to_float32(v).astype(np.float16) for k, v in x.items()}
    assert np.array_equal(h.reference(hx), ref)
    np.testing.assert_allclose(bound - h.error_bound(hx), (2.0**-7 - 2.0**-10) * np.abs(ref), rtol=1e-9, atol=1e-25)
    # the bit patterns are values: an output of the right values read as float16 bits is refused
    assert not w.check(_rounded(ref, w).view(np.float16), ref, bound).ok
    res = w.check(_rounded(ref, w).astype(np.float32), ref, bound)
    assert not res.ok and "uint16" in res.message


def test_blocked_packing_round_trips():
    x = np.arange(32 * 48).reshape(32, 48)
    b = to_blocked(x)
    assert b.shape == (2, 3, 16, 16) and b.flags.c_contiguous
    assert b[1, 2, 3, 4] == x[16 + 3, 32 + 4]
    # each 16x16 tile is 256 contiguous values, the tiles in row-of-tiles order
    assert np.array_equal(b.reshape(-1)[256 * 4:256 * 5].reshape(16, 16), x[16:32, 16:32])
    assert np.array_equal(from_blocked(b), x)
    assert np.array_equal(to_blocked(from_blocked(b)), b)


@pytest.mark.parametrize("layout, dtype", CASES)
def test_keys_and_shapes_round_trip(layout, dtype):
    w = Hgemm.from_shape("128x64x32", layout=layout, dtype=dtype)
    assert workload_from_key(w.key) == w and Hgemm.from_shape(w.shape_str) == w
    assert Hgemm.from_shape(w.shape_str.upper()) == w
    assert repr(w).startswith("Hgemm(M=128")


def test_existing_keys_and_shapes_are_unchanged():
    assert Hgemm.from_shape("4096x4096x4096").key == "hgemm:M=4096,N=4096,K=4096,b_col=0"
    assert Hgemm.from_shape("64x14336x4096_bt").key == "hgemm:M=64,N=14336,K=4096,b_col=1"
    assert Hgemm.from_shape("64x14336x4096_bt").params == {"M": 64, "N": 14336, "K": 4096, "b_col": 1}
    assert Hgemm.from_shape("8x8x8", layout="nt").shape_str == "8x8x8_bt"
    assert workload_from_key("hgemm:M=8,N=8,K=8,b_col=1") == Hgemm.from_shape("8x8x8_nt")
    assert Hgemm.from_shape("8x16x32_tn_bf16").key == "hgemm:M=8,N=16,K=32,b_col=0,a_col=1,bf16=1"
    assert Hgemm.from_shape("16x16x16_bb").key == "hgemm:M=16,N=16,K=16,b_col=0,blocked=1"
    assert workload_from_key("hgemm:M=8,N=8,K=8,b_col=0,a_col=0,bf16=0") == Hgemm(8, 8, 8)


@pytest.mark.parametrize("text, layout, dtype", [
    ("8x8x8", "nn", "fp16"), ("8x8x8_nn", "nn", "fp16"), ("8x8x8_bt", "nt", "fp16"), ("8x8x8_nt", "nt", "fp16"),
    ("8x8x8_tt", "tt", "fp16"), ("16x16x16_bb_bf16", "bb", "bf16"), ("8x8x8_bf16_tn", "tn", "bf16"),
    ("8x8x8_fp16", "nn", "fp16"), (" 8 x 8 x 8_TN_BF16 ", "tn", "bf16"),
])
def test_shape_suffixes(text, layout, dtype):
    w = Hgemm.from_shape(text)
    assert (w.layout, w.dtype) == (layout, dtype)


@pytest.mark.parametrize("text", ["8x8x8_bt_nt", "8x8x8_tn_tt", "8x8x8_bf16_fp16", "8x8x8_xx", "8x8x8_", "8x8x8__bt",
                                  "8x8x8_bt16", "8x8x8_bf16_bf16"])
def test_suffix_junk_is_refused_with_the_syntax(text):
    with pytest.raises(WorkloadError, match="MxNxK"):
        Hgemm.from_shape(text)


def test_options_agree_with_suffixes():
    assert Hgemm.from_shape("8x8x8_bt", layout="nt") == Hgemm.from_shape("8x8x8", layout="NT")
    assert Hgemm.from_shape("8x8x8_bf16", dtype="bf16").bf16 == 1
    with pytest.raises(WorkloadError, match="says layout nt but the layout option says tn"):
        Hgemm.from_shape("8x8x8_bt", layout="tn")
    with pytest.raises(WorkloadError, match="says dtype bf16 but the dtype option says fp16"):
        Hgemm.from_shape("8x8x8_bf16", dtype="fp16")
    with pytest.raises(WorkloadError, match="layout must be one of nn, nt, tn, tt, bb"):
        Hgemm.from_shape("8x8x8", layout="col")
    with pytest.raises(WorkloadError, match="dtype must be one of fp16, bf16"):
        Hgemm.from_shape("8x8x8", dtype=16)


def test_dims_each_layout_needs():
    # a stored row is a multiple of 8; the dimension along none is free
    assert Hgemm.from_shape("7x16x8").M == 7                      # nn: any M (as before)
    assert Hgemm.from_shape("8x16x7_tn").K == 7                   # tn: A (K, M), B (K, N): any K
    assert Hgemm.from_shape("8x7x8_tt").N == 7                    # tt: B (N, K): any N
    with pytest.raises(WorkloadError, match="M=7: an A stored"):
        Hgemm.from_shape("7x16x8_tn")
    with pytest.raises(WorkloadError, match="K=7: the bf16 GEMM reads rows"):
        Hgemm.from_shape("8x8x7_tt_bf16")
    with pytest.raises(WorkloadError, match="N=7: a row-major B"):
        Hgemm.from_shape("8x7x8_tn")
    with pytest.raises(WorkloadError, match="multiples of 16"):
        Hgemm.from_shape("16x16x24_bb")
    with pytest.raises(WorkloadError, match="a_col and b_col must be 0"):
        Hgemm(16, 16, 16, b_col=1, blocked=1)
    for flag in ("a_col", "blocked", "bf16"):
        with pytest.raises(WorkloadError, match=f"{flag} must be"):
            Hgemm(16, 16, 16, **{flag: 2})
    with pytest.raises(WorkloadError, match="a_col must be an integer"):
        Hgemm(16, 16, 16, a_col="1")
    with pytest.raises(WorkloadError, match="does not name hgemm's parameters"):
        workload_from_key("hgemm:M=8,N=8,K=8,b_col=0,fp8=1")
