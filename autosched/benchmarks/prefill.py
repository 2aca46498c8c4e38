"""Prefill benchmark (issue 16 item 8): time to first token of a Llama-2-7B-shaped model (seeded random
weights) for prompts of 128, 512 and 2048 tokens, in fp16 and q4f16_1:

  batched    Engine.prefill(mode="batched"): each layer over the whole prompt (engine/prefill.py)
  stepwise   Engine.prefill(mode="stepwise"): one decode step a token (CUDA graph replays)
  torch      the same fp16 matrices through torch: cuBLAS GEMMs (torch.matmul) and
             F.scaled_dot_product_attention(is_causal=True), the same RoPE, norms and SwiGLU

Time to first token is wall time from the call to the last position's logits on the device
(synchronized), median of `reps` runs (stepwise: one run at 2048 tokens, it takes seconds).  The
torch baseline multiplies by the fp16 engine's own matrices (norm weights folded in, as ours), so
both read the same weights; q4f16_1 rows compare against that fp16 torch run.  Full runs also time
short prompts (2..16 tokens) both ways: where batching starts to pay (engine/prefill.STEPWISE_UP_TO).

    python -m autosched.benchmarks.prefill [--quick]        # on the GPU

JSON: bench/results/prefill-<device>-<date>.json; summary key prefill_2048_speedup_vs_stepwise
(fp16, stepwise / batched), also written into the summary of the newest dynamic-*.json of the same
device in the output folder (benchmarks/dynamic.py leaves it None).
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import numpy as np

from autosched.benchmarks.common import write_results
from autosched.build import Builder
from autosched.device import query
from autosched.engine.engine import Engine
from autosched.engine.weights import random_weights_torch
from autosched.models.llama2c import SEED_CONFIGS

# torch is imported inside functions: optional / slow to import, a CPU install runs without it

PROMPTS = (128, 512, 2048)
SHORT = (2, 4, 8, 16)


def ttft_s(run, sync, reps: int) -> float:
    """Median wall seconds of run() up to sync()."""
    times = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def torch_prefill(eng, tokens):
    """The prompt through the fp16 engine's matrices with torch ops: cuBLAS and SDPA; the last
    position's logits (float)."""
    import torch
    import torch.nn.functional as F
    c = eng.cfg
    hs, H, KV = c.head_size, c.n_heads, c.n_kv_heads
    q_dim, kv_dim = H * hs, KV * hs
    T = len(tokens)
    tok = torch.as_tensor(tokens, device=eng.dev)
    cs = eng.rope_cs[:T]
    cos, sin = cs[None, :, :, 0], cs[None, :, :, 1]            # (1, T, hs/2)

    def norm(x):
        return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + c.norm_eps)).half()

    def rope(a):                                              # (heads, T, hs), pairs (2j, 2j+1)
        a0, a1 = a[..., 0::2].float(), a[..., 1::2].float()
        return torch.stack([a0 * cos - a1 * sin, a0 * sin + a1 * cos], dim=-1).flatten(-2).half()

    W = lambda name, layer: eng.mm[name].layers[layer]["w"]   # noqa: E731
    x = eng.embedding[tok]
    for layer in range(c.n_layers):
        qkv = norm(x) @ W("qkv", layer).t()
        q = rope(qkv[:, :q_dim].view(T, H, hs).transpose(0, 1))
        k = rope(qkv[:, q_dim:q_dim + kv_dim].view(T, KV, hs).transpose(0, 1))
        v = qkv[:, q_dim + kv_dim:].view(T, KV, hs).transpose(0, 1)
        if KV != H:
            k, v = k.repeat_interleave(H // KV, 0), v.repeat_interleave(H // KV, 0)
        att = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=True)[0]
        x = x + (att.transpose(0, 1).reshape(T, q_dim) @ W("o", layer).t()).float()
        gu = norm(x) @ W("gate_up", layer).t()
        h = F.silu(gu[:, 0::2]) * gu[:, 1::2]
        x = x + (h @ W("down", layer).t()).float()
    return (norm(x[-1:]) @ W("cls", 0).t()).float()[0]


def measure(eng, prompts, reps: int, torch_ref=None, short=()) -> list[dict]:
    """Rows: per prompt length, batched / stepwise / torch seconds to the first token."""
    import torch
    sync = torch.cuda.synchronize
    rng = np.random.default_rng(0)
    rows = []
    for T in [*short, *prompts]:
        tokens = [int(t) for t in rng.integers(0, eng.cfg.vocab_size, T)]
        eng.prefill(tokens, mode="batched")                  # warm: allocations, launch configs per grid
        row = {"format": eng.fmt, "tokens": T, "short": T in short and T not in prompts,
               "batched_s": ttft_s(lambda: eng.prefill(tokens, mode="batched"), sync, reps),
               "stepwise_s": ttft_s(lambda: eng.prefill(tokens, mode="stepwise"), sync, 1 if T >= 1024 else reps)}
        if torch_ref is not None and T in prompts:
            with torch.no_grad():
                torch_ref(tokens)
                row["torch_s"] = ttft_s(lambda: torch_ref(tokens), sync, reps)
        row["speedup_vs_stepwise"] = row["stepwise_s"] / row["batched_s"]
        if "torch_s" in row:
            row["vs_torch"] = row["torch_s"] / row["batched_s"]
        rows.append(row)
    return rows


def summarize(rows: list[dict]) -> dict:
    def get(fmt, T, key):
        return next((r.get(key) for r in rows if r["format"] == fmt and r["tokens"] == T and not r["short"]), None)
    out = {"prefill_2048_speedup_vs_stepwise": get("fp16", 2048, "speedup_vs_stepwise"),
           "prefill_2048_q4f16_1_speedup_vs_stepwise": get("q4f16_1", 2048, "speedup_vs_stepwise"),
           "prefill_2048_vs_torch": get("fp16", 2048, "vs_torch"),
           "bars": {"prefill_2048_speedup_vs_stepwise": 20.0}}
    for fmt in sorted({r["format"] for r in rows}):
        wins = sorted(r["tokens"] for r in rows if r["format"] == fmt and r["batched_s"] < r["stepwise_s"])
        out[f"batched_wins_from_{fmt}"] = wins[0] if wins else None
    return out


def merge_into_dynamic(out_dir, device_key: str, summary: dict, prefill_path) -> Path | None:
    """Write the prefill summary keys into the newest dynamic-*.json of `device_key` in out_dir
    (its prefill_2048_speedup_vs_stepwise, and which prefill file it came from)."""
    found = []
    for p in Path(out_dir).glob("dynamic-*.json"):
        try:
            d = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if d.get("device_key") == device_key:
            found.append((p.stat().st_mtime, p, d))
    if not found:
        return None
    _, p, d = max(found, key=lambda f: (f[0], str(f[1])))
    d.setdefault("summary", {})["prefill_2048_speedup_vs_stepwise"] = summary["prefill_2048_speedup_vs_stepwise"]
    d["summary"]["prefill_results"] = Path(prefill_path).name
    p.write_text(json.dumps(d, indent=1))
    return p


def run_benchmark(quick: bool = False, out_dir="bench/results", log=print) -> Path:
    import torch
    cfg = SEED_CONFIGS["llama2-7b"]
    prompts = (128, 2048) if quick else PROMPTS
    rows = []
    with Builder() as builder:
        w = random_weights_torch(cfg, 0, "cuda")
        for fmt in ("fp16",) if quick else ("fp16", "q4f16_1"):
            eng = Engine(cfg, w, fmt, builder=builder, verify=1)
            for line in eng.describe():
                log(line)
            ref = (lambda tokens, e=eng: torch_prefill(e, tokens)) if fmt == "fp16" else None
            if fmt == "fp16":                    # the torch path agrees with ours before it is timed
                toks = list(range(1, 65))
                a = torch_prefill(eng, toks).cpu().numpy()
                b = eng.prefill(toks, mode="batched").cpu().numpy()
                rel = float(np.abs(a - b).max() / np.abs(a).max())
                log(f"torch vs batched, 64 tokens: max |diff| / max |logit| = {rel:.2e}")
                if rel > 2e-2:
                    raise RuntimeError(f"the torch baseline and the batched prefill disagree ({rel:.2e})")
            new = measure(eng, prompts, 3 if quick else 5, ref, () if quick else SHORT)
            if fmt == "q4f16_1":                 # against the fp16 torch run on the same (unquantized) model
                for r in new:
                    t = next((x.get("torch_s") for x in rows if x["format"] == "fp16" and x["tokens"] == r["tokens"]), None)
                    if t:
                        r["torch_fp16_s"], r["vs_torch_fp16"] = t, t / r["batched_s"]
            for r in new:
                log(f"{fmt} {r['tokens']:5d} tokens: batched {1e3 * r['batched_s']:8.1f} ms, stepwise "
                    f"{1e3 * r['stepwise_s']:8.1f} ms ({r['speedup_vs_stepwise']:.1f}x)"
                    + (f", torch {1e3 * r['torch_s']:.1f} ms" if "torch_s" in r else ""))
            rows += new
            del eng
            torch.cuda.empty_cache()
        device = query(0)
    summary = summarize(rows)
    path = write_results("prefill", device, rows, summary, out_dir,
                         extra={"model": "llama2-7b (random weights)", "quick": quick})
    merged = merge_into_dynamic(out_dir, device.key, summary, path)
    log(f"wrote {path}" + (f"; summary key written into {merged}" if merged else "") + f": {summary}")
    return path


if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fp16 only, prompts of 128 and 2048")
    p.add_argument("--out", default="bench/results")
    a = p.parse_args()
    run_benchmark(a.quick, a.out)
