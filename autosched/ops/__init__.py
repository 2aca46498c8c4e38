"""User-facing ops on torch tensors: the q4f16_1 GEMV served by the config autosched.selection.rank
puts first, and the FP16 GEMM with M given at the call, served by the dynamic dispatcher."""

from autosched.ops.gemv import Q4Linear
from autosched.ops.hgemm import HgemmDispatch, linear

__all__ = ["HgemmDispatch", "Q4Linear", "linear"]
