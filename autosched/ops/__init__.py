"""User-facing ops on torch tensors, served by the config autosched.selection.rank puts first."""

from autosched.ops.gemv import Q4Linear

__all__ = ["Q4Linear"]
