"""The worker's own kernels under compute-sanitizer: the float64 products (kernels/reference_gemm.cuh)
on ragged extents and the output check (kernels/check_output.cuh) of FP16, BF16 and FP32 outputs,
each compared with numpy.  Prints one line a case; exits 1 on a mismatch.

    compute-sanitizer --tool memcheck python3 scripts/sanitize_reference.py
"""
import sys

import numpy as np
from cuda.bindings import driver
from cuda.core import Device

from autosched.device import query
from autosched.measure.reference_gpu import GpuChecker, GpuProducts, host_products
from autosched.runtime import check

dev = Device(0)
dev.set_current()
info = query(0)
stream = dev.create_stream()
products, checker = GpuProducts(dev, stream, info.arch), GpuChecker(dev, stream, info.sm_count, info.arch)
rng = np.random.default_rng(0)
bad = 0
for M, N, K in [(1, 1, 1), (65, 129, 17), (200, 72, 1000), (64, 64, 16)]:
    a, bt = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((N, K)).astype(np.float32)
    ref, mag = products(a, bt)
    want, _ = host_products(a, bt)
    ok = np.allclose(ref, want, rtol=1e-12, atol=1e-12)
    bound = 1e-2 * np.abs(ref) + 1e-2
    for dt in (np.float16, np.uint16, np.float32):
        out = (ref.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16) if dt is np.uint16 else ref.astype(dt)
        buf = dev.allocate(out.nbytes, stream=stream)
        stream.sync()
        check(driver.cuMemcpyHtoD(int(buf.handle), np.ascontiguousarray(out).ctypes.data, out.nbytes))
        r, b = checker.upload(ref), checker.upload(bound)
        got = checker(buf, out.dtype, out.size, r, b)
        for x in (buf, r, b):
            x.close()
        ok = ok and got.ok
    print(f"{M}x{N}x{K}: {'ok' if ok else 'MISMATCH'}")
    bad += not ok
sys.exit(1 if bad else 0)
