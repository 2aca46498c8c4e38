"""Device experiment: the decode step's time by context length, for when split-KV starts: as the
kernel does (one slice up to two of a warp's batches, 128 positions), and the source patched to
split from 64 positions (the rule before 2026-11-26) or into slices of 128 and 256 positions;
7B dims, 8 layers, q4f16_1."""
import dataclasses, json, sys, tempfile
from pathlib import Path
import torch
import autosched.templates.decode as td
from autosched import api
from autosched.database import Database
from autosched.engine.engine import Engine
from autosched.engine.weights import random_weights_torch

orig = td.kernel_source
WINDOWS = [(8, 56), (72, 120), (136, 248), (264, 504), (520, 1016)]


RULE = "n <= 2 * NW * KPRE ? 1 : min(nsplit, (pos + 64) / 64)"
VARIANTS = {"as built": RULE, "split from 64": "n <= 64 ? 1 : min(nsplit, (pos + 64) / 64)",
            "slices of 128": "min(nsplit, (pos + 128) / 128)", "slices of 256": "min(nsplit, (pos + 256) / 256)"}


def patched(rule):
    def ks(name, *a):
        s = orig(name, *a)
        if name != td.HEADER:
            return s
        assert s.count(RULE) == 1
        return s.replace(RULE, rule)
    return ks


def main():
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    cfg = dataclasses.replace(api.model_config("random:llama2-7b"), n_layers=layers)
    w = random_weights_torch(cfg, 1234, "cuda")
    res = {}
    for S in (sys.argv[3].split(",") if len(sys.argv) > 3 else VARIANTS):
        td.kernel_source = patched(VARIANTS[S])
        with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db:
            eng = Engine(cfg, w, "q4f16_1", db=db, reverify=True, batched_prefill=False)
        eng.reset()
        eng.step(1)
        row = {}
        for lo, hi in WINDOWS:
            eng.decode(lo - eng.pos)
            torch.cuda.synchronize()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            eng.decode(hi - lo)
            b.record()
            b.synchronize()
            row[f"{lo}-{hi}"] = a.elapsed_time(b) * 1e3 / (hi - lo)
        res[S] = row
        print(S, {k: round(v, 1) for k, v in row.items()}, flush=True)
        del eng
        torch.cuda.empty_cache()
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(".")
    (out / "attn-slices.json").write_text(json.dumps({"layers": layers, "us_per_step": res}, indent=1))


if __name__ == "__main__":
    main()
