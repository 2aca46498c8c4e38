"""The tensor-core prefill attention (kernels/prefill_attention_tc.cuh) on small ragged cases, for
compute-sanitizer; each output checked against the CUDA-core kernel's (prefill_attention) on the same
inputs, the cache NaN past the prompt (a read there would show as NaN or as a memcheck error):

    compute-sanitizer --tool memcheck python scripts/sanitize_prefill_attn.py
    compute-sanitizer --tool racecheck python scripts/sanitize_prefill_attn.py

Cases: head sizes 32 and 128, query tiles 64 and 128, GQA ratio 4, prompts of 1 and 77 tokens after a
context of 5 (a ragged last query tile, a ragged last key tile, a warp wholly past the prompt).
"""
import sys

import numpy as np


def main() -> int:
    import torch
    from cuda.core import Device, Stream

    from autosched.build import Builder
    from autosched.device import query
    from autosched.engine.engine import rope_table
    from autosched.launch import LoadedKernel
    from autosched.models.llama2c import LlamaConfig
    from autosched.runtime import ptr
    from autosched.templates import prefill as pk
    Device(0).set_current()
    info = query(0)
    s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    i32 = np.int32
    bad = 0
    with Builder() as b:
        for hs in (32, 128):
            n_heads, n_kv = 8, 2
            cfg = LlamaConfig(dim=n_heads * hs, hidden_dim=64, n_layers=1, n_heads=n_heads, n_kv_heads=n_kv,
                              vocab_size=64, seq_len=160)
            q_dim, kv_dim = n_heads * hs, n_kv * hs
            cs = rope_table(cfg, "cuda")
            ref = LoadedKernel(pk.attention_spec(hs, info.arch), b)
            for T, pos0 in ((1, 0), (77, 5)):
                g = torch.Generator(device="cuda").manual_seed(T)
                qkv = torch.randn((T, q_dim + 2 * kv_dim), device="cuda", generator=g).half()
                kc = torch.full((cfg.seq_len, kv_dim), float("nan"), device="cuda").half()
                vc = kc.clone()
                kc[:pos0 + T] = torch.randn((pos0 + T, kv_dim), device="cuda", generator=g).half()
                vc[:pos0 + T] = torch.randn((pos0 + T, kv_dim), device="cuda", generator=g).half()
                args = (ptr(qkv), ptr(kc), ptr(vc), ptr(cs), i32(pos0), i32(T), i32(n_heads), i32(kv_dim),
                        i32(n_heads // n_kv))
                want = torch.full((T, q_dim), float("nan"), device="cuda").half()
                ref.launch(s, pk.attention_grid(T, n_heads), ptr(want), *args)
                for bq in pk.TC_BQS:
                    k = LoadedKernel(pk.tc_attention_spec(hs, info.arch, bq), b)
                    out = torch.full((T, q_dim), float("nan"), device="cuda").half()
                    k.launch(s, pk.attention_grid(T, n_heads, bq), ptr(out), *args)
                    torch.cuda.synchronize()
                    err = float((out.float() - want.float()).abs().max())
                    ok = bool(torch.isfinite(out).all()) and err < 5e-3
                    bad += not ok
                    print(f"prefill_attention_tc<{hs}, {bq}> T={T} pos0={pos0}: max |diff| vs CUDA cores {err:.1e} "
                          f"{'ok' if ok else 'WRONG'}", flush=True)
    print("all ok" if not bad else f"{bad} WRONG", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
