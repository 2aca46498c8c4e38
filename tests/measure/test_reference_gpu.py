"""The float64 products that check GEMMs (measure/reference_gpu.py): numpy's on the host, and the
reference kernel, which NVRTC compiles on any machine (its launch shape covers every output)."""

import numpy as np

from autosched.build import BuildCache, Builder
from autosched.measure.reference_gpu import SIDE, TILE, host_products, reference_spec


def test_host_products_are_the_float64_product_and_the_sum_of_magnitudes():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((7, 5)).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)
    ref, mag = host_products(a, np.ascontiguousarray(b.T))
    assert ref.dtype == mag.dtype == np.float64 and ref.shape == mag.shape == (7, 3)
    want = [[sum(float(a[i, k]) * float(b[k, j]) for k in range(5)) for j in range(3)] for i in range(7)]
    np.testing.assert_allclose(ref, want, rtol=1e-12)
    np.testing.assert_allclose(mag, np.abs(a).astype(np.float64) @ np.abs(b), rtol=1e-6)
    assert (mag >= np.abs(ref) - 1e-5).all()


def test_the_reference_kernel_compiles_without_spills_and_covers_any_shape(h100, tmp_path):
    for M, N, K in [(1, 8, 8), (4096, 22016, 4096), (65, 129, 24)]:
        spec = reference_spec(M, N, K, h100.arch)
        assert spec.grid[0] * TILE >= N and spec.grid[1] * TILE >= M and spec.block == (SIDE, SIDE, 1)
        assert [a.value for a in spec.args if a.role == "scalar"] == [M, N, K]
    with Builder(workers=1, cache=BuildCache(tmp_path)) as b:
        binary = b.build(spec)
    assert binary.ok, binary.error
    assert binary.resources.spills == 0 and binary.resources.registers * SIDE * SIDE <= h100.regs_per_block


def test_the_check_kernel_compiles_for_every_output_type(h100, tmp_path):
    from autosched.measure.reference_gpu import CHECK_KINDS, check_spec
    specs = [check_spec(kind, n, h100.sm_count, h100.arch) for kind in sorted(set(CHECK_KINDS.values()))
             for n in (1, 1 << 26)]
    assert [s.grid[0] for s in specs[:2]] == [1, 8 * h100.sm_count]
    with Builder(workers=1, cache=BuildCache(tmp_path)) as b:
        for spec, binary in zip(specs, b.build_many(specs)):
            assert binary.ok, (spec.name_expression, binary.error)
            assert binary.resources.spills == 0


def test_gpu_checks_handle_per_element_bounds_of_gemm_outputs_only():
    from autosched.measure.reference_gpu import GpuChecker
    ref = np.zeros((4, 8))
    out = {t: np.zeros((4, 8), dtype=t) for t in (np.float16, np.uint16, np.float32, np.int8)}
    assert GpuChecker.handles(out[np.float16], ref, ref.copy()) and GpuChecker.handles(out[np.uint16], ref, ref.copy())
    assert GpuChecker.handles(out[np.float32], ref, ref.copy())
    assert not GpuChecker.handles(out[np.float16], ref, None)                 # a scalar bound: the host's
    assert not GpuChecker.handles(out[np.float16], ref, np.zeros(8))          # broadcast: the host's
    assert not GpuChecker.handles(out[np.int8], ref, ref.copy())
    assert not GpuChecker.handles(np.zeros((8, 4), np.float16), ref, ref.copy())   # another shape: the host's
