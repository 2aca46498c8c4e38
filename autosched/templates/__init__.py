"""Kernel families: one Python class per .cuh template (space, default config, render)."""

from autosched.templates.base import ArgSpec, KernelSpec, Template
from autosched.templates.gemv_q4f16 import GemvQ4F16Template
from autosched.templates.hgemm_mma import HgemmMmaTemplate
from autosched.templates.hgemm_wmma import HgemmWmmaTemplate
from autosched.templates.hgemm_wgmma import HgemmWgmmaTemplate
from autosched.templates.hgemm_wgmma_cluster import HgemmWgmmaClusterTemplate
from autosched.templates.hgemm_wgmma_sched import HgemmWgmmaSchedTemplate
from autosched.templates.hgemm_wgmma_splitk import HgemmWgmmaSplitKTemplate
from autosched.templates.hgemm_wgmma_swap import HgemmWgmmaSwapTemplate
from autosched.templates.hgemm_stream import HgemmStreamTemplate
from autosched.templates.sgemm import SgemmTemplate

# which templates serve which workload is the registry's (autosched/registry.py), not this package's
__all__ = ["ArgSpec", "KernelSpec", "Template", "GemvQ4F16Template",
           "HgemmMmaTemplate", "HgemmStreamTemplate", "HgemmWgmmaClusterTemplate",
           "HgemmWgmmaSchedTemplate", "HgemmWgmmaSplitKTemplate", "HgemmWgmmaSwapTemplate", "HgemmWgmmaTemplate",
           "HgemmWmmaTemplate", "SgemmTemplate"]
