"""On an H100: the batched prefill's GEMMs on wgmma vs mma (hgemm_dyn) vs torch, Llama-2-7B-shaped
fp16 (random weights).  One engine; its BatchedPrefill is swapped for one on each backend.

  1. the per-matmul GEMM at M = 2048 (and 128): HgemmDispatch wgmma / mma vs torch.matmul, us
  2. agreement: wgmma prefill logits vs mma's and torch's at 64 tokens (all positions)
  3. time to first token of a 2048-token (and 128) prompt: wgmma, mma, torch (median of 3)
  4. the host cost of one wgmma dispatch call with the maps cached

    python scripts/prefill_wgmma_timing.py [--out DIR]      # JSON prefill-wgmma.json under DIR
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np


def main() -> int:
    import torch
    from cuda.core import Stream

    from autosched.benchmarks.prefill import torch_prefill, ttft_s
    from autosched.build import Builder
    from autosched.engine.engine import Engine, matmul_shapes
    from autosched.engine.prefill import BatchedPrefill
    from autosched.engine.weights import random_weights_torch
    from autosched.models.llama2c import SEED_CONFIGS
    from autosched.ops.hgemm import HgemmDispatch, host_overhead_us
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    out: dict = {"gemm_us": {}, "ttft_ms": {}}
    cfg = SEED_CONFIGS["llama2-7b"]
    sync = torch.cuda.synchronize
    t0 = time.perf_counter()
    with Builder() as builder:
        w = random_weights_torch(cfg, 0, "cuda")
        eng = Engine(cfg, w, "fp16", builder=builder, graphs=False, prefill_backend="mma")
        del w
        pre = {"mma": eng.prefiller, "wgmma": BatchedPrefill(cfg, "fp16", eng.info, backend="wgmma")}
        pre["wgmma"].load(builder)
        print(f"engine + kernels: {time.perf_counter() - t0:.0f} s", flush=True)
        for line in pre["wgmma"].describe():
            print(line, flush=True)
        s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
        # 1. the GEMMs alone
        for name, (n, k) in matmul_shapes(cfg).items():
            wt = eng.mm[name].layers[0]["w"]
            for M in (128, 2048):
                x = torch.randn((M, k), device="cuda").half()
                row = {}
                for be, p in pre.items():
                    g: HgemmDispatch = p.gemm[name]
                    y = torch.empty((M, n), device="cuda", dtype=torch.float16)
                    row[be] = 1e6 * ttft_s(lambda: [g(s, x, wt, y, M) for _ in range(10)], sync, 3) / 10
                    if be == "wgmma":
                        want = x.float() @ wt.float().t()
                        row["wgmma_rel_err"] = float((y.float() - want).abs().max() / want.abs().max())
                        row["wgmma_config"] = g.config(M)
                        row["host_us"] = host_overhead_us(g, s, x, wt, y, [M], reps=200)
                        sync()
                row["torch"] = 1e6 * ttft_s(lambda: [torch.matmul(x, wt.t()) for _ in range(10)], sync, 3) / 10
                out["gemm_us"][f"{name} {n}x{k} M={M}"] = row
                print(f"{name:8s} {n}x{k} M={M:5d}: wgmma {row['wgmma']:8.1f} us  mma {row['mma']:8.1f} us  "
                      f"torch {row['torch']:8.1f} us  (err {row['wgmma_rel_err']:.1e}, host {row['host_us']:.1f} us)",
                      flush=True)
        # 2. agreement at 64 tokens, every position
        toks = list(range(1, 65))
        got = {}
        for be, p in pre.items():
            eng.prefiller = p
            got[be] = eng.prefill(toks, mode="batched", all_logits=True).float().cpu().numpy()
        ref = torch_prefill(eng, toks).float().cpu().numpy()
        rel = lambda u, v: float(np.abs(u - v).max() / np.abs(v).max())   # noqa: E731
        out["agreement_64"] = {"wgmma_vs_mma": rel(got["wgmma"], got["mma"]), "wgmma_last_vs_torch": rel(got["wgmma"][-1], ref)}
        print(f"64 tokens: wgmma vs mma {out['agreement_64']['wgmma_vs_mma']:.2e}, last position vs torch "
              f"{out['agreement_64']['wgmma_last_vs_torch']:.2e}", flush=True)
        ok = max(out["agreement_64"].values()) < 2e-2
        # 3. time to first token
        for T in (128, 2048):
            tk = [int(t) for t in np.random.default_rng(T).integers(0, cfg.vocab_size, T)]
            row = {}
            for be, p in pre.items():
                eng.prefiller = p
                eng.prefill(tk, mode="batched")
                row[be] = 1e3 * ttft_s(lambda: eng.prefill(tk, mode="batched"), sync, 3)
            with torch.no_grad():
                torch_prefill(eng, tk)
                row["torch"] = 1e3 * ttft_s(lambda: torch_prefill(eng, tk), sync, 3)
            out["ttft_ms"][T] = row
            print(f"prefill {T:5d} tokens: wgmma {row['wgmma']:7.1f} ms  mma {row['mma']:7.1f} ms  torch "
                  f"{row['torch']:7.1f} ms", flush=True)
        out["maps_cached"] = {name: len(g.tensormaps) for name, g in pre["wgmma"].gemm.items()}
    out["ok"] = ok
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "prefill-wgmma.json").write_text(json.dumps(out, indent=1, default=str))
    print("agreement ok" if ok else "AGREEMENT FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
