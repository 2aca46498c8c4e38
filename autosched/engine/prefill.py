"""Batched prefill: a prompt of T tokens through each layer at once (issue 16 item 8).

Per layer, with x the float residual (T, dim) and every other activation fp16 (T, width):

    xn   = x * rsqrt(mean(x^2) + eps)                      embed_rows_norm / add_norm_rows
    qkv  = xn . W_qkv^T                                    GEMM, M = T (the norm weight is in W_qkv)
    K, V of positions pos0 .. pos0+T-1 -> the KV cache     rope_kv_rows (RoPE on k), one pass
    att  = causal softmax(q K^T / sqrt(hs)) V              prefill_attention (RoPE on q on the fly), or
                                                           prefill_attention_tc (tensor cores; TC_ATTENTION_VERIFIED)
    y    = att . W_o^T;     x += y;  xn = norm(x)          GEMM, add_norm_rows
    gu   = xn . W_gu^T;     h = silu(gate) * up            GEMM, swiglu_rows
    y    = h . W_down^T;    x += y;  xn = norm(x)          GEMM, add_norm_rows

then logits = xn[last] . W_cls^T (or every row's, all_logits) and argmax_step on the last row, which
leaves the engine where T steps would have: pos = pos0 + T, the greedy next token, float logits.

The matrices are the decode step's own (engine/weights.py: norm weights folded in, gate and up
interleaved by row, so gu holds (gate j, up j) at columns (2j, 2j+1)).  The GEMMs run on
ops.HgemmDispatch: the DietCode dispatcher where a dynamic tuning artifact exists for the (N, K),
else the backend's rule-based configs by M; backend "auto" (hgemm_wgmma where it serves, sm_90 and
N % 8 == 0, else hgemm_dyn; ops.hgemm.WGMMA_IN_AUTO), "wgmma" (hgemm_wgmma) or "mma" (hgemm_dyn).  describe() says which, per matmul.

Weight formats.  fp16: the GEMM reads the step's fp16 matrices as they are.  q4f16_1 and int8:
each matrix is dequantized, layer by layer, into one fp16 scratch (N, K) (dequant_q4 reads the
packed layout of whatever GEMV config serves the step, layouts.py), then the fp16 GEMM runs.  Why a
scratch rather than a fused dequant-GEMM: the dequant writes and the GEMM reads 2 bytes a weight
once per prefill, ~26 GB for 7B, ~9 ms at 3 TB/s, while a 2048-token prefill does 27 TFLOP of
GEMM (~70 ms at a realistic 400 TFLOP/s): under 15% at 2048 tokens, and the same tuned fp16 GEMM
serves every format.  A fused kernel pays off only for short prompts, where the stepwise GEMV path
is the better answer anyway (STEPWISE_UP_TO).  fp32 engines prefill stepwise (the GEMM is fp16).

Attention.  prefill_attention (kernels/prefill.cuh) runs on CUDA cores, q in float; at 2048 tokens of
7B it is most of what the prefill spends beyond its GEMMs (94.3 ms against torch's 69.0 ms, the GEMMs
at parity, 2026-11-23).  prefill_attention_tc (kernels/prefill_attention_tc.cuh) is the same contract
on mma.sync, q rounded to fp16 after its RoPE; it serves the head sizes of templates/prefill.py
TC_HEAD_SIZES on sm_80 and later, with a query tile of 128 or 64 rows chosen per prompt length
(tc_attention_bq).  It serves only where tc_attention_on(): TC_ATTENTION_VERIFIED, or
AUTOSCHED_PREFILL_TC_ATTN in the environment for one process.  Off, the kernels and describe() are
what they were; on, describe() gains a line naming the attention kernel.
"""

from __future__ import annotations

import numpy as np

from autosched.engine.shapes import matmul_shapes
from autosched.knobs import env_switch
from autosched.launch import LoadedKernel
from autosched.ops.hgemm import HgemmDispatch
from autosched.runtime import ptr
from autosched.templates import prefill as pk

# torch is imported inside functions: optional / slow to import, a CPU install runs without it

PREFILL_FORMATS = ("fp16", "int8", "q4f16_1")
# Prompts up to this many tokens go stepwise under mode="auto" (estimates for the 7B model on an H100,
# not yet measured; benchmarks/prefill.py measures the crossover).  q4f16_1: a step takes ~2.2 ms
# (460 tokens/s), the batched path's per-layer dequant ~9 ms plus ~7 launches a layer, so batching wins
# from ~5 tokens.  int8: half the dequant traffic.  fp16: the GEMM streams the weights once, as one step
# does, so batching wins from 2 tokens.
STEPWISE_UP_TO = {"fp16": 1, "int8": 3, "q4f16_1": 4}

# THE switch of the tensor-core attention: off until `scripts/gpu_check.py prefill-tc-attn` passes on an
# H100 (its GPU tests against float64 and the stepwise path, memcheck and racecheck, and a 7B timing that
# beats the CUDA-core kernel); then flip it to True.  AUTOSCHED_PREFILL_TC_ATTN=1 (or 0) overrides it for
# one process, read when a BatchedPrefill is built.
TC_ATTENTION_VERIFIED = False


def tc_attention_on() -> bool:
    return env_switch("AUTOSCHED_PREFILL_TC_ATTN", TC_ATTENTION_VERIFIED)


def tc_attention_refuses(head_size: int, device) -> str | None:
    """Why prefill_attention_tc cannot serve this head size on this device, or None."""
    if tuple(device.cc) < (8, 0):
        return f"{device.arch}: mma.sync m16n8k16 with fp32 accumulation and cp.async need sm_80"
    return pk.tc_attention_refuses(head_size)


def scratch_shapes(cfg, T: int, fmt: str, all_logits: bool = False) -> dict[str, tuple[tuple[int, ...], str]]:
    """name -> (shape, dtype) of every buffer a prefill of T tokens allocates."""
    q_dim = cfg.n_heads * cfg.head_size
    out = {"tokens": ((T,), "int32"), "x": ((T, cfg.dim), "float32"), "xn": ((T, cfg.dim), "float16"),
           "qkv": ((T, q_dim + 2 * cfg.kv_dim), "float16"), "att": ((T, q_dim), "float16"),
           "y": ((T, cfg.dim), "float16"), "gu": ((T, 2 * cfg.hidden_dim), "float16"),
           "h": ((T, cfg.hidden_dim), "float16"), "logits": ((T if all_logits else 1, cfg.vocab_size), "float16")}
    if fmt in ("q4f16_1", "int8"):
        out["w16"] = ((max(n * k for n, k in matmul_shapes(cfg).values()),), "float16")
    return out


def scratch_bytes(cfg, T: int, fmt: str, all_logits: bool = False) -> int:
    size = {"int32": 4, "float32": 4, "float16": 2}
    return sum(int(np.prod(s)) * size[dt] for s, dt in scratch_shapes(cfg, T, fmt, all_logits).values())


def dequant_q4_host(a_q: np.ndarray, a_scale: np.ndarray, N: int, K: int, nibbles: int, ln: int, lk: int):
    """numpy twin of kernels/prefill.cuh dequant_q4, index for index: the packed (flat) words and
    scales of a q4f16_1 matrix in layout (nibbles, ln, lk) -> (N, K) float32 (q - 7) * scale."""
    a_q, a_scale = np.asarray(a_q).reshape(-1).view(np.uint32), np.asarray(a_scale).reshape(-1)
    words = K // 8
    r, wd = np.divmod(np.arange(N * words, dtype=np.int64), words)

    def packed(pr):
        return a_q[((pr // ln) * (words // lk) + wd // lk) * ln * lk + (pr % ln) * lk + wd % lk]

    s = a_scale[((r // ln) * (K // 32) + wd // 4) * ln + r % ln].astype(np.float32)
    if nibbles == 2:
        lo, hi = packed(r & ~1), packed((r & ~1) + 1)
    else:
        lo = hi = packed(r)
    out = np.empty((N * words, 8), dtype=np.float32)
    for e in range(8):
        nib = np.full_like(r, e if nibbles == 0 else e // 2 + 4 * (e % 2)) if nibbles != 2 else 4 * (r & 1) + e % 4
        word = lo if e < 4 else hi
        out[:, e] = (((word >> (4 * nib).astype(np.uint32)) & np.uint32(0xF)).astype(np.int32) - 7) * s
    return out.reshape(N, K)


class BatchedPrefill:
    """The kernels of an engine's batched prefill and the GEMM dispatcher of each matmul shape.
    Host-side construction (specs, dispatch plan, describe) needs no GPU; load() and run() do."""

    def __init__(self, cfg, fmt: str, device, db_path=None, results: dict | None = None, backend: str = "auto"):
        """results: optional name -> DynamicResult to serve instead of the artifacts found beside
        the database at db_path.  backend: the GEMMs' ("auto", "wgmma", "mma": ops.hgemm)."""
        if fmt not in PREFILL_FORMATS:
            raise ValueError(f"batched prefill serves {', '.join(PREFILL_FORMATS)}, not {fmt}")
        self.cfg, self.fmt, self.device = cfg, fmt, device
        arch = device.arch
        self.specs = {"embed": pk.embed_spec(arch), "add_norm": pk.add_norm_spec(arch), "swiglu": pk.swiglu_spec(arch),
                      "rope_kv": pk.rope_kv_spec(arch)}
        # the attention: the tensor-core kernel (both query tiles) where it is switched on and serves
        self.tc_asked = tc_attention_on()
        self.tc_refused = tc_attention_refuses(cfg.head_size, device) if self.tc_asked else None
        self.tc_attention = self.tc_asked and self.tc_refused is None
        self.tc_bq = None            # a fixed query tile (tests, timings); None: tc_attention_bq's rule
        if self.tc_attention:
            for bq in pk.TC_BQS:
                self.specs[f"attn_tc{bq}"] = pk.tc_attention_spec(cfg.head_size, arch, bq)
        else:
            self.specs["attn"] = pk.attention_spec(cfg.head_size, arch)
        if fmt == "q4f16_1":
            self.specs["dequant"] = pk.dequant_q4_spec(arch)
        elif fmt == "int8":
            self.specs["dequant"] = pk.dequant_int8_spec(arch)
        results = results or {}
        self.backend = backend
        self.gemm = {name: HgemmDispatch(n, k, device, result=results.get(name), db_path=db_path, m_max=cfg.seq_len,
                                         backend=backend)
                     for name, (n, k) in matmul_shapes(cfg).items()}
        self.k = None

    def all_specs(self) -> list:
        """Every kernel to build, once each (a micro-kernel's binary does not depend on N or K, so
        the matmuls share the ladder's)."""
        specs = [*self.specs.values(), *(s for g in self.gemm.values() for s in g.specs())]
        return list({s.source_hash: s for s in specs}.values())

    def describe(self) -> list[str]:
        how = {"fp16": "the step's fp16 weights", "q4f16_1": "q4f16_1 dequantized per layer into an fp16 scratch",
               "int8": "int8 dequantized per layer into an fp16 scratch"}[self.fmt]
        return [f"prefill (batched, {how}; stepwise up to {STEPWISE_UP_TO[self.fmt]} tokens):"] + \
            [f"  {name} {g.describe()}" for name, g in self.gemm.items()] + self._describe_attention()

    def _describe_attention(self) -> list[str]:
        """Nothing while the tensor-core switch is off (describe() as it was before that kernel)."""
        hs = self.cfg.head_size
        if not self.tc_asked:
            return []
        if not self.tc_attention:
            return [f"  attention prefill_attention<{hs}> (CUDA cores; the tensor-core kernel refuses: "
                    f"{self.tc_refused})"]
        return [f"  attention prefill_attention_tc<{hs}, BQ> (tensor cores, mma.sync m16n8k16; BQ 128 where "
                f"ceil(T/128) x {self.cfg.n_heads} heads >= 2 x {self.device.sm_count} SMs, else 64)"]

    def attention_kernel(self, T: int) -> tuple[str, int]:
        """(name in self.specs, query tile) of the attention kernel that serves a prompt of T tokens."""
        if self.tc_attention:
            bq = self.tc_bq or pk.tc_attention_bq(T, self.cfg.n_heads, self.device.sm_count)
            return f"attn_tc{bq}", bq
        return "attn", pk.ATTENTION_BQ

    # -- device side --------------------------------------------------------------------------
    def load(self, builder) -> None:
        self.k = {name: LoadedKernel(spec, builder) for name, spec in self.specs.items()}
        for g in self.gemm.values():
            g.load(builder)

    def _matmul(self, eng, name: str, layer: int, a, out, M: int, w16, stream) -> None:
        """out (M, N) = a (M, K) . W^T for the engine's matrix `name` of `layer` (dequantized first)."""
        mm = eng.mm[name]
        p = mm.layers[layer]
        i32 = np.int32
        if self.fmt == "fp16":
            w = p["w"]
        elif self.fmt == "int8":
            w = w16
            self.k["dequant"].launch(stream, pk.elementwise_grid(mm.n * mm.k, self.device.sm_count), ptr(w16),
                                     ptr(p["w"]), ptr(p["scale"]), i32(mm.n), i32(mm.k))
        else:
            w = w16
            nib, ln, lk = pk.q4_layout(mm.spec)
            self.k["dequant"].launch(stream, pk.elementwise_grid(mm.n * mm.k // 8, self.device.sm_count), ptr(w16),
                                     ptr(p["A_q"]), ptr(p["A_scale"]), i32(mm.n), i32(mm.k), i32(nib), i32(ln),
                                     i32(lk))
        self.gemm[name](stream, a, w, out, M)

    def run(self, eng, tokens, pos0: int = 0, all_logits: bool = False):
        """Feed `tokens` at positions pos0.. of engine `eng` (its KV cache, weights, rope table and
        argmax state); returns the fp16 logits, (T or 1, vocab)."""
        import torch
        c, k = self.cfg, self.k
        T = len(tokens)
        i32, f32 = np.int32, np.float32
        dev = eng.dev
        buf = {name: torch.empty(shape, dtype=getattr(torch, dt), device=dev)
               for name, (shape, dt) in scratch_shapes(c, T, self.fmt, all_logits).items()}
        buf["tokens"].copy_(torch.as_tensor(list(tokens), dtype=torch.int32))
        w16 = buf.get("w16")
        s = eng._stream()
        x, xn, dim, eps = ptr(buf["x"]), ptr(buf["xn"]), i32(c.dim), f32(c.norm_eps)
        q_dim = c.n_heads * c.head_size
        rows = (T, 1, 1)
        attn, bq = self.attention_kernel(T)
        k["embed"].launch(s, rows, x, xn, ptr(eng.embedding), ptr(buf["tokens"]), dim, eps)
        for layer in range(c.n_layers):
            kc, vc = eng.k_cache[layer], eng.v_cache[layer]
            self._matmul(eng, "qkv", layer, buf["xn"], buf["qkv"], T, w16, s)
            k["rope_kv"].launch(s, rows, ptr(kc), ptr(vc), ptr(buf["qkv"]), ptr(eng.rope_cs), i32(pos0), i32(q_dim),
                                i32(c.kv_dim), i32(c.head_size))
            k[attn].launch(s, pk.attention_grid(T, c.n_heads, bq), ptr(buf["att"]), ptr(buf["qkv"]), ptr(kc), ptr(vc),
                           ptr(eng.rope_cs), i32(pos0), i32(T), i32(c.n_heads), i32(c.kv_dim),
                           i32(c.n_heads // c.n_kv_heads))
            self._matmul(eng, "o", layer, buf["att"], buf["y"], T, w16, s)
            k["add_norm"].launch(s, rows, x, ptr(buf["y"]), xn, dim, eps)
            self._matmul(eng, "gate_up", layer, buf["xn"], buf["gu"], T, w16, s)
            n = T * c.hidden_dim
            k["swiglu"].launch(s, pk.elementwise_grid(n, self.device.sm_count), ptr(buf["h"]), ptr(buf["gu"]),
                               np.int64(n))
            self._matmul(eng, "down", layer, buf["h"], buf["y"], T, w16, s)
            # after the last layer this is the final norm (its weight is in W_cls)
            k["add_norm"].launch(s, rows, x, ptr(buf["y"]), xn, dim, eps)
        m = T if all_logits else 1
        self._matmul(eng, "cls", 0, buf["xn"][T - m:], buf["logits"], m, w16, s)
        return buf["logits"]
