"""A synthetic runner for the DietCode micro-kernels (templates/micro_kernels.py): modelled times, for
testing the dynamic pipeline on a machine with no GPU and no recording of the shapes it asks for (the probe instances are made up per
micro-kernel, so no recording could hold them).

Its times are NOT measurements: every Measurement says source "synthetic:model", and the CLI and API
print so.  The model has what the DietCode cost model must learn: per-tile compute time growing with
the tile and falling with arithmetic intensity and occupancy, waves (a partial last wave costs as
much as the residents it holds), padding waste (a 128-row tile for M = 65 computes 128 rows), a
memory floor (reading W once), a predicate cost for the guarded variant, register spills past 200
registers, and a few percent of deterministic per-(config, M) noise, so predictions are never exact.
"""

from __future__ import annotations

from autosched.measure.result import Measurement, Status
from autosched.measure.runner import Runner
from autosched.templates.micro_kernels import dynamic_templates, micro_kernel


class SyntheticRunner(Runner):
    """Answers a micro-kernel template's specs from its `modelled` time (any M, N, K): a test double of
    GpuRunner."""

    name = "synthetic"
    needs_binary = False

    def __init__(self, device):
        self._device = device
        self.calls = 0

    @property
    def device_info(self):
        return self._device

    def build_id(self, template) -> str:
        return f"{template.source_hash()[:12]}/synthetic"

    def measure(self, spec, binary=None) -> Measurement:
        self.calls += 1
        modelled = dynamic_templates()
        if spec.family not in modelled:
            return Measurement(Status.NOT_RECORDED, error=f"the synthetic runner models {', '.join(modelled)} "
                               f"only, not {spec.family}", source="synthetic:model")
        cfg = dict(spec.config)
        args = {a.name: a.value for a in spec.args if a.role == "scalar"}
        us, regs = micro_kernel(spec.family).modelled(cfg, args["M"], args["N"], args["K"], spec, self._device)
        if us != us:
            return Measurement(Status.LAUNCH_ERROR, error="too many resources for one block",
                               source="synthetic:model")
        return Measurement(Status.OK, 0.99 * us, us, 0.01 * us, 0.0, registers=regs,
                           smem_bytes=spec.smem_bytes, source="synthetic:model", runs=1)

    def measure_stream(self, items):
        for tag, spec, binary in items:
            yield tag, self.measure(spec, binary)
