"""Device experiment: %globaltimer marks inside the decode attention (thread 0 of each head's first
slice), written into the split-KV partial buffer (unused at a short context); 7B dims, 8 layers."""
import dataclasses, json, sys, tempfile
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
        ' if (threadIdx.x == 0 && split == 0) reinterpret_cast<unsigned long long*>(part)[h * 8 + {k}] = _t; }}\n')
ANCHORS = [  # (anchor line, mark index, dependency, before?)
    ("  const int pos = pos_p[0];\n", 0, "0.f", True),
    ("  const int first = t0 + w;\n", 1, "(float)pos", True),
    ("  wait();\n", 2, "0.f", False),
    ("  const float scale = rsqrtf((float)head_size);\n", 3, "q[0].x + kn[0].x + vn[0].x", True),
    ("  float* ml = smem;         // 2 * NW floats\n", 4, "acc[0].x + l", True),
    ("  if (splits == 1) {\n", 5, "o + sum", True),
]
orig = td.kernel_source


def patched(name, *a):
    s = orig(name, *a)
    if name != td.HEADER:
        return s
    for anchor, k, dep, before in ANCHORS:
        assert s.count(anchor) == 1, anchor
        m = MARK.format(dep=dep, k=k)
        s = s.replace(anchor, m + anchor if before else anchor + m, 1)
    end = "    if (threadIdx.x < head_size) out[h * head_size + threadIdx.x] = from_f<T>(o / sum);\n"
    assert s.count(end) == 1
    s = s.replace(end, end + MARK.format(dep="o", k=6).replace("  {", "    {"), 1)
    return s


def main():
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    cfg = dataclasses.replace(api.model_config("random:llama2-7b"), n_layers=layers)
    td.kernel_source = patched
    w = random_weights_torch(cfg, 1234, "cuda")
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db:
        eng = Engine(cfg, w, "q4f16_1", db=db, reverify=True, batched_prefill=False)
    eng.reset()
    for t in PROMPT:
        eng.step(t)
    eng.decode(4)
    rows = []
    for _ in range(40):
        eng.decode(1)
        torch.cuda.synchronize()
        t = eng.part.view(torch.int64)[: cfg.n_heads * 8].cpu().numpy().reshape(cfg.n_heads, 8)[:, :7]
        rows.append(t.astype(np.float64))
    a = np.stack(rows)                       # (steps, heads, 7) ns, the last layer's
    rel = (a - a[:, :, 2:3]) / 1e3            # us after the block's wait returned
    names = ["entry", "pos loaded", "wait returned", "q,k,v in regs", "loop done", "merged", "stored"]
    med = np.median(rel, axis=0)              # (heads, 7)
    print("us relative to the block's wait() return: median over steps; min / median / max over heads")
    for i, n in enumerate(names):
        print(f"  {n:14s} {med[:, i].min():7.2f} {np.median(med[:, i]):7.2f} {med[:, i].max():7.2f}")
    first_wait = a[:, :, 2].min(axis=1)
    spread = np.median(a[:, :, 2].max(axis=1) - first_wait) / 1e3
    last_store = np.median(a[:, :, 6].max(axis=1) - first_wait) / 1e3
    print(f"  wait() returns over {spread:.2f} us across heads; the last head stores {last_store:.2f} us after the first wait returned")
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(".")
    (out / "attn-marks.json").write_text(json.dumps({"names": names, "median_rel_us": med.tolist(),
                                                     "wait_spread_us": spread, "last_store_us": last_store}))


if __name__ == "__main__":
    main()
