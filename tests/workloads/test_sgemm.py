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


def test_threaded_check_agrees_with_one_pass(monkeypatch):
    """The row-block check gives the verdict and figures of a single pass over the whole output."""
    w = Sgemm(97, 33, 40)
    x = w.inputs(seed=3)
    ref, bound = w.reference(x), w.error_bound(x)
    good = (x["A"] @ x["B"]).astype(np.float32)
    bad = good.copy()
    bad[5, 7] += 1.0
    bad[90, 32] -= 2.0
    holes = good.copy()
    holes[0, 0] = np.nan
    holes[96, 1] = np.inf
    whole = {}
    for name, out in (("good", good), ("bad", bad), ("holes", holes)):
        monkeypatch.setattr(Sgemm, "CHECK_CHUNK", 1 << 30)        # one block
        whole[name] = w.check(out, ref, bound)
        monkeypatch.setattr(Sgemm, "CHECK_CHUNK", 40)             # a row or two per block, threaded
        split = w.check(out, ref, bound)
        assert split.ok == whole[name].ok and split.message == whole[name].message
        assert split.max_abs_err == pytest.approx(whole[name].max_abs_err, rel=1e-12)
        assert split.rel_l2_err == pytest.approx(whole[name].rel_l2_err, rel=1e-9)
    assert whole["good"].ok
    assert not whole["bad"].ok and whole["bad"].message.startswith("2 of 3201 outputs off")
    assert whole["bad"].max_abs_err == pytest.approx(2.0, rel=1e-3)
    assert not whole["holes"].ok and whole["holes"].message.startswith("2 of 3201 outputs not finite")
    d = bad.astype(np.float64) - ref
    assert whole["bad"].rel_l2_err == pytest.approx(np.linalg.norm(d) / np.linalg.norm(ref), rel=1e-9)


# -- bounds and junk shapes (issue 14) -----------------------------------------------------------

def test_m_past_the_launch_grid_is_refused():
    from autosched.workloads.sgemm import MAX_M
    assert Sgemm(MAX_M, 1, 1).M == MAX_M
    with pytest.raises(WorkloadError, match="grid.y"):
        Sgemm(MAX_M + 1, 1, 1)


def test_numpy_dimensions_do_not_wrap_past_the_bound():
    big = np.int64(2**32)        # big * big wraps to 0 in int64
    with pytest.raises(WorkloadError, match="2\\^31"):
        Sgemm(big, big, big)


@pytest.mark.parametrize("text", ["--", "\u00b2x2x3", "9" * 5000 + "x2x3", "1x2x3_ta_ta", "_ta", "1x2x3 x"])
def test_from_shape_refuses_junk_with_the_syntax(text):
    with pytest.raises(WorkloadError, match="MxNxK"):
        Sgemm.from_shape(text)
