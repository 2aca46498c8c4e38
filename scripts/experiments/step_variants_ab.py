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
from autosched.database import Database
from autosched.engine.engine import Engine
from autosched.engine.weights import random_weights_torch
from autosched.templates import decode as dk
from step_ab_kit import SHIPPED, alternate, patch_sources

_batch = dk.attention_batch


def main():
    out, old_decode = Path(sys.argv[1]), Path(sys.argv[2]).read_text()
    blocks = "constexpr int ATTENTION_BLOCKS_PER_SM = 2;"
    assert blocks in SHIPPED("decode.cuh")

    def inlined(text):     # OLD_DECODE_CUH's local includes, as kernel_source inlines them
        return "".join(SHIPPED(m.group(1)) if (m := base._LOCAL_INCLUDE.match(line)) else line
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
            patch_sources(edit)
            dk.attention_batch = batch
            engines[label] = Engine(cfg, w, "q4f16_1", db=db, reverify=label == "as shipped")
            print(label, "built:", engines[label].describe()[:5], flush=True)
    patch_sources(None)
    dk.attention_batch = _batch
    del w
    torch.cuda.empty_cache()
    runs = alternate(torch, engines)
    res = {"runs": runs, "served": {k: e.describe()[:6] for k, e in engines.items()}}
    (out / "step-variants-ab.json").write_text(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()
