"""Device experiment: the 7B q4f16_1 engine as shipped, its residual epilogue's two changes of
2026-11-27 switched off one at a time, timed alternately in one process on the same configs.

    python scripts/experiments/epilogue_ab.py OUT_DIR

The first engine runs the step verification and descent into a fresh database; the others, built
from kernel sources with a change undone (the text patched here, so their binaries are their own),
find that verification stored and serve the same configs.  Variants:
  as shipped       sums of squares in SS_SLOTS slots, the residual's row read after the wait
  one slot         every residual warp's atomic to slot 0 (the one-double form before), row read late
  no preload       slots, row read where the epilogue uses it
  one slot+pre     slot 0, row read after the wait
Writes OUT_DIR/epilogue-ab.json: per variant, the share of the bandwidth limit in each round.
The edits match the tree of commit 6b8085e, where it ran (2026-11-27); the slots and the early read
were taken out after it, so on a later tree it stops at its first assertion.
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

SLOTTED = "atomicAdd(a.ss_out + (blockIdx.x * (THREADS / 32) + tid / 32) % SS_SLOTS, (double)sq)"
ONE = "atomicAdd(a.ss_out, (double)sq)"
PRELOAD = "if constexpr (EPI == autosched_epi::RESIDUAL) xpre = autosched_epi::residual_preload(ea, ROWS, blockIdx.x * ROWS, N);"
LATE_CALL = "autosched_epi::finish<EPI, THREADS>(red, ROWS, blockIdx.x * ROWS, N, out, ea, scale, xpre);"
LATE = "autosched_epi::finish<EPI, THREADS>(red, ROWS, blockIdx.x * ROWS, N, out, ea, scale);"
VARIANTS = {"as shipped": (), "one slot": ((SLOTTED, ONE), (PRELOAD, ""), (LATE_CALL, LATE)),
            "no preload": ((PRELOAD, ""), (LATE_CALL, LATE)), "one slot+pre": ((SLOTTED, ONE),)}


def main():
    out = Path(sys.argv[1])
    for old, _ in {e for v in VARIANTS.values() for e in v}:
        assert old in SHIPPED("gemv_q4f16.cuh"), old
    cfg = api.model_config("random:llama2-7b")
    w = random_weights_torch(cfg, 1234, "cuda")
    engines = {}
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db:
        for label, edits in VARIANTS.items():
            patch_sources(replacing(edits))
            engines[label] = Engine(cfg, w, "q4f16_1", db=db, reverify=label == "as shipped")
            print(label, "built:", engines[label].describe()[:5], flush=True)
    patch_sources(None)
    del w
    torch.cuda.empty_cache()
    runs = alternate(torch, engines)
    res = {"variants": {k: [list(e) for e in v] for k, v in VARIANTS.items()}, "runs": runs,
           "served": engines["as shipped"].describe()[:5]}
    (out / "epilogue-ab.json").write_text(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()
