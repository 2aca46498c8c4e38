"""On an H100: the batched prefill's attention on tensor cores (prefill_attention_tc) vs CUDA cores
(prefill_attention) vs torch, Llama-2-7B-shaped fp16 (random weights).  One engine, built with the
switch off; a second BatchedPrefill built with AUTOSCHED_PREFILL_TC_ATTN=1 is swapped in for "on".

  1. one layer's attention alone (32 heads of 128) at 512 and 2048 tokens: CUDA cores, tensor cores with
     query tiles of 64 and of 128, torch SDPA (is_causal); us a call and TFLOP/s of the causal FLOPs
     (4 hs heads T(T+1)/2), the tensor-core outputs' max |diff| against the CUDA-core kernel's
  2. agreement: logits at every position of a 64-token prompt, on vs off; the last position vs torch
  3. time to first token of 512- and 2048-token prompts: off, on, torch (median of 3)

    python scripts/prefill_attn_timing.py [--out DIR]       # JSON prefill-tc-attn.json under DIR
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

PROMPTS = (512, 2048)


def main() -> int:
    import torch
    import torch.nn.functional as F
    from cuda.core import Stream

    from autosched.benchmarks.prefill import torch_prefill, ttft_s
    from autosched.build import Builder
    from autosched.engine.engine import Engine
    from autosched.engine.prefill import BatchedPrefill
    from autosched.engine.weights import random_weights_torch
    from autosched.models.llama2c import SEED_CONFIGS
    from autosched.runtime import ptr
    from autosched.templates import prefill as pk
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    out: dict = {"attention_us": {}, "ttft_ms": {}}
    cfg = SEED_CONFIGS["llama2-7b"]
    hs, H = cfg.head_size, cfg.n_heads
    sync = torch.cuda.synchronize
    t0 = time.perf_counter()
    os.environ.pop("AUTOSCHED_PREFILL_TC_ATTN", None)
    with Builder() as builder:
        w = random_weights_torch(cfg, 0, "cuda")
        eng = Engine(cfg, w, "fp16", builder=builder, graphs=False)
        del w
        os.environ["AUTOSCHED_PREFILL_TC_ATTN"] = "1"
        pre = {"off": eng.prefiller, "on": BatchedPrefill(cfg, "fp16", eng.info)}
        del os.environ["AUTOSCHED_PREFILL_TC_ATTN"]
        assert not pre["off"].tc_attention and pre["on"].tc_attention
        pre["on"].load(builder)
        print(f"engine + kernels: {time.perf_counter() - t0:.0f} s", flush=True)
        print(pre["on"].describe()[-1], flush=True)
        s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
        i32 = np.int32

        # 1. the attention alone, one layer
        kernels = {"cuda_cores": (pre["off"].k["attn"], pk.ATTENTION_BQ),
                   **{f"tc_bq{bq}": (pre["on"].k[f"attn_tc{bq}"], bq) for bq in pk.TC_BQS}}
        for T in PROMPTS:
            qkv = torch.randn((T, 3 * cfg.dim), device="cuda").half()
            kc, vc = torch.randn((T, cfg.kv_dim), device="cuda").half(), torch.randn((T, cfg.kv_dim), device="cuda").half()
            args = (ptr(qkv), ptr(kc), ptr(vc), ptr(eng.rope_cs), i32(0), i32(T), i32(H), i32(cfg.kv_dim), i32(1))
            outs, row = {}, {}
            for name, (k, bq) in kernels.items():
                o = torch.empty((T, cfg.dim), device="cuda", dtype=torch.float16)
                outs[name] = o
                run = lambda: [k.launch(s, pk.attention_grid(T, H, bq), ptr(o), *args) for _ in range(10)]  # noqa: E731
                run()
                row[name] = 1e6 * ttft_s(run, sync, 3) / 10
            q = qkv[:, :cfg.dim].view(T, H, hs).transpose(0, 1)[None]
            kt, vt = kc.view(T, H, hs).transpose(0, 1)[None], vc.view(T, H, hs).transpose(0, 1)[None]
            sdpa = lambda: [F.scaled_dot_product_attention(q, kt, vt, is_causal=True) for _ in range(10)]  # noqa: E731
            sdpa()
            row["torch_sdpa"] = 1e6 * ttft_s(sdpa, sync, 3) / 10
            flop = 4 * hs * H * T * (T + 1) / 2
            row["tflops"] = {n: flop / (us * 1e-6) / 1e12 for n, us in row.items() if isinstance(us, float)}
            row["tc_max_diff_vs_cuda_cores"] = {n: float((outs[n].float() - outs["cuda_cores"].float()).abs().max())
                                                for n in outs if n != "cuda_cores"}
            row["rule_bq"] = pk.tc_attention_bq(T, H, eng.info.sm_count)
            out["attention_us"][T] = row
            print(f"attention T={T:5d}: CUDA cores {row['cuda_cores']:8.1f} us  TC bq64 {row['tc_bq64']:8.1f} us  "
                  f"TC bq128 {row['tc_bq128']:8.1f} us  SDPA {row['torch_sdpa']:8.1f} us  (rule: bq{row['rule_bq']}; "
                  f"max diff {max(row['tc_max_diff_vs_cuda_cores'].values()):.1e})", flush=True)
        ok = all(d < 1e-2 for r in out["attention_us"].values() for d in r["tc_max_diff_vs_cuda_cores"].values())

        # 2. agreement at 64 tokens, every position
        toks = list(range(1, 65))
        got = {}
        for name, p in pre.items():
            eng.prefiller = p
            got[name] = eng.prefill(toks, mode="batched", all_logits=True).float().cpu().numpy()
        ref = torch_prefill(eng, toks).float().cpu().numpy()
        rel = lambda u, v: float(np.abs(u - v).max() / np.abs(v).max())   # noqa: E731
        out["agreement_64"] = {"on_vs_off": rel(got["on"], got["off"]), "on_last_vs_torch": rel(got["on"][-1], ref)}
        print(f"64 tokens: on vs off {out['agreement_64']['on_vs_off']:.2e}, last position vs torch "
              f"{out['agreement_64']['on_last_vs_torch']:.2e}", flush=True)
        ok = ok and max(out["agreement_64"].values()) < 2e-2

        # 3. time to first token
        for T in PROMPTS:
            tk = [int(t) for t in np.random.default_rng(T).integers(0, cfg.vocab_size, T)]
            row = {}
            for name, p in pre.items():
                eng.prefiller = p
                eng.prefill(tk, mode="batched")
                row[name] = 1e3 * ttft_s(lambda: eng.prefill(tk, mode="batched"), sync, 3)
            with torch.no_grad():
                torch_prefill(eng, tk)
                row["torch"] = 1e3 * ttft_s(lambda: torch_prefill(eng, tk), sync, 3)
            out["ttft_ms"][T] = row
            print(f"prefill {T:5d} tokens: TC attention on {row['on']:7.1f} ms  off {row['off']:7.1f} ms  torch "
                  f"{row['torch']:7.1f} ms", flush=True)
    out["ok"] = ok
    out["device"] = eng.info.key
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "prefill-tc-attn.json").write_text(json.dumps(out, indent=1, default=str))
    print("agreement ok" if ok else "AGREEMENT FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
