"""Kernel families: one Python class per .cuh template (space, default config, render)."""

from autosched.templates.base import ArgSpec, KernelSpec, Template
from autosched.templates.gemv_q4f16 import GemvQ4F16Template
from autosched.templates.hgemm_mma import HgemmMmaTemplate
from autosched.templates.sgemm import SgemmTemplate

TEMPLATES = {t.family: t for t in (GemvQ4F16Template(), SgemmTemplate(), HgemmMmaTemplate())}


def template_for(workload) -> Template:
    """The template family that serves a workload (one per workload for now)."""
    for t in TEMPLATES.values():
        if t.workload_name == workload.name:
            return t
    raise KeyError(f"no template for workload {workload.name!r}")


__all__ = ["ArgSpec", "KernelSpec", "Template", "TEMPLATES", "template_for", "GemvQ4F16Template",
           "HgemmMmaTemplate", "SgemmTemplate"]
