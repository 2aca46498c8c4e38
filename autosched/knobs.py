"""Every AUTOSCHED_* environment variable autosched reads, declared once, typed and grouped; each is read
when it is used (never at import), and a test overrides any of them for a block with `scope`:

    with knobs.scope(DYN_STREAM=False, RECORDINGS="/tmp/rec"):
        ...

Nothing else in the package reads os.environ for an AUTOSCHED_* variable (tests/test_knobs.py holds it).
A switch's default is what its GPU check earned (the results file or check stage that earned it is
named beside it); the variable overrides it for one process: on for any value but "", 0, false or no.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

OFF = ("", "0", "false", "no")
_UNSET = object()
_overrides: dict[str, object] = {}      # variable -> the value a scope() gives it (None: unset)


def _raw(variable: str) -> str | None:
    if variable in _overrides:
        v = _overrides[variable]
        return None if v is None else str(v)
    return os.environ.get(variable)


@dataclass(frozen=True)
class Switch:
    """A kernel or path that a GPU check earned: `default` unless the variable says otherwise."""
    env: str
    default: bool
    why: str                    # one sentence: what it turns on, and what earned its default

    def enabled(self) -> bool:
        v = _raw(self.env)
        return self.default if v is None else v.strip() not in OFF


@dataclass(frozen=True)
class Text:
    """A path, a list of paths or a name: "" where the variable is unset or empty."""
    env: str
    why: str

    def get(self) -> str:
        return _raw(self.env) or ""


# -- kernels in the static tuning (the hgemm family's templates) ----------------------------------
WGMMA_SPLIT_K = Switch("AUTOSCHED_WGMMA_SPLIT_K", True, "hgemm_wgmma_splitk in the hgemm family (gpu_check splitk)")
WGMMA_CLUSTER = Switch("AUTOSCHED_WGMMA_CLUSTER", True, "hgemm_wgmma_cluster in the hgemm family (gpu_check cluster)")
WGMMA_SCHED = Switch("AUTOSCHED_WGMMA_SCHED", True, "hgemm_wgmma_sched in the hgemm family (gpu_check sched)")

# -- DietCode micro-kernels: sampled by a dynamic run and served by ops.HgemmDispatch -------------
DYN_SPLIT_K = Switch("AUTOSCHED_DYN_SPLIT_K", True, "hgemm_wgmma_splitk micro-kernels (gpu_check dyn-splitk)")
DYN_STREAM = Switch("AUTOSCHED_DYN_STREAM", True, "hgemm_stream micro-kernels (gpu_check dyn-stream)")
WGMMA_SWAP = Switch("AUTOSCHED_WGMMA_SWAP", True, "hgemm_wgmma_swap, static and micro-kernel (gpu_check swap)")
DYN_SCHED = Switch("AUTOSCHED_DYN_SCHED", True, "hgemm_wgmma_sched micro-kernels (tests/gpu/test_dynamic_sched_gpu.py)")

# -- serving ---------------------------------------------------------------------------------------
WGMMA_IN_AUTO = Switch("AUTOSCHED_WGMMA_IN_AUTO", True,
                       "ops.hgemm backend auto takes wgmma where it serves (gpu_check verify timings)")
PREFILL_TC_ATTN = Switch("AUTOSCHED_PREFILL_TC_ATTN", False, "the prefill's tensor-core attention (engine/prefill.py)")

# -- where things are ----------------------------------------------------------------------------
HOME = Text("AUTOSCHED_HOME", "the database's folder (default $XDG_DATA_HOME/autosched)")
CACHE = Text("AUTOSCHED_CACHE", "the build cache's folder (default $XDG_CACHE_HOME/autosched)")
RECORDINGS = Text("AUTOSCHED_RECORDINGS", "folders of recordings served before the shipped ones, os.pathsep-separated")

# -- measuring and benchmarks --------------------------------------------------------------------
HOST_REFERENCE = Switch("AUTOSCHED_HOST_REFERENCE", False, "check outputs against numpy on the host, not the GPU")
WORKER_PROFILE = Text("AUTOSCHED_WORKER_PROFILE", "a folder: the measuring worker runs under cProfile and leaves its profile there")
COMMIT = Text("AUTOSCHED_COMMIT", "the git commit a results file names, where the tree has no usable .git")

ALL = {name: k for name, k in globals().items() if isinstance(k, (Switch, Text))}


def env_switch(variable: str, verified: bool) -> bool:
    """A declared switch read against the caller's own default (the engine's, which keeps its constant)."""
    if not any(k.env == variable for k in ALL.values()):
        raise KeyError(f"{variable} is not declared in autosched/knobs.py")
    v = _raw(variable)
    return verified if v is None else v.strip() not in OFF


@contextlib.contextmanager
def scope(**values):
    """Within the block, the knobs named (as in this module: DYN_STREAM=False, RECORDINGS="...") take
    these values, None unsetting one; the process environment is left alone."""
    unknown = sorted(set(values) - set(ALL))
    if unknown:
        raise KeyError(f"no knob {', '.join(unknown)} in autosched/knobs.py")
    saved = {ALL[n].env: _overrides.get(ALL[n].env, _UNSET) for n in values}
    for n, v in values.items():
        _overrides[ALL[n].env] = ("1" if v else "0") if isinstance(v, bool) else v
    try:
        yield
    finally:
        for env, v in saved.items():
            if v is _UNSET:
                _overrides.pop(env, None)
            else:
                _overrides[env] = v
