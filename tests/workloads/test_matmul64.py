"""matmul64: the float64 product of the GEMM references, the same on either path."""

import numpy as np
import pytest

from autosched.workloads import matmul64 as m64


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_product_is_float64_of_the_inputs(dtype):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((37, 53)).astype(dtype)
    b = rng.standard_normal((53, 29)).astype(dtype)
    got = m64.matmul64(a, b)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-13, atol=1e-13)


def test_large_products_take_the_gpu_path_when_there_is_one(monkeypatch):
    calls = []

    class FakeTorch:           # stands for torch on a CUDA machine: records that it was used
        @staticmethod
        def from_numpy(x):
            calls.append(x.shape)
            return _T(x)

    class _T:
        def __init__(self, x):
            self.x = x

        def cuda(self):
            return self

        def cpu(self):
            return self

        def numpy(self):
            return self.x

        def __matmul__(self, o):
            return _T(self.x @ o.x)

    monkeypatch.setattr(m64, "_torch", FakeTorch)
    monkeypatch.setattr(m64, "GPU_MIN_MACS", 1000)
    a, b = np.ones((10, 10)), np.ones((10, 20))
    assert (m64.matmul64(a, b) == 10.0).all() and calls == [(10, 10), (10, 20)]
    calls.clear()
    m64.matmul64(np.ones((2, 2)), np.ones((2, 2)))          # 8 MACs: numpy's
    assert calls == []
