"""The command line that tunes a model's kernels: what `generate`, the CLI and the engine tell a user to
run, below all three (the engine imports nothing of tune-model's own)."""

from __future__ import annotations


def command(model: str, formats, budget_min: float | None = None) -> str:
    """The command line that tunes `model` (what `generate` and the engine tell a user to run)."""
    fmts = ",".join(formats) if not isinstance(formats, str) else formats
    return f"autosched tune-model {model} --formats {fmts}" + (f" --budget {budget_min:g}" if budget_min else "")
