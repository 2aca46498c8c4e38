"""The DietCode micro-kernel templates, one line each, in the order a dynamic run samples and reports
them: what tune_dynamic takes by name, what ops.HgemmDispatch renders, what the DietCode bench runs.
Everything else about one is asked of its class (templates/base.MicroKernelTemplate)."""

from __future__ import annotations

from functools import cache

from autosched.templates.hgemm_dyn import HgemmDynTemplate
from autosched.templates.hgemm_stream import HgemmStreamDynTemplate
from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate
from autosched.templates.hgemm_wgmma_sched import HgemmWgmmaSchedDynTemplate
from autosched.templates.hgemm_wgmma_splitk import HgemmWgmmaSplitKDynTemplate, counter_bytes
from autosched.templates.hgemm_wgmma_swap import HgemmWgmmaSwapDynTemplate

MICRO_KERNELS = [
    HgemmDynTemplate,
    HgemmWgmmaDynTemplate,
    HgemmWgmmaSplitKDynTemplate,
    HgemmStreamDynTemplate,
    HgemmWgmmaSwapDynTemplate,
    HgemmWgmmaSchedDynTemplate,
]


def dynamic_templates() -> dict[str, type]:
    """Every micro-kernel template class by family, in MICRO_KERNELS' order (read at call time)."""
    return {t.family: t for t in MICRO_KERNELS}


def micro_kernel(family: str):
    """The micro-kernel template of `family` (one instance a class: templates hold no state but caches)."""
    return _instance(dynamic_templates()[family])


@cache
def _instance(cls):
    return cls()


def refusal(template) -> str:
    """What tune_dynamic says when asked for a switched-off family by name."""
    s = template.switch
    return (f"{template.family} micro-kernels are switched off ({s.env}=0 in the environment, or its default in "
            f"autosched/knobs.py); {s.env}=1 turns them on for one process")


def not_served(template) -> str:
    """What HgemmDispatch says of an artifact holding a switched-off family."""
    s = template.switch
    return (f"the dynamic artifact holds {template.family} micro-kernels, and their switch is off ({s.env}=0 or "
            f"its default in autosched/knobs.py; {s.env}=1 serves them): its ladder serves every M")


def switched_off(template) -> bool:
    return template.switch is not None and not template.switch.enabled()


def default_families(wgmma: bool, layout: str) -> list[str]:
    """The families a dynamic run samples unless told which: those not on wgmma always, those on it where
    `wgmma` (the GPU has it and the caller serves it), those reading only layout nt where `layout` is
    it, and none whose switch is off."""
    return [f for f, t in dynamic_templates().items()
            if (wgmma or not t.on_wgmma) and (layout == "nt" or not t.nt_only) and not switched_off(t)]


def counter_region(N: int, top: int, kernels) -> int:
    """Where every launch's tile counters end in one workspace shared by `kernels` ((family, config)
    pairs) for M up to `top`: the counters of the most tiles any of them that reads a workspace makes
    there (hgemm_wgmma_splitk.dynamic_workspace puts every launch's counters right before it); 0 where
    none does."""
    tiles = [micro_kernel(f).tile(c) for f, c in kernels if micro_kernel(f).reads_workspace(c)]
    return max([counter_bytes(-(-top // rows) * -(-N // cols)) for rows, cols in tiles] or [0])
