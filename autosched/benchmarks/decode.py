"""Decode benchmark and the transformer seed's experiments, one process, one JSON.

    python -m autosched.benchmarks.decode [--models stories15M,stories42M,llama2-7b] [--quick]

Models are seeded random weights at the seed's checkpoint sizes and Llama-2-7B's shape (no
checkpoint can be downloaded here).  Sections:

  throughput   tokens/s at batch 1 per model and weight format, the weight bytes one step reads and
               the bandwidth limit beside it (weight bytes / the device-to-device copy bandwidth
               measured in this run, bytes read + written)
  quality      KL(fp32 || format) of next-token distributions, teacher-forced over a fixed token
               sequence, per format (the same sequence and model for every format)
  matmul       per matmul shape of the 7B model: tuned vs default q4f16_1 GEMV vs cuBLAS fp16,
               each as a CUDA graph over the layers' weight copies (what a step sees)
  attention    our decode attention vs torch SDPA over context length (7B heads, fp16)
  baselines    HF transformers eager (GPU fp16 and fp32, CPU fp32 = ATen C++) and torch.compile
  hf_check     max |logit diff| of the fp32 engine vs transformers LlamaForCausalLM (fp32)
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from autosched.benchmarks.common import tune_all, write_results
from autosched.build import Builder
from autosched.database import Database
from autosched.device import query
from autosched.engine.engine import Engine, matmul_shapes, rope_table
from autosched.engine.matmul import Matmul
from autosched.engine.verify import time_graph
from autosched.engine.weights import as_torch, classifier, fused, random_weights_torch
from autosched.identity import build_id
from autosched.launch import LoadedKernel
from autosched.measure.recording import find_recording
from autosched.models.hf import hf_config, hf_state_dict
from autosched.models.llama2c import SEED_CONFIGS, LlamaConfig
from autosched.models.quantize import FORMATS  # noqa: E402  (one list of weight formats)
from autosched.runtime import ptr
from autosched.templates import decode as dk
from autosched.workloads import GemvQ4F16

# torch, cuda.core and transformers are imported inside functions: optional / slow to import, a CPU install
# runs without them; GpuRunner and templates_for are imported inside functions too: looked up at call time, as
# tests replace them on their modules

PROMPT = [1, 450, 4996, 17354, 1701, 432, 17204, 975]


def _events(torch):
    return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def copy_bandwidth_gbps(torch, nbytes: int = 1 << 30, reps: int = 10) -> float:
    """(read + written bytes) / time of a device-to-device copy, median of `reps`."""
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    times = []
    for _ in range(reps):
        a, b = _events(torch)
        a.record()
        dst.copy_(src)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    del src, dst
    return 2 * nbytes / float(np.median(times)) / 1e9


def engine_tokens_per_s(torch, eng, steps: int) -> dict:
    """Greedy decode on the device (graph replays back to back) after a short prompt."""
    eng.reset()
    for t in PROMPT:
        eng.step(t)
    eng.decode(4)                        # warm
    torch.cuda.synchronize()
    a, b = _events(torch)
    a.record()
    eng.decode(steps)
    b.record()
    b.synchronize()
    s = a.elapsed_time(b) / 1e3
    return {"steps": steps, "seconds": s, "tokens_per_s": steps / s, "us_per_token": s / steps * 1e6,
            "positions": [len(PROMPT) + 4, eng.pos]}


def kl_vs_reference(ref_logits: np.ndarray, logits: np.ndarray) -> float:
    """Mean over positions of KL(softmax(ref) || softmax(logits))."""
    def logp(x):
        x = x - x.max(axis=1, keepdims=True)
        return x - np.log(np.exp(x).sum(axis=1, keepdims=True))
    lp, lq = logp(ref_logits.astype(np.float64)), logp(logits.astype(np.float64))
    return float(np.mean(np.sum(np.exp(lp) * (lp - lq), axis=1)))


def teacher_forced_logits(eng, tokens) -> np.ndarray:
    eng.reset()
    return np.stack([eng.step(t).cpu().numpy() for t in tokens])


def hf_model(torch, cfg: LlamaConfig, weights: dict, dtype, device):
    import transformers
    conf = transformers.LlamaConfig(**{k: v for k, v in hf_config(cfg).items() if k != "torch_dtype"})
    conf._attn_implementation = "eager"
    with torch.device(device):
        model = transformers.LlamaForCausalLM._from_config(conf, torch_dtype=dtype)
    sd = {k: v.to(device=device, dtype=dtype) for k, v in hf_state_dict(cfg, weights).items()}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [m for m in missing if "rotary" not in m and not (cfg.shared_classifier and m == "lm_head.weight")]
    if missing or unexpected:
        raise RuntimeError(f"HF model: missing {missing}, unexpected {unexpected}")
    if cfg.shared_classifier:
        model.tie_weights()
    return model.eval()


def hf_tokens_per_s(torch, model, steps: int, device) -> float:
    """Eager decode with transformers' KV cache, greedy, one token a forward."""
    sync = torch.cuda.synchronize if device != "cpu" else (lambda: None)
    with torch.no_grad():
        ids = torch.tensor([PROMPT], device=device)
        out = model(input_ids=ids, use_cache=True)
        past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
        for _ in range(3):                   # warm
            out = model(input_ids=nxt, past_key_values=past, use_cache=True)
            past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
        sync()
        t0 = time.perf_counter()
        for _ in range(steps):
            out = model(input_ids=nxt, past_key_values=past, use_cache=True)
            past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
        nxt.item()
        sync()
        return steps / (time.perf_counter() - t0)


def compiled_tokens_per_s(torch, model, steps: int) -> float:
    """torch.compile over transformers' static-cache generate (default mode: "reduce-overhead"'s
    CUDA graphs fail inside generate with this torch/transformers pair, outputs overwritten)."""
    model.generation_config.cache_implementation = "static"
    model.forward = torch.compile(model.forward, fullgraph=True)
    ids = torch.tensor([PROMPT], device="cuda")
    kw = dict(do_sample=False, min_new_tokens=steps, max_new_tokens=steps, pad_token_id=0)
    model.generate(ids, **kw)                 # compiles
    model.generate(ids, **kw)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    model.generate(ids, **kw)
    torch.cuda.synchronize()
    return steps / (time.perf_counter() - t0)


def matmul_rows(torch, cfg, w, builder, info, eng, copies: int = 8, count: int = 32) -> list[dict]:
    """Per matmul of the q4f16_1 engine `eng`: the GEMV config it serves (tuned, then verified in
    a graph and in its step) vs the rule-based default vs cuBLAS fp16, each a CUDA graph of `count`
    launches over `copies` layers' weights (more bytes than the L2); `verified` lists each
    candidate's time in the engine's isolated-graph check and in its step."""
    from cuda.core import Stream

    from autosched.registry import templates_for
    rows = []
    names = ("qkv", "o", "gate_up", "down", "cls")
    step_us = {name: {json.dumps(c.config, sort_keys=True): us for c, us in timed}
               for name, timed in eng.step_verification.items() if name in names}   # not attn_prefetch's
    for name in names:
        def mat(layer):
            if name == "cls":
                return as_torch(classifier(w), "cuda")
            return fused(lambda n: as_torch(w[n][layer], "cuda"))[name]
        mats = [mat(i % cfg.n_layers) for i in range(copies)]
        n, k = mats[0].shape
        wl = GemvQ4F16(n, k)
        served = Matmul(name, "q4f16_1", n, k, "half", "half", info, choice=eng.mm[name].choice)
        served_pdl = Matmul(name, "q4f16_1", n, k, "half", "half", info, choice=eng.mm[name].choice, pdl=True)
        dflt = Matmul(name, "q4f16_1", n, k, "half", "half", info,
                      config=templates_for(wl)[0].default_config(wl, info))
        for m in (served, served_pdl, dflt):
            m.load(builder)
            for x_ in mats:
                m.add_layer(x_)
        dense = [x_.half() for x_ in mats]
        del mats
        x = torch.randn(k, device="cuda").half()
        out = torch.empty(n, device="cuda", dtype=torch.float16)

        def launches(m):
            return lambda i: m(Stream.from_handle(torch.cuda.current_stream().cuda_stream), i, out, x)

        row = {"matmul": name, "N": n, "K": k, "served_config": served.choice.config,
               "served_source": served.choice.source, "served_us": time_graph(launches(served), copies, count),
               "served_pdl_us": time_graph(launches(served_pdl), copies, count),
               "default_config": dflt.choice.config, "default_us": time_graph(launches(dflt), copies, count),
               "cublas_fp16_us": time_graph(lambda i: torch.mv(dense[i], x, out=out), copies, count),
               "q4_bytes": served.nbytes(0),
               "verified": [{"config": c.config, "source": c.source, "tuning_us": c.median_us, "graph_pdl_us": us,
                             "step_us": step_us.get(name, {}).get(json.dumps(c.config, sort_keys=True))}
                            for c, us in eng.verification[name][1]]}
        row["served_gbps"] = row["q4_bytes"] / row["served_us"] / 1e3
        row["served_pdl_gbps"] = row["q4_bytes"] / row["served_pdl_us"] / 1e3
        rows.append(row)
        torch.cuda.empty_cache()
    return rows


def tune_model_gemvs(cfg: LlamaConfig, db, builder, trials: int, log=print) -> dict:
    """Tune the q4f16_1 GEMV of every matmul shape of `cfg` until the database (or a same-device
    recording) holds `trials` measured configs for it (model-guided search; resumes)."""
    from autosched.measure.gpu import GpuRunner
    from autosched.registry import templates_for
    info = query(0)
    todo = []
    for n, k in sorted(set(matmul_shapes(cfg).values())):
        wl = GemvQ4F16(n, k)
        t = templates_for(wl)[0]
        in_db = len(db.measured(wl.key, info.key, t.family, build=build_id(t)))   # stale rows are not tuning
        rec = find_recording(wl.key, t.family)
        in_rec = len(rec.entries) if rec is not None and rec.device.key == info.key else 0
        if max(in_db, in_rec) < trials:
            todo.append((wl, trials))     # the tuner counts the database's rows against it
    out = {}
    if not todo:
        return out
    with GpuRunner() as runner:
        for wl, budget in todo:
            res = tune_all([wl], templates_for(wl)[0], runner, db, builder, strategy="model", trials=budget,
                           time_per_shape_s=None, log=log)
            out.update({key: {"trials": r.total_trials, "best_us": r.best.median_us if r.best else None,
                              "tuning_s": r.total_tuning_s} for key, r in res.items()})
    return out


def attention_rows(torch, info, builder, contexts=(128, 512, 1024, 2048, 4096)) -> list[dict]:
    """One layer's decode attention (7B heads: 32 x 128, fp16) at context length L: ours (one
    block a head, and split-KV as the engine serves it) vs torch SDPA over the same cache, each
    timed inside a CUDA graph (the launch cost a step pays, not Python's)."""
    import torch.nn.functional as F

    from cuda.core import Stream
    cfg = SEED_CONFIGS["llama2-7b"]
    H, hs, S = cfg.n_heads, cfg.head_size, cfg.seq_len
    qkv = torch.randn(3 * H * hs, device="cuda").half()
    kc = torch.randn(S, H * hs, device="cuda").half()
    vc = torch.randn_like(kc)
    out = torch.empty(H * hs, device="cuda", dtype=torch.float16)
    cs = rope_table(cfg, "cuda")
    pos = torch.zeros(1, dtype=torch.int32, device="cuda")
    splits_long = dk.attention_splits(H, S, info.sm_count)
    part = torch.empty(H * splits_long * (hs + 2), device="cuda")
    count = torch.zeros(H, dtype=torch.int32, device="cuda")
    kernels = {s: LoadedKernel(dk.rope_attention_spec(H, hs, s, "half", info.arch), builder)
               for s in (1, splits_long)}

    def ours(splits):
        def f():
            st = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
            kernels[splits](st, ptr(out), ptr(part), ptr(count), ptr(qkv), ptr(kc), ptr(vc), ptr(pos), ptr(cs),
                            np.int32(H), np.int32(H * hs), np.int32(hs), np.int32(1), np.uint64(0), np.int64(0))
        return f

    def time_it(f):
        return time_graph(lambda i: f(), copies=1, count=20)

    rows = []
    for L in contexts:
        pos.fill_(L - 1)
        q = torch.randn(1, H, 1, hs, device="cuda").half()
        k = kc[:L].view(L, H, hs).transpose(0, 1)[None]
        v = vc[:L].view(L, H, hs).transpose(0, 1)[None]
        rows.append({"context": L, "ours_us": time_it(ours(1)), f"ours_split{splits_long}_us": time_it(ours(splits_long)),
                     "sdpa_us": time_it(lambda: F.scaled_dot_product_attention(q, k, v))})
    return rows


def run(models=("llama2-7b", "stories15M", "stories42M"), formats=FORMATS, out_dir="bench/results", quick=False,
        tune_trials: int = 64, db_path=None, log=print, step: str = "auto") -> Path:
    import torch
    info = query(0)
    bw = copy_bandwidth_gbps(torch)
    log(f"copy bandwidth {bw:.0f} GB/s")
    rows, extra = [], {"copy_gbps": bw}
    summary = {}
    with Builder() as builder, Database(db_path) as db:
        for mname in models:
            cfg = SEED_CONFIGS[mname]
            w = random_weights_torch(cfg, 1234, "cuda")
            steps = 64 if mname == "llama2-7b" else 200
            ref = None
            if "q4f16_1" in formats and tune_trials:
                # a 7B step spends ~75% of its time in these GEMVs: tune them harder
                trials = tune_trials if cfg.n_params() < 10**9 else 4 * tune_trials
                extra.setdefault("tuning", {}).update(tune_model_gemvs(cfg, db, builder, trials, log))
            for fmt in formats:
                t0 = time.perf_counter()
                # times afresh, stores; step="auto" times the dataflow step too and serves the faster
                eng = Engine(cfg, w, fmt, builder=builder, db=db, reverify=True, step=step if fmt in ("fp16", "q4f16_1") else "kernels")
                build_s = time.perf_counter() - t0
                tp = engine_tokens_per_s(torch, eng, 16 if quick else steps)
                wb = eng.weight_bytes_per_token()
                limit = bw * 1e9 / wb
                row = {"model": mname, "format": fmt, **tp, "weight_bytes": wb, "bw_limit_tokens_per_s": limit,
                       "pct_of_bw_limit": 100 * tp["tokens_per_s"] / limit, "setup_s": build_s,
                       "matmuls": eng.describe()}
                # quality: teacher-forced over the greedy fp32 continuation
                if fmt == "fp32":
                    seq = eng.generate(PROMPT, 24)
                    ref = teacher_forced_logits(eng, seq)
                    extra.setdefault("quality_tokens", {})[mname] = seq
                    row["kl_vs_fp32"] = 0.0
                elif ref is not None:
                    row["kl_vs_fp32"] = kl_vs_reference(ref, teacher_forced_logits(eng, extra["quality_tokens"][mname]))
                log(f"{mname} {fmt}: {tp['tokens_per_s']:.1f} tok/s ({row['pct_of_bw_limit']:.0f}% of "
                    f"{limit:.0f}), KL {row.get('kl_vs_fp32', float('nan')):.2e}")
                rows.append(row)
                if mname == "llama2-7b" and fmt == "q4f16_1" and not quick:
                    extra["matmul"] = matmul_rows(torch, cfg, w, builder, info, eng)
                if fmt == "q4f16_1" and not quick and eng.pdl:
                    # the same engine without programmatic dependent launch, for the record
                    del eng
                    torch.cuda.empty_cache()
                    eng = Engine(cfg, w, fmt, builder=builder, db=db, pdl=False, reverify=True, step="kernels")
                    row["no_pdl_tokens_per_s"] = engine_tokens_per_s(torch, eng, steps)["tokens_per_s"]
                if fmt == "fp32" and mname == "stories15M":
                    extra["hf_check"] = hf_check(torch, cfg, w, eng)
                del eng
                torch.cuda.empty_cache()
            extra.setdefault("baselines", []).extend(baselines(torch, mname, cfg, w, quick, log))
            del w
            torch.cuda.empty_cache()
            Path(out_dir).mkdir(parents=True, exist_ok=True)     # what is done so far survives a kill
            (Path(out_dir) / "decode-partial.json").write_text(json.dumps({"rows": rows, "extra": extra}, default=str))
        if not quick:
            extra["attention"] = attention_rows(torch, info, builder)
    q4 = [r for r in rows if r["model"] == "llama2-7b" and r["format"] == "q4f16_1"]
    hf16 = [b for b in extra["baselines"] if b["model"] == "llama2-7b" and b["impl"] == "hf-eager-fp16-gpu"]
    if q4:
        summary["q4_7b_pct_of_bw_limit"] = q4[0]["pct_of_bw_limit"]
        summary["q4_7b_tokens_per_s"] = q4[0]["tokens_per_s"]
        if hf16 and "tokens_per_s" in hf16[0]:
            summary["speedup_vs_hf_eager_fp16_7b"] = q4[0]["tokens_per_s"] / hf16[0]["tokens_per_s"]
    if "hf_check" in extra:
        summary["fp32_logits_max_abs_diff"] = extra["hf_check"]["max_abs_diff"]
    return write_results("decode", info, rows, summary, out_dir, extra=extra)


def hf_check(torch, cfg, w, eng) -> dict:
    try:
        model = hf_model(torch, cfg, w, torch.float32, "cuda")
    except ImportError as e:
        return {"error": f"transformers not installed: {e}"}
    tokens = PROMPT + [int(t) for t in torch.randint(0, cfg.vocab_size, (24,), generator=torch.Generator().manual_seed(5))]
    with torch.no_grad():
        hf = model(torch.tensor([tokens], device="cuda")).logits[0].float().cpu().numpy()
    ours = teacher_forced_logits(eng, tokens)
    greedy_hf = model.generate(torch.tensor([PROMPT], device="cuda"), do_sample=False, max_new_tokens=32,
                               min_new_tokens=32, pad_token_id=0)[0].tolist()
    greedy_ours = eng.generate(PROMPT, 32)
    del model
    return {"tokens": len(tokens), "max_abs_diff": float(np.abs(ours - hf).max()),
            "max_abs_logit": float(np.abs(hf).max()), "argmax_equal": bool((ours.argmax(1) == hf.argmax(1)).all()),
            "greedy_identical": greedy_hf == greedy_ours}


def baselines(torch, mname, cfg, w, quick, log) -> list[dict]:
    out = []
    runs = [("hf-eager-fp16-gpu", torch.float16, "cuda")]
    if mname != "llama2-7b":
        runs += [("hf-eager-fp32-gpu", torch.float32, "cuda"), ("hf-eager-fp32-cpu-aten", torch.float32, "cpu")]
    if mname == "stories15M":      # compiling takes minutes a model: the smallest shows the point
        runs.append(("torch-compile-fp16-gpu", torch.float16, "cuda"))
    for impl, dtype, device in runs:
        row = {"model": mname, "impl": impl}
        try:
            wd = w if device == "cuda" else {k: v.cpu() for k, v in w.items()}
            model = hf_model(torch, cfg, wd, dtype, device)
            steps = 8 if quick else (32 if (mname == "llama2-7b" or device == "cpu") else 64)
            if impl.startswith("torch-compile"):
                if quick:
                    continue
                row["tokens_per_s"] = compiled_tokens_per_s(torch, model, steps)
            else:
                row["tokens_per_s"] = hf_tokens_per_s(torch, model, steps, device)
            del model
            log(f"{mname} {impl}: {row['tokens_per_s']:.1f} tok/s")
        except Exception as e:        # a baseline that cannot run is reported, not fatal
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            log(f"{mname} {impl}: failed: {row['error']}")
        out.append(row)
        torch.cuda.empty_cache()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="llama2-7b,stories15M,stories42M",
                    help=f"comma-separated, from {', '.join(SEED_CONFIGS)}")
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--quick", action="store_true", help="few steps, no matmul/attention sections")
    ap.add_argument("--tune-trials", type=int, default=64,
                    help="measured configs to have per q4f16_1 GEMV shape of each model (4x for a 7B; 0: no "
                         "tuning, serve what the database and recordings have)")
    ap.add_argument("--db", default=None, help="tuning database (default: the user's)")
    ap.add_argument("--step", choices=("kernels", "dataflow", "auto"), default="auto",
                    help="the engines' decode step (auto, the engine's default: the faster of the per-kernel and "
                         "dataflow steps, timed in the step; their times are in each row's matmuls lines)")
    a = ap.parse_args(argv)
    path = run(tuple(a.models.split(",")), tuple(a.formats.split(",")), a.out, a.quick, a.tune_trials, a.db,
               step=a.step)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
