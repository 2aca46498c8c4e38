"""A built kernel, ready to launch on a stream: what the engine and the ops share (needs a GPU)."""

from __future__ import annotations

from autosched.device import STATIC_SMEM_LIMIT


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

    from autosched.measure.protocol import check
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


class LoadedKernel:
    """A built KernelSpec, ready to launch."""

    def __init__(self, spec, builder, pdl: bool = False):
        from cuda.core import Device, ObjectCode
        binary = builder.build(spec)
        if not binary.ok:
            raise RuntimeError(f"{spec.name_expression} failed to build:\n{binary.error}")
        self.spec = spec
        self.binary = binary
        mod = ObjectCode.from_cubin(binary.cubin, symbol_mapping={spec.name_expression: binary.symbol.encode()})
        self.kernel = mod.get_kernel(spec.name_expression)
        allow_dynamic_smem(self.kernel, spec.smem_bytes, Device().device_id)
        self.config = launch_config(spec, pdl)

    def __call__(self, stream, *args):
        from cuda.core import launch
        launch(stream, self.config, self.kernel, *args)

