"""Device experiment: the 7B q4f16_1 engine as shipped against variants of its kernels' source,
timed alternately in one process on the same GEMV configs.

    python scripts/experiments/step_variants_ab.py OUT_DIR OLD_DECODE_CUH

The first engine runs the step verification and descent into a fresh database; each variant engine
is built from the shipped kernel text with an edit (applied here, so its binaries are its own),
finds that verification stored and serves the same configs.  Variants:
  as shipped       this tree
  old argmax       kernels/decode.cuh as OLD_DECODE_CUH has it (argmax_step walking its slice one
                   logit at a time, a shared-memory tree for the block's best)
  attn 16          rope_attention with 16 positions a warp in flight (the first 128 positions loaded
                   before its wait), one block an SM for the registers that takes
Writes OUT_DIR/step-variants-ab.json: per variant, tokens/s and the share of the limit a round.
"""
import json
import sys
import tempfile
from pathlib import Path

import torch

import autosched.templates.base as base
from autosched import api
from autosched.benchmarks.decode import copy_bandwidth_gbps, engine_tokens_per_s
from autosched.database import Database
from autosched.engine.engine import Engine
from autosched.engine.weights import random_weights_torch
from autosched.templates import decode as dk

_orig = base.kernel_source
_batch = dk.attention_batch


def patch(edit) -> None:
    """Every autosched module's kernel_source (the name each template imported) returns
    edit(filename, shipped text); None restores the shipped text."""
    def source(filename, _seen=frozenset()):
        text = _orig(filename, _seen)
        return edit(filename, text) if edit else text
    source.patched = True
    for name, mod in list(sys.modules.items()):
        if name.startswith("autosched"):
            f = getattr(mod, "kernel_source", None)
            if f is _orig or getattr(f, "patched", False):
                mod.kernel_source = source


def main():
    out, old_decode = Path(sys.argv[1]), Path(sys.argv[2]).read_text()
    blocks = "constexpr int ATTENTION_BLOCKS_PER_SM = 2;"
    assert blocks in _orig("decode.cuh")

    def inlined(text):     # OLD_DECODE_CUH's local includes, as kernel_source inlines them
        return "".join(_orig(m.group(1)) if (m := base._LOCAL_INCLUDE.match(line)) else line
                       for line in text.splitlines(keepends=True))

    def old_argmax(filename, text):
        return inlined(old_decode) if filename == "decode.cuh" else text

    def attn16(filename, text):
        return text.replace(blocks, "constexpr int ATTENTION_BLOCKS_PER_SM = 1;")

    variants = {"as shipped": (None, _batch), "old argmax": (old_argmax, _batch),
                "attn 16": (attn16, lambda act, hs: 16)}
    cfg = api.model_config("random:llama2-7b")
    w = random_weights_torch(cfg, 1234, "cuda")
    engines = {}
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db:
        for label, (edit, batch) in variants.items():
            patch(edit)
            dk.attention_batch = batch
            engines[label] = Engine(cfg, w, "q4f16_1", db=db, reverify=label == "as shipped")
            print(label, "built:", engines[label].describe()[:5], flush=True)
    patch(None)
    dk.attention_batch = _batch
    del w
    torch.cuda.empty_cache()
    runs = {label: [] for label in engines}
    for _ in range(5):
        bw = copy_bandwidth_gbps(torch)
        for label, eng in engines.items():
            tp = engine_tokens_per_s(torch, eng, 64)["tokens_per_s"]
            runs[label].append({"copy_gbps": bw, "tokens_per_s": tp,
                                "pct_of_bw_limit": 100 * tp * eng.weight_bytes_per_token() / (bw * 1e9)})
        print({k: round(v[-1]["tokens_per_s"], 1) for k, v in runs.items()}, f"at {bw:.0f} GB/s", flush=True)
    res = {"runs": runs, "served": {k: e.describe()[:6] for k, e in engines.items()}}
    (out / "step-variants-ab.json").write_text(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()
