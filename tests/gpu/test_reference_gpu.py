"""On a GPU: the reference kernel's products (what the worker checks every GEMM against) equal
numpy's float64 ones on ragged shapes, FP16 and BF16 values alike, to float64's rounding; and a
worker checking against them passes correct kernels (small and 1200 rows of 4096 x 4096)."""

import numpy as np
import pytest

from autosched.measure.reference_gpu import GpuProducts
from autosched.workloads import Hgemm

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def products():
    from cuda.core import Device

    from autosched.device import query
    dev = Device(0)
    dev.set_current()
    return GpuProducts(dev, dev.create_stream(), query(0).arch)


def check_against_numpy(products, a, b):
    ref, mag = products(a, np.ascontiguousarray(b.T))
    want_ref = a.astype(np.float64) @ b.astype(np.float64)
    want_mag = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    scale = want_mag + 1e-300
    assert np.all(np.abs(ref - want_ref) <= 1e-12 * scale)
    assert np.all(np.abs(mag - want_mag) <= 1e-12 * scale)


@pytest.mark.parametrize("shape", ["1x8x8_bt", "65x129x24_bt", "200x72x1000_bt_bf16", "1000x4104x4096_bt"])
def test_gpu_products_equal_numpys_on_gemm_inputs(products, shape):
    w = Hgemm.from_shape(shape)
    check_against_numpy(products, *(x.astype(np.float32) for x in w.logical(w.inputs(2))))


@pytest.mark.parametrize("M, N, K", [(64, 64, 1), (3, 5, 7), (130, 1, 17)])
def test_gpu_products_equal_numpys_on_any_extents(products, M, N, K):
    rng = np.random.default_rng(M)
    check_against_numpy(products, rng.standard_normal((M, K)).astype(np.float32),
                        rng.standard_normal((K, N)).astype(np.float32))


def test_a_worker_checks_against_the_gpu_products():
    """Through the runner (its worker computes the family's products on the GPU): a tuned template's
    default config passes; the same kernel checked against another M's rows would not be this test."""
    from autosched.build import Builder
    from autosched.measure.gpu import GpuRunner
    from autosched.measure.protocol import Protocol
    from autosched.registry import FAMILIES
    runner = GpuRunner(protocol=Protocol(warmup=1, repeat=3))
    try:
        fam = FAMILIES["hgemm"]
        with Builder() as b:
            for shape in ("200x264x520_bt", "1200x4096x4096_bt"):
                w = fam.parse(shape)
                t = fam.templates_for(w)[0]
                spec = t.render(w, t.default_config(w, runner.device_info), runner.device_info)
                m = runner.measure(spec, b.build(spec))
                assert m.ok, (shape, m.status, m.error)
    finally:
        runner.close()
