"""autosched.workloads.gemv_q4f16: packing, the float64 reference against an independent loop,
shape validation and its messages, seeded inputs, the output check, keys and bytes moved."""

import numpy as np
import pytest

from autosched.workloads import GemvQ4F16, WorkloadError, workload_from_key
from autosched.workloads.gemv_q4f16 import pack_q4, unpack_q4


# -- packing ----------------------------------------------------------------------------------

def test_pack_unpack_round_trip():
    rng = np.random.default_rng(0)
    q = rng.integers(0, 16, size=(5, 64), dtype=np.uint8)
    words = pack_q4(q)
    assert words.shape == (5, 8) and words.dtype == np.uint32
    back = unpack_q4(words)
    assert back.dtype == np.uint8 and np.array_equal(back, q)
    w = rng.integers(0, 2**32, size=(3, 4), dtype=np.uint32)
    assert np.array_equal(pack_q4(unpack_q4(w)), w)


def test_pack_bit_positions():
    q = np.array([[0, 1, 2, 3, 4, 5, 6, 7, 15, 0, 0, 0, 0, 0, 0, 9]], dtype=np.uint8)
    assert pack_q4(q).tolist() == [[0x76543210, 0x9000000F]]


# -- reference --------------------------------------------------------------------------------

def direct_reference(inp: dict) -> np.ndarray:
    """C[n] = sum_k (q[n, k] - 7) * scale[n, k // 32] * V[k], one element at a time."""
    a_q, sc, v = inp["A_q"], inp["A_scale"], inp["V"]
    N, K = a_q.shape[0], v.shape[0]
    out = np.zeros(N, dtype=np.float64)
    for n in range(N):
        for k in range(K):
            q = (int(a_q[n, k // 8]) >> (4 * (k % 8))) & 0xF
            out[n] += (q - 7) * float(sc[n, k // 32]) * float(v[k])
    return out


def test_reference_matches_direct_computation():
    w = GemvQ4F16(8, 64)
    inp = w.inputs(seed=3)
    ref = w.reference(inp)
    assert ref.shape == (8,) and ref.dtype == np.float64
    np.testing.assert_allclose(ref, direct_reference(inp), rtol=1e-12, atol=1e-15)


def test_reference_on_hand_made_inputs():
    w = GemvQ4F16(2, 64)
    q = np.full((2, 64), 7, dtype=np.uint8)
    q[1] = 8                                          # weight (8 - 7) * scale
    inp = {"A_q": pack_q4(q), "A_scale": np.full((2, 2), 0.5, dtype=np.float16),
           "V": np.ones(64, dtype=np.float16)}
    assert w.reference(inp).tolist() == [0.0, 32.0]


# -- shapes -------------------------------------------------------------------------------------

@pytest.mark.parametrize("N, K, message", [
    (8, 48, "K=48"),
    (8, 16, "K=16"),
    (8, 0, "K=0"),
    (8, -32, "K=-32"),
    (0, 64, "N=0"),
    (-1, 64, "N=-1"),
    (8.0, 64, "N must be an integer"),
    ("8", 64, "N must be an integer"),
    (True, 64, "N must be an integer, got True"),
    (8, False, "K must be an integer, got False"),
    (8, 64.0, "K must be an integer"),
])
def test_bad_shapes_are_refused_by_name(N, K, message):
    with pytest.raises(WorkloadError) as e:
        GemvQ4F16(N, K)
    assert message in str(e.value)


def test_k_message_says_multiple_of_32():
    with pytest.raises(WorkloadError, match="multiple of 32"):
        GemvQ4F16(8, 48)


def test_numpy_integers_are_accepted_as_python_ints():
    w = GemvQ4F16(np.int64(8), np.int32(64))
    assert (w.N, w.K) == (8, 64) and type(w.N) is int and type(w.K) is int


def test_from_shape():
    w = GemvQ4F16.from_shape("12288x4096")
    assert (w.N, w.K) == (12288, 4096)
    assert w.shape_str == "12288x4096"
    assert GemvQ4F16.from_shape("12288X4096") == w


@pytest.mark.parametrize("text", ["12288", "axb", "1x2x3", "", "x4096", "12288x", "-1x64", "1.5x64"])
def test_from_shape_refuses_bad_strings(text):
    with pytest.raises(WorkloadError, match="NxK"):
        GemvQ4F16.from_shape(text)


def test_from_shape_refuses_bad_dimensions():
    with pytest.raises(WorkloadError, match="K=48"):
        GemvQ4F16.from_shape("12288x48")


# -- inputs ---------------------------------------------------------------------------------------

def test_inputs_shapes_dtypes_and_determinism():
    w = GemvQ4F16(64, 256)
    a, b, c = w.inputs(0), w.inputs(0), w.inputs(1)
    want = {"A_q": ((64, 32), np.uint32), "A_scale": ((64, 8), np.float16), "V": ((256,), np.float16)}
    assert set(a) == set(want)
    for name, (shape, dtype) in want.items():
        assert a[name].shape == shape and a[name].dtype == dtype, name
        assert np.array_equal(a[name], b[name]), name          # same seed, same data
        assert not np.array_equal(a[name], c[name]), name      # another seed, other data
        assert np.any(a[name] != 0), name
    assert np.all(np.isfinite(a["A_scale"].astype(np.float64))) and np.all(a["A_scale"] > 0)
    w.validate_inputs(a)


def test_validate_inputs_refuses_wrong_buffers():
    w = GemvQ4F16(8, 64)
    inp = w.inputs(0)
    with pytest.raises(WorkloadError, match="A_scale"):
        w.validate_inputs(inp | {"A_scale": inp["A_scale"].astype(np.float32)})
    with pytest.raises(WorkloadError, match="missing input V"):
        w.validate_inputs({k: v for k, v in inp.items() if k != "V"})
    with pytest.raises(WorkloadError, match="A_q"):
        w.reference(inp | {"A_q": inp["A_q"][:4]})


# -- check -----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ref_512x1024():
    w = GemvQ4F16(512, 1024)
    return w, w.reference(w.inputs(0))


def test_check_passes_the_reference_in_fp16(ref_512x1024):
    w, ref = ref_512x1024
    out = ref.astype(np.float16)
    assert w.output_spec() == ((512,), np.dtype(np.float16))
    res = w.check(out, ref)
    assert res.ok, res.message
    assert res.max_abs_err <= np.abs(ref).max() * 2**-10


def test_check_fails_on_nan(ref_512x1024):
    w, ref = ref_512x1024
    out = ref.astype(np.float16)
    out[17] = np.nan
    res = w.check(out, ref)
    assert not res.ok and "not finite" in res.message


def test_check_fails_on_a_perturbed_element(ref_512x1024):
    w, ref = ref_512x1024
    out = ref.astype(np.float16)
    rms = float(np.sqrt(np.mean(ref ** 2)))
    out[3] = np.float16(ref[3] + 10 * rms)
    res = w.check(out, ref)
    assert not res.ok and res.message
    assert res.max_abs_err == pytest.approx(10 * rms, rel=1e-2)


def test_check_fails_on_wrong_shape(ref_512x1024):
    w, ref = ref_512x1024
    assert not w.check(ref[:-1].astype(np.float16), ref).ok


# -- keys and counts -------------------------------------------------------------------------------

@pytest.mark.parametrize("N, K", [(12288, 4096), (8, 32), (1024, 4128)])
def test_key_round_trip(N, K):
    w = GemvQ4F16(N, K)
    assert w.key == f"gemv_q4f16:N={N},K={K}"
    back = workload_from_key(w.key)
    assert isinstance(back, GemvQ4F16) and (back.N, back.K) == (N, K) and back == w
    assert hash(back) == hash(w)


def test_unknown_workload_key():
    with pytest.raises(WorkloadError, match="unknown workload"):
        workload_from_key("gemm:N=1,K=32")


@pytest.mark.parametrize("N, K", [(12288, 4096), (8, 64), (1024, 4128), (128256, 4096)])
def test_bytes_moved_and_flops(N, K):
    w = GemvQ4F16(N, K)
    assert w.bytes_moved() == N * K // 2 + N * K // 32 * 2 + 2 * K + 2 * N
    assert w.flops() == 2 * N * K


# -- bounds and junk shapes (issue 14) -----------------------------------------------------------

@pytest.mark.parametrize("N, K", [
    (25_000_000_000, 4096),      # exported once as a launch of 25e9 blocks
    (2**29, 32),                 # N*K/8 = 2^31 words
    (1, 2**31),                  # V alone past 2^31 values
    (2**20, 2**17),              # 2^34 words
])
def test_shapes_past_32_bit_buffers_are_refused(N, K):
    with pytest.raises(WorkloadError, match="too large"):
        GemvQ4F16(N, K)


def test_largest_shapes_are_accepted():
    assert GemvQ4F16(2**29 - 1, 32).K == 32
    assert GemvQ4F16(1, 2**31 - 32).N == 1


def test_numpy_dimensions_do_not_wrap_past_the_bound():
    with pytest.raises(WorkloadError, match="too large"):
        GemvQ4F16(np.int64(2**40), np.int64(2**40))


@pytest.mark.parametrize("text", ["--", "\u00b2x32", "\u0661\u0662x32", "9" * 5000 + "x32", "1_0x32", "+1x32",
                                  "0x10x32", " x ", "12288x4096x"])
def test_from_shape_refuses_junk_with_the_syntax(text):
    with pytest.raises(WorkloadError, match="NxK"):
        GemvQ4F16.from_shape(text)


def test_from_shape_refuses_a_non_string():
    with pytest.raises(WorkloadError, match="not a string"):
        GemvQ4F16.from_shape([])      # what argparse hands over for --shape=--


@pytest.mark.parametrize("key", ["gemv_q4f16:N=x,K=64", "gemv_q4f16:N=8", "gemv_q4f16:N=8,K=64,Z=1",
                                 "gemv_q4f16:N=8,K=\u00b2"])
def test_malformed_workload_keys_are_workload_errors(key):
    with pytest.raises(WorkloadError, match="gemv_q4f16"):
        workload_from_key(key)
