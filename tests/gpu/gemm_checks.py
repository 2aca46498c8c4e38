"""The float64 check the GPU tests of the dispatched GEMMs (prefill on wgmma, dynamic split-K) share."""


def assert_matches_float64(y, x, w) -> None:
    """y (M, N) against x (M, K) . w (N, K)^T in float64: finite, within 1% of the largest |value|."""
    import torch
    want = x.double() @ w.double().t()
    assert torch.isfinite(y).all()
    torch.testing.assert_close(y.double(), want, rtol=0, atol=1e-2 * float(want.abs().max()))
