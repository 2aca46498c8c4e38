"""The switches that let a dynamic tuning run sample a micro-kernel family and ops.HgemmDispatch serve it:
one entry a family that has one (hgemm_dyn and hgemm_wgmma are always on), in the order their refusals
are reported.  Each switch's default and environment variable live in its template's module; this table
only names them, so that the front and the dispatcher word a refusal alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class DynamicSwitch:
    enabled: Callable[[], bool]
    env: str            # the environment variable that overrides it for one process
    constant: str       # the module constant that sets its default
    module: str         # the template module that holds both

    def refusal(self, family: str) -> str:
        """What tune_dynamic says when asked for the family by name while it is off."""
        return (f"{family} micro-kernels are switched off ({self.env}=0 in the environment, or "
                f"templates/{self.module}.py {self.constant}); {self.env}=1 turns them on for one process")

    def not_served(self, family: str) -> str:
        """What HgemmDispatch says of an artifact holding the family while it is off."""
        return (f"the dynamic artifact holds {family} micro-kernels, and their switch is off ({self.env}=0 or "
                f"{self.constant}; {self.env}=1 serves them): its ladder serves every M")


def dynamic_switches() -> dict[str, DynamicSwitch]:
    from autosched.templates.hgemm_stream import dyn_stream_enabled
    from autosched.templates.hgemm_wgmma_sched import dyn_sched_enabled
    from autosched.templates.hgemm_wgmma_splitk import dyn_split_k_enabled
    from autosched.templates.hgemm_wgmma_swap import swap_enabled
    return {
        "hgemm_wgmma_splitk": DynamicSwitch(dyn_split_k_enabled, "AUTOSCHED_DYN_SPLIT_K", "DYN_SPLIT_K_VERIFIED",
                                            "hgemm_wgmma_splitk"),
        "hgemm_wgmma_sched": DynamicSwitch(dyn_sched_enabled, "AUTOSCHED_DYN_SCHED", "DYN_SCHED_VERIFIED",
                                           "hgemm_wgmma_sched"),
        "hgemm_wgmma_swap": DynamicSwitch(swap_enabled, "AUTOSCHED_WGMMA_SWAP", "SWAP_VERIFIED", "hgemm_wgmma_swap"),
        "hgemm_stream": DynamicSwitch(dyn_stream_enabled, "AUTOSCHED_DYN_STREAM", "DYN_STREAM_VERIFIED",
                                      "hgemm_stream"),
    }
