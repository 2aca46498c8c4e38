"""Device experiment: %globaltimer marks inside rope_attention_o (thread 0 of every block), written
into the split-KV partial buffer (unused at a short context); 7B dims, 8 layers, the last layer's.

    python scripts/experiments/attn_o_marks.py [LAYERS] [OUT_DIR]
"""
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

import autosched.templates.decode as td
from autosched import api
from autosched.benchmarks.decode import PROMPT
from autosched.database import Database
from autosched.engine.engine import Engine
from autosched.engine.weights import random_weights_torch

MARK = ('  {{ unsigned long long _t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(_t) : "f"({dep}) : "memory");'
        ' if (threadIdx.x == 0) reinterpret_cast<unsigned long long*>(part)[b * 8 + {k}] = _t; }}\n')
ANCHORS = [  # (anchor, mark index, dependency, before?)
    ('  asm volatile("cp.async.commit_group;" ::: "memory");\n', 0, "0.f", False),
    ("  if (wrote) {\n", 1, "0.f", True),
    ("  float xr[RPW];\n", 2, "0.f", True),
    ("  uint4* att_s = reinterpret_cast<uint4*>(red);", 3, "0.f", True),
    ("  float acc[RPW];\n", 4, "0.f", True),
    ("  float sq = 0.f;\n#pragma unroll\n  for (int j = 0; j < RPW; ++j) {\n    const float o", 5, "acc[0]", True),
]
NAMES = ["started", "attention done", "dependency wait returned", "all heads seen", "att and W_o in smem",
         "rows summed", "end"]


def patched(name, *a):
    s = orig(name, *a)
    if name != td.ATTENTION_O_HEADER:
        return s
    for anchor, k, dep, before in ANCHORS:
        assert s.count(anchor) == 1, anchor
        m = MARK.format(dep=dep, k=k)
        s = s.replace(anchor, m + anchor if before else anchor + m, 1)
    end = "  if (lane == 0) atomicAdd(ss_out, (double)sq);\n"
    assert s.count(end) == 1
    return s.replace(end, end + MARK.format(dep="sq", k=6), 1)


orig = td.kernel_source


def main():
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(".")
    cfg = dataclasses.replace(api.model_config("random:llama2-7b"), n_layers=layers)
    td.kernel_source = patched
    w = random_weights_torch(cfg, 1234, "cuda")
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db:
        eng = Engine(cfg, w, "q4f16_1", db=db, verify=1, batched_prefill=False)
    assert eng.fused_o
    eng.reset()
    for t in PROMPT:
        eng.step(t)
    eng.decode(4)
    nb = cfg.n_heads * eng.splits
    rows = []
    for _ in range(40):
        eng.decode(1)
        torch.cuda.synchronize()
        rows.append(eng.part.view(torch.int64)[: nb * 8].cpu().numpy().reshape(nb, 8)[:, :7].astype(np.float64))
    a = np.stack(rows)                                  # (steps, blocks, 7) ns
    t0 = a[:, :, 2].min(axis=1, keepdims=True)          # the first block past its dependency wait
    rel = np.median((a - t0[:, :, None]) / 1e3, axis=0)  # (blocks, 7) us
    writers = np.arange(nb) < cfg.n_heads               # slice 0 of each head: the writers at this context
    print(f"us after the first block's dependency wait returned (median over steps); {nb} blocks")
    print(f"  {'mark':26s} {'writers min/med/max':>24s}   {'others min/med/max':>24s}")
    for i, n in enumerate(NAMES):
        wv, ov = rel[writers, i], rel[~writers, i]
        print(f"  {n:26s} {wv.min():7.2f} {np.median(wv):7.2f} {wv.max():7.2f}   "
              f"{ov.min():7.2f} {np.median(ov):7.2f} {ov.max():7.2f}")
    (out / "attn-o-marks.json").write_text(json.dumps({"names": NAMES, "median_rel_us": rel.tolist()}))


if __name__ == "__main__":
    main()
