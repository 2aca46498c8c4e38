"""On a GPU: every q4 layout the relayout kernels make equals layouts.apply's, bit for bit, on
random words and scales (sign bits set, ragged tile counts), and a worker measuring GEMV configs
through them passes the reference check."""

import numpy as np
import pytest

from autosched import layouts
from autosched.measure.relayout_gpu import GpuRelayout, handles

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu():
    from cuda.core import Device

    from autosched.device import query
    dev = Device(0)
    dev.set_current()
    info = query(0)
    stream = dev.create_stream()
    return dev, stream, GpuRelayout(dev, stream, info.sm_count, info.arch)


def on_gpu(gpu, layout, params, host):
    from cuda.bindings import driver

    from autosched.runtime import check, to_device
    dev, stream, relayout = gpu
    assert handles(layout, params, host)
    src = to_device(dev, stream, host)
    out = relayout(layout, params, src, host.shape, host.dtype.itemsize)
    got = np.empty(host.size, dtype=host.dtype)
    stream.sync()
    check(driver.cuMemcpyDtoH(got.ctypes.data, int(out.handle), got.nbytes))
    src.close()
    out.close()
    return got


def cases(count=40, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        n, k = (int(x) for x in rng.choice([1, 2, 4, 8, 16, 32, 64], size=2))
        out.append((str(rng.choice(["k", "rows", "natural"])), n * 2 * int(rng.integers(1, 5)), n,
                    k * int(rng.integers(1, 4)), k))
    return out + [("k", 4096, 64, 512, 4), ("rows", 128256, 8, 256, 32)]


@pytest.mark.parametrize("nibbles, rows, n, cols, k", cases())
def test_words_equal_the_host_layout(gpu, nibbles, rows, n, cols, k):
    host = np.random.default_rng(rows * cols + n).integers(0, 2**32, size=(rows, cols), dtype=np.uint32)
    params = {"nibbles": nibbles, "n": n, "k": k}
    assert np.array_equal(on_gpu(gpu, "q4_words", params, host), layouts.apply("q4_words", params, host))


@pytest.mark.parametrize("rows, n, groups", [(2, 1, 1), (64, 64, 3), (4096, 32, 32), (96, 8, 7)])
def test_scales_equal_the_host_layout(gpu, rows, n, groups):
    host = np.random.default_rng(rows).standard_normal((rows, groups)).astype(np.float16)
    got = on_gpu(gpu, "q4_scales", {"n": n}, host)
    assert np.array_equal(got.view(np.uint16), layouts.apply("q4_scales", {"n": n}, host).view(np.uint16))
