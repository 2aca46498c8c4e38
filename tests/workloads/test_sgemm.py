"""Sgemm workload: shapes refused with reasons, reference, and a check that catches a wrong tile."""

import numpy as np
import pytest

from autosched.workloads import Sgemm, WorkloadError, workload_from_key


@pytest.mark.parametrize("bad, word", [((0, 4, 4), "M"), ((4, -1, 4), "N"), ((4, 4, 0), "K"),
                                       ((4.0, 4, 4), "M"), ((True, 4, 4), "M")])
def test_bad_shapes_are_refused_with_the_dimension_named(bad, word):
    with pytest.raises(WorkloadError, match=word):
        Sgemm(*bad)


def test_from_shape_and_key_round_trip():
    w = Sgemm.from_shape("64x11008x4096")
    assert (w.M, w.N, w.K, w.trans_a) == (64, 11008, 4096, 0)
    assert workload_from_key(w.key) == w
    assert workload_from_key(Sgemm(3, 5, 7, trans_a=1).key).trans_a == 1
    for text in ("64x11008", "axbxc", "1x2x3x4"):
        with pytest.raises(WorkloadError, match="MxNxK"):
            Sgemm.from_shape(text)


@pytest.mark.parametrize("trans_a", [0, 1])
def test_reference_is_a_times_b(trans_a):
    w = Sgemm(5, 7, 9, trans_a=trans_a)
    x = w.inputs(seed=3)
    a = x["A"].T if trans_a else x["A"]
    assert x["A"].shape == ((9, 5) if trans_a else (5, 9)) and x["B"].shape == (9, 7)
    assert x["A"].dtype == np.float32 and np.any(x["A"] != 0)
    want = np.array([[sum(float(a[i, k]) * float(x["B"][k, j]) for k in range(9)) for j in range(7)]
                     for i in range(5)])
    np.testing.assert_allclose(w.reference(x), want, rtol=1e-12, atol=1e-12)


def test_check_passes_fp32_rounding_and_catches_a_missing_k_slice():
    w = Sgemm(64, 48, 512)
    x = w.inputs(seed=1)
    ref = w.reference(x)
    bound = w.error_bound(x)
    fp32 = (x["A"] @ x["B"]).astype(np.float32)          # an honest fp32 product
    assert w.check(fp32, ref, bound).ok
    short = (x["A"][:, :504] @ x["B"][:504]).astype(np.float32)   # one BK=8 slice left out
    res = w.check(short, ref, bound)
    assert not res.ok and "fp32 bound" in res.message
    nan = fp32.copy()
    nan[3, 4] = np.nan
    assert not w.check(nan, ref, bound).ok
