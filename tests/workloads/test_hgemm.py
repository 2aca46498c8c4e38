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
