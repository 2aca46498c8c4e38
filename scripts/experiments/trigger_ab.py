"""Device experiment: the 7B q4f16_1 engine as shipped against q4 GEMVs that let their successor
launch later, timed alternately in one process on the same GEMV configs (step_ab_kit).

    python scripts/experiments/trigger_ab.py OUT_DIR

pdl_trigger.py's synthetic layer (the 7B's four weight streams) took 44.3 us with each kernel
calling grid_dependents_launch after its stream against 46.7 calling it first thing.  Variants:
  as shipped     the q4 GEMV lets its successor launch right after its L2 prefetch
  trigger end    ... after its K loop (before the reduction and epilogue)
  trigger half   ... after half its K steps
Writes OUT_DIR/trigger-ab.json: per variant, tokens/s and the share of the limit a round.
"""
import json
import sys
import tempfile
from pathlib import Path

import torch

from autosched import api
from autosched.database import Database
from autosched.engine.engine import Engine
from autosched.engine.weights import random_weights_torch
from step_ab_kit import SHIPPED, alternate, patch_sources, replacing

FIRST = ("      autosched_pdl::grid_dependents_launch();\n    }\n#endif\n    u32 q[TILE_S][WPT];",
         "    }\n#endif\n    u32 q[TILE_S][WPT];")
REDUCE = "    // Reduce over r: first among the lanes of a warp, then across warps through shared memory.\n"
STEP = "      compute(cur, vv, sc, row0, w0, acc);\n"


def engines_ab(out: Path, variants: dict, name: str, model: str = "random:llama2-7b", fmt: str = "q4f16_1") -> None:
    """Build MODEL's FMT engine once per variant (label -> kernel-text edit; the first verifies
    its step into a fresh database, the others serve what it stored), check every variant's logits
    against the first's, and time them alternately; OUT/NAME.json."""
    cfg = api.model_config(model)
    w = random_weights_torch(cfg, 1234, "cuda")
    engines = {}
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db:
        for label, edit in variants.items():
            patch_sources(edit)
            engines[label] = Engine(cfg, w, fmt, db=db, reverify=label == "as shipped")
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
    (out / f"{name}.json").write_text(json.dumps(res, indent=1, default=str))


def main():
    text = SHIPPED("gemv_q4f16.cuh")
    assert text.count(FIRST[0]) == 1 and text.count(REDUCE) == 1 and text.count(STEP) == 1
    engines_ab(Path(sys.argv[1]), {
        "as shipped": None,
        "trigger end": replacing([FIRST, (REDUCE, "    autosched_pdl::grid_dependents_launch();\n" + REDUCE)]),
        "trigger half": replacing([FIRST, (STEP, STEP + "      if (step == STEPS / 2) autosched_pdl::grid_dependents_launch();\n")]),
    }, "trigger-ab")


if __name__ == "__main__":
    main()
