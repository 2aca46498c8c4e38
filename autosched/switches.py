"""Switches that a GPU check earns: a module constant (flipped by the session that saw the check pass)
that an environment variable overrides for one process."""

from __future__ import annotations

import os

OFF = ("", "0", "false", "no")


def env_switch(variable: str, verified: bool) -> bool:
    """`verified` unless `variable` is set: then on for any value but an empty one, 0, false or no."""
    env = os.environ.get(variable)
    return verified if env is None else env.strip() not in OFF
