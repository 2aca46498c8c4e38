"""Device experiment: %globaltimer marks in every block of one layer's five kernels of the 7B
q4f16_1 decode step as shipped (32 layers, verified in its step from a fresh database).

Each q4 GEMV block's thread 0 writes entry, dependency wait returned, K loop done and end into a
buffer passed in the epilogue argument the kernel does not use (ss_in of a residual matmul, ss_out
of a norm one; the source is patched here only), attention's first-slice blocks write entry, wait
returned and stored into its split-KV buffer (unused below 128 positions).

    python scripts/experiments/layer_marks.py OUT_DIR [LAYER]
"""
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

import autosched.templates.decode as td
import autosched.templates.gemv_q4f16 as tg
from autosched import api
from autosched.benchmarks.decode import PROMPT
from autosched.database import Database
from autosched.engine.engine import Engine
from autosched.engine.weights import random_weights_torch
from autosched.runtime import ptr

GEMV_MARK = ('{{ unsigned long long _t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(_t) : "f"({dep}) : "memory");'
             ' const double* _m = EPI == autosched_epi::RESIDUAL ? ea.ss_in : ea.ss_out;'
             ' if (_m != nullptr && threadIdx.x + threadIdx.y == 0)'
             ' const_cast<unsigned long long*>(reinterpret_cast<const unsigned long long*>(_m))[blockIdx.x * 4 + {k}] = _t; }}\n')
GEMV_ANCHORS = [("    const int row0 = blockIdx.x * ROWS + s * TILE_S;\n", 0, "0.f", False),
                ("    autosched_pdl::grid_dependency_wait();\n#endif\n", 1, "0.f", False),
                ("    // Reduce over r: first among the lanes", 2, "acc[0]", True)]
GEMV_END = "      autosched_epi::finish<EPI, THREADS>(red, ROWS, blockIdx.x * ROWS, N, out, ea, scale);\n    }\n"
ATT_MARK = ('  {{ unsigned long long _t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(_t) : "f"({dep}) : "memory");'
            ' if (threadIdx.x == 0 && split == 0) reinterpret_cast<unsigned long long*>(part)[h * 4 + {k}] = _t; }}\n')
ATT_ANCHORS = [("  const int pos = pos_p[0];\n", 0, "0.f", True), ("  wait();\n", 1, "0.f", False)]
ATT_END = "    if (threadIdx.x < head_size) out[h * head_size + threadIdx.x] = from_f<T>(o / sum);\n"

orig_g, orig_d = tg.kernel_source, td.kernel_source


def patch(s, anchors, mark, end, end_mark):
    for anchor, k, dep, before in anchors:
        assert s.count(anchor) == 1, anchor
        m = mark.format(dep=dep, k=k)
        s = s.replace(anchor, m + anchor if before else anchor + m, 1)
    assert s.count(end) == 1, end
    return s.replace(end, end + end_mark, 1)


def gemv_source(name, *a):
    s = orig_g(name, *a)
    if name != "gemv_q4f16.cuh":
        return s
    s = patch(s, GEMV_ANCHORS, GEMV_MARK, GEMV_END, GEMV_MARK.format(dep="0.f", k=3))
    # the STORE / NORM epilogues write from the loop's sums: mark their end after the stores
    tail = "          out[row] = __float2half_rn(EPI == autosched_epi::NORM ? sum * scale : sum);\n        }\n      }\n    }\n"
    assert s.count(tail) == 1
    return s.replace(tail, tail + "    if constexpr (!STAGE) " + GEMV_MARK.format(dep="0.f", k=3), 1)


def attn_source(name, *a):
    s = orig_d(name, *a)
    if name != td.HEADER:
        return s
    return patch(s, ATT_ANCHORS, ATT_MARK, ATT_END, ATT_MARK.format(dep="o", k=2).replace("  {", "    {"))


class Marked:
    """A Matmul whose call at `layer` passes `buf` in the epilogue slot the kernel leaves unused."""

    def __init__(self, m, layer, buf, slot):
        self.m, self.layer, self.buf, self.slot = m, layer, buf, slot

    def __call__(self, stream, layer, out, x, epilogue_args):
        if layer == self.layer:
            a = list(epilogue_args)
            a[self.slot] = ptr(self.buf)
            epilogue_args = tuple(a)
        self.m(stream, layer, out, x, epilogue_args)

    def __getattr__(self, n):
        return getattr(self.m, n)


def main():
    out = Path(sys.argv[1])
    layer = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    tg.kernel_source, td.kernel_source = gemv_source, attn_source
    cfg = api.model_config("random:llama2-7b")
    w = random_weights_torch(cfg, 1234, "cuda")
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db:
        eng = Engine(cfg, w, "q4f16_1", db=db, reverify=True, batched_prefill=False)
    del w
    slots = {"qkv": 2, "o": 1, "gate_up": 2, "down": 1}
    bufs = {n: torch.zeros(1 << 16, dtype=torch.int64, device="cuda") for n in slots}
    for n, s in slots.items():
        eng.mm[n] = Marked(eng.mm[n], layer, bufs[n], s)
    eng._graph = None
    eng.reset()
    for t in PROMPT:
        eng.step(t)
    eng.decode(4)
    blocks = {n: eng.mm[n].spec.grid[0] for n in slots}
    steps = []
    for _ in range(30):
        for b in bufs.values():
            b.zero_()
        eng.part.zero_()
        eng.decode(1)
        torch.cuda.synchronize()
        rec = {n: bufs[n][: 4 * blocks[n]].cpu().numpy().reshape(-1, 4).astype(np.float64) for n in slots}
        rec["attn"] = eng.part.view(torch.int64)[: 4 * cfg.n_heads].cpu().numpy().reshape(-1, 4)[:, :3].astype(np.float64)
        steps.append(rec)
    # every time relative to the first qkv block's wait return, in us; per kernel the median over steps
    names = {"qkv": ["entry", "wait", "loop", "end"], "attn": ["entry", "wait", "stored"], "o": ["entry", "wait", "loop", "end"],
             "gate_up": ["entry", "wait", "loop", "end"], "down": ["entry", "wait", "loop", "end"]}
    summary = {}
    for n, cols in names.items():
        rows = {}
        for i, c in enumerate(cols):
            q = []
            for rec in steps:
                t0 = rec["qkv"][:, 1].min()
                v = (rec[n][:, i] - t0) / 1e3
                q.append([v.min(), np.percentile(v, 10), np.median(v), np.percentile(v, 90), v.max()])
            rows[c] = np.median(np.array(q), axis=0).round(2).tolist()
        summary[n] = rows
    print(f"layer {layer}: us after qkv's first wait return (median over 30 steps): min p10 median p90 max over blocks")
    for n, rows in summary.items():
        print(f"{n} ({blocks.get(n, cfg.n_heads)} blocks)")
        for c, v in rows.items():
            print(f"   {c:7s} " + " ".join(f"{x:7.2f}" for x in v))
    res = {"layer": layer, "blocks": blocks, "configs": {n: eng.mm[n].choice.config for n in slots},
           "attn_prefetch": eng.attn_prefetch, "summary": summary}
    (out / "layer-marks-7b.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
