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


def defaults_pass_through_a_worker(shapes):
    """Each hgemm shape's first template at its default config, measured in turn by one GPU worker:
    every measurement ok (checked against the worker's references)."""
    from autosched.build import Builder
    from autosched.measure.gpu import GpuRunner
    from autosched.measure.protocol import Protocol
    from autosched.registry import FAMILIES
    runner = GpuRunner(protocol=Protocol(warmup=1, repeat=3))
    try:
        fam = FAMILIES["hgemm"]
        with Builder() as b:
            for shape in shapes:
                w = fam.parse(shape)
                t = fam.templates_for(w)[0]
                spec = t.render(w, t.default_config(w, runner.device_info), runner.device_info)
                m = runner.measure(spec, b.build(spec))
                assert m.ok, (shape, m.status, m.error)
    finally:
        runner.close()


def test_a_worker_checks_against_the_gpu_products():
    """Through the runner (its worker computes the family's products on the GPU): a tuned template's
    default config passes; the same kernel checked against another M's rows would not be this test."""
    defaults_pass_through_a_worker(("200x264x520_bt", "1200x4096x4096_bt"))


@pytest.fixture(scope="module")
def checker():
    from cuda.core import Device

    from autosched.device import query
    from autosched.measure.reference_gpu import GpuChecker
    dev = Device(0)
    dev.set_current()
    info = query(0)
    return dev, GpuChecker(dev, dev.create_stream(), info.sm_count, info.arch)


def gpu_check(checker, out, ref, bound):
    from cuda.bindings import driver

    from autosched.runtime import check
    dev, c = checker
    buf = dev.allocate(out.nbytes, stream=c.stream)
    c.stream.sync()
    check(driver.cuMemcpyHtoD(int(buf.handle), np.ascontiguousarray(out).ctypes.data, out.nbytes))
    r, b = c.upload(ref), c.upload(bound)
    try:
        return c(buf, out.dtype, out.size, r, b)
    finally:
        for x in (buf, r, b):
            x.close()


@pytest.mark.parametrize("shape", ["300x264x520_bt", "64x72x40_bt_bf16", "1000x4096x256_bt"])
def test_the_gpu_check_gives_the_host_check_s_verdict(checker, shape):
    """A correct output, one output off by more than its bound, a NaN, and an output left poisoned:
    the GPU's Check has the host's verdict, message and (to rounding) errors."""
    from autosched.measure.reference_gpu import host_products
    from autosched.bf16 import float32_to_bf16_bits
    w = Hgemm.from_shape(shape)
    a, b = (x.astype(np.float32) for x in w.logical(w.inputs(3)))
    ref, mag = host_products(a, np.ascontiguousarray(b.T))
    bound = w.bound_of(ref, mag)
    enc = (lambda x: float32_to_bf16_bits(x.astype(np.float32))) if w.bf16 else (lambda x: x.astype(np.float16))
    good = enc(ref)
    off = good.copy()
    off.flat[7] = enc(np.array([ref.flat[7] + 50 * bound.flat[7] + 1.0]))[0]
    nan = good.copy()
    nan.flat[-1] = 0x7FC0 if w.bf16 else np.float16("nan")
    poisoned = np.full_like(good, 0xFFFF if w.bf16 else np.float16("nan"))
    for out in (good, off, nan, poisoned):
        want, got = w.check(out, ref, bound), gpu_check(checker, out, ref, bound)
        assert (got.ok, got.message.split(" (")[0]) == (want.ok, want.message.split(" (")[0])
        if np.isfinite(want.max_abs_err):
            assert got.max_abs_err == pytest.approx(want.max_abs_err, rel=1e-12)
            assert got.rel_l2_err == pytest.approx(want.rel_l2_err, rel=1e-9, abs=1e-15)
    assert gpu_check(checker, good, ref, bound).ok and not gpu_check(checker, off, ref, bound).ok


def test_the_gpu_check_reads_a_corner_of_a_larger_reference(checker):
    """ref and bound given with a row stride (a row family's mirror holds a larger problem's): the
    verdict is that of the corner's own contiguous copies, a wrong output in the last row included."""
    from cuda.bindings import driver

    from autosched.measure.reference_gpu import host_products
    from autosched.runtime import check
    w = Hgemm.from_shape("96x200x64_bt")
    a, b = (x.astype(np.float32) for x in w.logical(w.inputs(4)))
    ref, mag = host_products(a, np.ascontiguousarray(b.T))
    bound = w.bound_of(ref, mag)
    M, N = 70, 136
    good = ref[:M, :N].astype(np.float16)
    off = good.copy()
    off[-1, -1] = np.float16(ref[M - 1, N - 1] + 50 * bound[M - 1, N - 1] + 1.0)
    dev, c = checker
    r, bd = c.upload(ref), c.upload(bound)
    try:
        for out in (good, off):
            buf = dev.allocate(out.nbytes, stream=c.stream)
            c.stream.sync()
            check(driver.cuMemcpyHtoD(int(buf.handle), np.ascontiguousarray(out).ctypes.data, out.nbytes))
            got = c(buf, out.dtype, out.size, r, bd, cols=N, ld=ref.shape[1])
            want = gpu_check(checker, out, ref[:M, :N], bound[:M, :N])
            buf.close()
            assert (got.ok, got.max_abs_err) == (want.ok, want.max_abs_err)
        assert not got.ok
    finally:
        r.close()
        bd.close()


def test_a_worker_checks_family_members_in_its_device_mirror():
    """Through the runner, GEMMs of one row family of growing M and N (the mirror re-uploaded as the
    family grows, members checked in place; a member of a family grown in rows and columns is read
    at the family's row stride): a correct kernel passes every shape.  That a wrong output fails
    there is the strided check's test above."""
    defaults_pass_through_a_worker(("64x1024x512_bt", "200x1024x512_bt", "1000x4096x512_bt", "30x300x512_bt",
                                    "129x4096x512_bt"))
