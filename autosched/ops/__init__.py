"""User-facing ops on torch tensors, served from the database (falling back to the default)."""

from autosched.ops.gemv import Choice, Q4Linear, choose_config

__all__ = ["Choice", "Q4Linear", "choose_config"]
