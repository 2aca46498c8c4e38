"""CUDA runtime helpers: pointers, error checks, loading a cubin, launch configs, the dynamic
shared-memory opt-in past the device limit (STATIC_SMEM_LIMIT, in autosched.device).

The ground floor every layer that launches kernels shares (the measuring worker, the benchmarks,
the ops, the engine, the scripts).  cuda modules are imported inside the functions, so this module
imports on a machine without a GPU or a driver; from autosched it imports only autosched.device.
"""

from __future__ import annotations

import numpy as np

from autosched.device import STATIC_SMEM_LIMIT


def check(result):
    """cuda.bindings calls return (err, *values): raise on err, return the values."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        from cuda.bindings import driver
        _, name = driver.cuGetErrorName(err)
        raise RuntimeError(f"CUDA error {int(err)} ({name.decode() if name else '?'})")
    return rest[0] if len(rest) == 1 else rest


def ptr(x) -> np.uint64:
    """A kernel pointer argument from a cuda.core Buffer, a torch tensor or an int (cuda.core
    packs a numpy uint64 as 8 bytes, which is what a pointer parameter takes)."""
    if hasattr(x, "data_ptr"):
        return np.uint64(x.data_ptr())
    if hasattr(x, "handle"):
        return np.uint64(int(x.handle))
    return np.uint64(int(x))


# cuda.core sizes a scalar parameter by its numpy type, so each ArgSpec dtype maps to one
SCALAR_TYPES = {"i32": np.int32, "i64": np.int64, "u32": np.uint32, "f32": np.float32}


def scalar(arg):
    """The launch argument of a scalar ArgSpec: its value as the kernel parameter's type."""
    return SCALAR_TYPES[arg.dtype](arg.value)


def load_kernel(spec, binary):
    """The cuda.core Kernel of `spec` from its built `binary` (needs a GPU); a binary that failed
    to build raises here, naming the kernel, rather than deep inside the driver."""
    if not binary.ok:
        raise RuntimeError(f"{spec.name_expression} failed to build:\n{binary.error}")
    from cuda.core import ObjectCode
    # NVRTC exports the instantiation under its mangled name; the mapping lets us ask by the
    # name expression the spec was rendered with
    mod = ObjectCode.from_cubin(binary.cubin, symbol_mapping={spec.name_expression: binary.symbol.encode()})
    return mod.get_kernel(spec.name_expression)


def launch_config(spec, pdl: bool):
    """The spec's launch shape; with `pdl`, launched with programmatic stream serialization (the
    kernel may start while its predecessor runs: see kernels/pdl.cuh)."""
    from cuda.core import LaunchConfig
    kw = {"programmatic_stream_serialization": True} if pdl else {}
    return LaunchConfig(grid=spec.grid, block=spec.block, shmem_size=spec.smem_bytes, **kw)


def allow_dynamic_smem(kernel, nbytes: int, device_id: int) -> None:
    """Opt `kernel` (a cuda.core Kernel) in to `nbytes` of dynamic shared memory where that is
    over the 48 KB every launch gets (the GPU's opt-in maximum bounds it: the space's rule)."""
    if nbytes <= STATIC_SMEM_LIMIT:
        return
    from cuda.bindings import driver
    attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    h = kernel.handle
    if isinstance(h, driver.CUfunction):
        check(driver.cuFuncSetAttribute(h, attr, nbytes))
    else:                              # a library kernel (CUkernel): set per device
        check(driver.cuKernelSetAttribute(attr, nbytes, h, driver.CUdevice(device_id)))


def pdl_supported() -> bool:
    try:
        from cuda.core import LaunchConfig
        LaunchConfig(grid=(1, 1, 1), block=(32, 1, 1), programmatic_stream_serialization=True)
        return True
    except TypeError:         # a cuda.core without the option: launch the ordinary way
        return False
