"""What checks a GEMM's output, on the GPU: the float64 products it is checked against (ref = A . B and
mag = |A| . |B|) and the check itself (GpuChecker: every output within its bound of ref).

A row family (row_family.py) grows by the products of its new rows.  On the host, in numpy, that was
most of a large GEMM's preparation: 4096 rows of 4096 x 4096 took seconds of a worker's time, where
the kernels it checks run in microseconds (the dynamic bench's 4096 x 4096 run spent 3.7 of its 8.2 s
there on 2026-11-26).  The worker computes them with kernels/reference_gemm.cuh instead: the same
exact products of decoded FP16/BF16 values summed in double, in another order (any order of a
float64 sum of these few thousand terms differs by a few 1e-16 relative, far under the bound).

    products = host_products                     # numpy: CPU tests, and AUTOSCHED_HOST_REFERENCE=1
    products = GpuProducts(device, stream)       # in the worker, which owns the context
    ref, mag = products(a32, bt32)               # a32 (M, K), bt32 = B^T (N, K) float32 -> (M, N) float64 each

B comes transposed, (N, K), as a row family keeps it (row_family.py): the linear layer's storage.

The check (kernels/check_output.cuh) reads the output where the kernel left it and the reference and
bound uploaded once per shape, and returns the counts and sums the host check computes
(Sgemm.verdict makes the same Check of them): tens of milliseconds of host work a check, twice a
measurement, at a few million outputs, became one small launch.
"""

from __future__ import annotations


import numpy as np

from autosched import knobs
from autosched.build import BuildCache
from autosched.runtime import check, launch_config, load_kernel, ptr, to_device
from autosched.templates.base import ArgSpec, KernelSpec, kernel_source
from autosched.workloads.sgemm import Sgemm

# cuda.bindings and cuda.core are imported inside functions: optional / slow to import, a CPU install runs
# without them

TILE = 64           # kernels/reference_gemm.cuh: outputs a block along each side
SIDE = 16           # its threads along each side


def host_products(a32: np.ndarray, bt32: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """numpy's: the float64 product and sum |a||b| (in float32, which sizes a tolerance to a few 1e-7
    relative at half the cost of float64)."""
    ref = a32.astype(np.float64) @ bt32.astype(np.float64).T
    mag = (np.abs(a32) @ np.abs(bt32).T).astype(np.float64)
    return ref, mag


def reference_spec(M: int, N: int, K: int, arch: str) -> KernelSpec:
    return KernelSpec(family="reference_gemm", workload_key=f"reference:{M}x{N}x{K}", config=(),
                      source=kernel_source("reference_gemm.cuh"), name_expression="reference_products",
                      grid=(-(-N // TILE), -(-M // TILE), 1), block=(SIDE, SIDE, 1), smem_bytes=0,
                      args=(ArgSpec("A", "input", ctype="const float*"), ArgSpec("Bt", "input", ctype="const float*"),
                            ArgSpec("ref", "output", ctype="double*"), ArgSpec("mag", "output", ctype="double*"),
                            ArgSpec("M", "scalar", value=M, ctype="int"), ArgSpec("N", "scalar", value=N, ctype="int"),
                            ArgSpec("K", "scalar", value=K, ctype="int")),
                      arch=arch)


def host_reference_forced() -> bool:
    return knobs.HOST_REFERENCE.enabled()


def load_utility(spec):
    """A kernel of this module, built in this process through the default build cache."""
    return load_kernel(spec, BuildCache().build(spec))      # a failed build raises, naming the kernel


class GpuProducts:
    """The products on the worker's GPU: inputs copied in, the two (M, N) float64 results copied out,
    the buffers freed before returning (a family grows a few times a run, and its arrays live on the
    host).  The kernel is built once (through the build cache) on first use."""

    MAX_GRID_Y = 65535

    def __init__(self, device, stream, arch: str):
        self.device, self.stream, self.arch = device, stream, arch
        self._kernel = None

    def _load(self, spec):
        if self._kernel is None:
            self._kernel = load_utility(spec)
        return self._kernel

    def __call__(self, a32: np.ndarray, bt32: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        from cuda.bindings import driver
        from cuda.core import launch
        (M, K), (N, K2) = a32.shape, bt32.shape
        if K != K2:
            raise ValueError(f"inner dimensions differ: A is {a32.shape}, B^T is {bt32.shape}")
        if -(-M // TILE) > self.MAX_GRID_Y:
            return host_products(a32, bt32)
        if M == 0 or N == 0:
            return np.zeros((M, N)), np.zeros((M, N))
        spec = reference_spec(M, N, K, self.arch)
        kernel = self._load(spec)
        s = int(self.stream.handle)
        bufs = [to_device(self.device, self.stream, x.astype(np.float32, copy=False)) for x in (a32, bt32)]
        bufs += [self.device.allocate(M * N * 8, stream=self.stream) for _ in range(2)]
        try:
            launch(self.stream, launch_config(spec, pdl=False), kernel, *(ptr(x) for x in bufs),
                   np.int32(M), np.int32(N), np.int32(K))
            ref, mag = np.empty((M, N)), np.empty((M, N))
            check(driver.cuMemcpyDtoHAsync(ref.ctypes.data, int(bufs[2].handle), ref.nbytes, s))
            check(driver.cuMemcpyDtoHAsync(mag.ctypes.data, int(bufs[3].handle), mag.nbytes, s))
            self.stream.sync()
            return ref, mag
        finally:
            for x in bufs:
                x.close()


# -- the check ------------------------------------------------------------------------------------

CHECK_KINDS = {np.dtype(np.float16): 0, np.dtype(np.uint16): 1, np.dtype(np.float32): 2}   # uint16: BF16 bits
CHECK_THREADS = 256


def check_spec(kind: int, n: int, sm_count: int, arch: str) -> KernelSpec:
    blocks = max(1, min(-(-n // CHECK_THREADS), 8 * sm_count))
    return KernelSpec(family="check_output", workload_key=f"check:{n}", config=(("kind", kind),),
                      source=kernel_source("check_output.cuh"), name_expression=f"check_output<{kind}>",
                      grid=(blocks, 1, 1), block=(CHECK_THREADS, 1, 1), smem_bytes=0,
                      args=(ArgSpec("out", "input", ctype="const void*"), ArgSpec("ref", "input", ctype="const double*"),
                            ArgSpec("bound", "input", ctype="const double*"), ArgSpec("n", "scalar", value=n, ctype="long long"),
                            ArgSpec("cols", "scalar", value=n, ctype="long long"), ArgSpec("ld", "scalar", value=n, ctype="long long"),
                            ArgSpec("stats", "output", ctype="unsigned long long*"),
                            ArgSpec("sums", "output", ctype="double*")),
                      arch=arch)


class GpuChecker:
    """Checks an output in device memory against a float64 reference and per-element bound of its
    shape (uploaded once: `upload`), as Sgemm.check does on the host.  Outputs of FP16, BF16 bits
    (uint16) or FP32 only (`handles`)."""

    def __init__(self, device, stream, sm_count: int, arch: str):
        self.device, self.stream, self.sm_count, self.arch = device, stream, sm_count, arch
        self._kernels: dict[int, object] = {}
        self._stats = None

    @staticmethod
    def handles(out, ref, bound) -> bool:
        """Whether `out` (an array, or what has its shape and dtype) can be checked here: a dtype the
        kernel reads and a float64 reference and per-element bound of its shape."""
        return (np.dtype(out.dtype) in CHECK_KINDS and isinstance(bound, np.ndarray)
                and out.shape == np.shape(ref) == bound.shape and ref.dtype == bound.dtype == np.float64)

    def upload(self, arr: np.ndarray):
        """A device copy of a float64 array (a strided view is made contiguous first)."""
        return to_device(self.device, self.stream, arr.astype(np.float64, copy=False))

    def __call__(self, out_buf, out_dtype, n: int, ref_buf, bound_buf, cols: int | None = None, ld: int | None = None):
        """The Check (workloads.base) of n outputs at out_buf, after the work queued on the stream.
        ref_buf and bound_buf (Buffers or device addresses) hold n // cols rows of `cols` values each
        `ld` apart (default: contiguous, cols = ld = n)."""
        cols = n if cols is None else cols
        ld = cols if ld is None else ld
        if cols < 1 or n % cols or ld < cols:
            raise ValueError(f"check of {n} outputs: {cols} columns, row stride {ld}")
        from cuda.bindings import driver
        from cuda.core import launch
        kind = CHECK_KINDS[np.dtype(out_dtype)]
        spec = check_spec(kind, n, self.sm_count, self.arch)
        if kind not in self._kernels:
            self._kernels[kind] = load_utility(spec)
        if self._stats is None:
            self._stats = self.device.allocate(40, stream=self.stream)     # 3 u64 counters, 2 f64 sums
        s, h = int(self.stream.handle), int(self._stats.handle)
        check(driver.cuMemsetD8Async(h, 0, 40, s))
        launch(self.stream, launch_config(spec, pdl=False), self._kernels[kind], ptr(out_buf), ptr(ref_buf),
               ptr(bound_buf), np.int64(n), np.int64(cols), np.int64(ld), ptr(h), ptr(h + 24))
        got = np.zeros(5, dtype=np.uint64)
        check(driver.cuMemcpyDtoHAsync(got.ctypes.data, h, 40, s))
        self.stream.sync()
        bad, nonfinite = int(got[0]), int(got[1])
        max_err, d2, r2 = (float(x) for x in got[2:].view(np.float64))
        return Sgemm.verdict(n, nonfinite, max_err, d2, r2, bad)
