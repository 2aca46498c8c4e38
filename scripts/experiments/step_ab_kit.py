"""What the one-process A/B experiments of the decode step share (epilogue_ab.py, step_variants_ab.py,
trigger_ab.py, budget_ab.py):
kernel sources edited per variant, and rounds of the decode benchmark over engines in turn.

An engine reads its kernels' text through `kernel_source` when it builds, so a variant engine is
built from edited text (its binaries are its own: the build cache is keyed by the source), and it
serves the same GEMV configs as the first when it finds that engine's step verification stored in
the same database (the key holds no kernel source)."""
import json
import sys
from pathlib import Path

import autosched.templates.base as base

SHIPPED = base.kernel_source


def patch_sources(edit) -> None:
    """Every autosched module's kernel_source (the name each template imported) returns
    edit(filename, shipped text) from now on; None restores the shipped text."""
    def source(filename, _seen=frozenset()):
        text = SHIPPED(filename, _seen)
        return edit(filename, text) if edit else text
    source.patched = True
    for name, mod in list(sys.modules.items()):
        if name.startswith("autosched"):
            f = getattr(mod, "kernel_source", None)
            if f is SHIPPED or getattr(f, "patched", False):
                mod.kernel_source = source


def replacing(edits):
    """An edit for patch_sources: each (old, new) replaced in every file."""
    def edit(filename, text):
        for old, new in edits:
            text = text.replace(old, new)
        return text
    return edit if edits else None


def alternate(torch, engines: dict, rounds: int = 5, steps: int = 64) -> dict:
    """label -> [{copy_gbps, tokens_per_s, pct_of_bw_limit}] a round: each round measures the copy
    bandwidth, then every engine's decode benchmark in turn."""
    from autosched.benchmarks.decode import copy_bandwidth_gbps, engine_tokens_per_s
    runs = {label: [] for label in engines}
    for _ in range(rounds):
        bw = copy_bandwidth_gbps(torch)
        for label, eng in engines.items():
            tp = engine_tokens_per_s(torch, eng, steps)["tokens_per_s"]
            runs[label].append({"copy_gbps": bw, "tokens_per_s": tp,
                                "pct_of_bw_limit": 100 * tp * eng.weight_bytes_per_token() / (bw * 1e9)})
        print({k: round(v[-1]["tokens_per_s"], 1) for k, v in runs.items()}, f"at {bw:.0f} GB/s", flush=True)
    return runs


def engines_ab(out, variants: dict, name: str, model: str = "random:llama2-7b", fmt: str = "q4f16_1") -> None:
    """Build MODEL's FMT engine once per variant (label -> kernel-text edit; the first verifies
    its step into a fresh database, the others serve what it stored), check every variant's logits
    against the first's, and time them alternately; OUT/NAME.json."""
    import tempfile

    import torch

    from autosched import api
    from autosched.database import Database
    from autosched.engine.engine import Engine
    from autosched.engine.weights import random_weights_torch
    cfg = api.model_config(model)
    w = random_weights_torch(cfg, 1234, "cuda")
    engines = {}
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db:
        for label, edit in variants.items():
            patch_sources(edit)
            engines[label] = Engine(cfg, w, fmt, db=db, reverify=not engines)
            print(label, "built:", engines[label].describe()[:5], flush=True)
    patch_sources(None)
    del w
    torch.cuda.empty_cache()
    # the variants' logits against the shipped engine's on one step (a wrong kernel never wins)
    ref = None
    for label, eng in engines.items():
        eng.reset()
        logits = eng.step(1).float().cpu()
        ref = logits if ref is None else ref
        err = float((logits - ref).abs().max())
        print(label, "max |logits - shipped|:", err, flush=True)
        assert err < 1e-2 * float(ref.abs().max()), f"{label}: logits off the shipped engine's by {err}"
    runs = alternate(torch, engines, rounds=6)
    res = {"model": model, "format": fmt, "runs": runs, "served": {k: e.describe()[:6] for k, e in engines.items()}}
    (Path(out) / f"{name}.json").write_text(json.dumps(res, indent=1, default=str))
