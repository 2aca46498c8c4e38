"""Device experiment: the decode step's time by context length for split-KV's shortest slice S
(64 in the kernel: the source patched to 128, 256); 7B dims, 8 layers, q4f16_1."""
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


def patched(S):
    def ks(name, *a):
        s = orig(name, *a)
        if name != td.HEADER or S == 64:
            return s
        assert s.count("(pos + 64) / 64") == 1
        return s.replace("(pos + 64) / 64", f"(pos + {S}) / {S}")
    return ks


def main():
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    cfg = dataclasses.replace(api.model_config("random:llama2-7b"), n_layers=layers)
    w = random_weights_torch(cfg, 1234, "cuda")
    res = {}
    for S in (64, 128, 256):
        td.kernel_source = patched(S)
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
