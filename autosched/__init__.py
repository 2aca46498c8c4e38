"""autosched: finds the fastest CUDA kernel for an LLM-inference operator on the GPU it runs on.

The public API (autosched/api.py) is importable from here: `autosched.tune`, `autosched.record`,
`autosched.best_config`, `autosched.export`, `autosched.load_model`, `autosched.workload`, ... and,
where torch is installed, the decode engine (`autosched.Engine`), the ops (`autosched.Q4Linear`,
`torch.ops.autosched.*`) and `autosched.patch` (a transformers Llama model's linears on those ops).
Names are resolved on first use, so `import autosched` stays cheap and needs neither torch nor CUDA.
"""

import importlib

__version__ = "0.1.0"

_API = ("AutoschedError", "Plan", "Tuned", "best_config", "convert", "current_build", "devices", "export",
        "family", "import_recording", "stale_rows", "load_model", "open_runner", "record", "recordings_for", "target_device", "tune",
        "workload", "model_config")
_ELSEWHERE = {"Engine": "autosched.engine.engine", "Q4Linear": "autosched.ops.gemv", "patch": "autosched.ops.patching",
              "FAMILIES": "autosched.registry", "Database": "autosched.database",
              "tune_model": "autosched.model_tuning", "dynamic_workload": "autosched.dynamic.front",
              "tune_dynamic": "autosched.dynamic.front", "dynamic_dispatcher": "autosched.dynamic.front",
              "export_dynamic": "autosched.dynamic.front"}

__all__ = ["__version__", *_API, *_ELSEWHERE]


def __getattr__(name):
    if name in _API:
        return getattr(importlib.import_module("autosched.api"), name)
    if name in _ELSEWHERE:
        return getattr(importlib.import_module(_ELSEWHERE[name]), name)
    raise AttributeError(f"module 'autosched' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
