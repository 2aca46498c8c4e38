"""A built kernel, ready to launch on a stream: what the engine and the ops share (needs a GPU)."""

from __future__ import annotations

import dataclasses

from autosched.runtime import allow_dynamic_smem, launch, launch_config, load_kernel

# cuda.core is imported inside functions: optional / slow to import, a CPU install runs without it


class LoadedKernel:
    """A built KernelSpec, ready to launch."""

    def __init__(self, spec, builder, pdl: bool = False, cooperative: bool = False):
        from cuda.core import Device
        binary = builder.build(spec)
        self.kernel = load_kernel(spec, binary)
        self.spec = spec
        self.binary = binary
        allow_dynamic_smem(self.kernel, spec.smem_bytes, Device().device_id)
        self.config = launch_config(spec, pdl, cooperative)
        self.pdl, self.cooperative = pdl, cooperative
        self._grids: dict = {}

    def __call__(self, stream, *args):
        launch(stream, self.config, self.kernel, *args)

    def launch(self, stream, grid: tuple, *args):
        """Launch with `grid` instead of the spec's: one binary whose grid follows a size known only
        at the call (the prompt length, a dynamic M).  Launch configs are kept per grid."""
        config = self._grids.get(grid)
        if config is None:
            config = self._grids[grid] = launch_config(dataclasses.replace(self.spec, grid=grid), self.pdl,
                                                            self.cooperative)
        launch(stream, config, self.kernel, *args)
