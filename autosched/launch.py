"""A built kernel, ready to launch on a stream: what the engine and the ops share (needs a GPU)."""

from __future__ import annotations

from autosched.runtime import allow_dynamic_smem, launch_config, load_kernel


class LoadedKernel:
    """A built KernelSpec, ready to launch."""

    def __init__(self, spec, builder, pdl: bool = False):
        from cuda.core import Device
        binary = builder.build(spec)
        self.kernel = load_kernel(spec, binary)
        self.spec = spec
        self.binary = binary
        allow_dynamic_smem(self.kernel, spec.smem_bytes, Device().device_id)
        self.config = launch_config(spec, pdl)

    def __call__(self, stream, *args):
        from cuda.core import launch
        launch(stream, self.config, self.kernel, *args)
