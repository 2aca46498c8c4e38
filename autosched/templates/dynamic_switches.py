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


def dynamic_templates() -> dict[str, type]:
    """Every dynamic-M micro-kernel template by family, in the order a run samples and reports them:
    what tune_dynamic takes by name, what ops.HgemmDispatch renders, what the DietCode bench runs."""
    from autosched.templates.hgemm_dyn import HgemmDynTemplate
    from autosched.templates.hgemm_stream import HgemmStreamDynTemplate
    from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate
    from autosched.templates.hgemm_wgmma_sched import HgemmWgmmaSchedDynTemplate
    from autosched.templates.hgemm_wgmma_splitk import HgemmWgmmaSplitKDynTemplate
    from autosched.templates.hgemm_wgmma_swap import HgemmWgmmaSwapDynTemplate
    return {"hgemm_dyn": HgemmDynTemplate, "hgemm_wgmma": HgemmWgmmaDynTemplate,
            "hgemm_wgmma_splitk": HgemmWgmmaSplitKDynTemplate, "hgemm_stream": HgemmStreamDynTemplate,
            "hgemm_wgmma_swap": HgemmWgmmaSwapDynTemplate, "hgemm_wgmma_sched": HgemmWgmmaSchedDynTemplate}


# the families that run on wgmma (sm_90) and those that read only a linear layer's layout (nt)
_ON_WGMMA = ("hgemm_wgmma", "hgemm_wgmma_splitk", "hgemm_wgmma_swap", "hgemm_wgmma_sched")
_NT_ONLY = ("hgemm_stream", "hgemm_wgmma_swap")


def default_families(wgmma: bool, layout: str) -> list[str]:
    """The families a dynamic run samples unless told which: hgemm_dyn always; hgemm_wgmma where
    `wgmma` (the GPU has it and the caller serves it); every switched family while its switch is on,
    where the GPU (wgmma's variants) and the layout (hgemm_stream and hgemm_wgmma_swap: nt) allow."""
    switches = dynamic_switches()
    return [f for f in dynamic_templates()
            if (wgmma or f not in _ON_WGMMA) and (layout == "nt" or f not in _NT_ONLY)
            and (f not in switches or switches[f].enabled())]
