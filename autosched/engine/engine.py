"""A Llama-family decode engine (batch 1) on autosched's kernels.

One step is a fixed sequence of launches that reads the token and the position from device memory
and ends with argmax_step, which writes the greedy next token and advances the position.  So the
step is captured once in a CUDA graph and replayed for every token; a small model is then not
bound by the CPU cost of its launches.  A layer is five launches: the residual add, both RMSNorms
and SiLU x up are epilogues of the matmuls (kernels/epilogue.cuh):

    qkv      = (W_qkv diag(w_att)) . x16 * rsqrt(ss[2l] / dim + eps)             norm
    att      = rope_attention(qkv)
    x       += W_o . att;  x16 = x;  ss[2l+1] += x^2                               residual
    h        = silu(g) * u,  (g, u) = (W_gu diag(w_ffn)) . x16 * rsqrt(...)       norm_swiglu
    x       += W_down . h; x16 = x;  ss[2l+2] += x^2                               residual

with x the float residual, x16 its copy in the activation type, ss the sums of squares (embed_norm
writes ss[0] and zeroes the rest), and the classifier's matrix carrying the final norm's weight.
Every kernel is launched with programmatic dependent launch (kernels/pdl.cuh; pdl=False turns it
off): a matmul streams the start of its weights into the L2 while the kernel before it finishes,
and attention fetches its KV-cache rows while the qkv matmul finishes.  Attention may also stream
the start of gate_up's weights into the L2 after its wait (HBM is idle while it runs at a short
context): the step verification keeps that only where the step is faster with it.  Attention is split over the
context (split-KV, slices merged in the same launch) once the context is long enough to give every
slice 64 positions.

    eng = Engine(cfg, weights, "q4f16_1")     # weights: numpy or torch float32, llama2.c names
    logits = eng.step(token)                  # float32 (vocab,) torch tensor on the GPU
    logits = eng.prefill(prompt)              # the prompt through each layer at once (engine/prefill.py)
    tokens = eng.generate(prompt, 64)         # greedy

Engine(..., step="auto"), the default, also builds the dataflow step (engine/dataflow.py,
kernels/dataflow_step.cuh: the whole step as one persistent kernel whose blocks wait on per-phase
counters instead of kernel boundaries, weights streamed into shared memory ahead of the data), times
its knobs and the per-kernel step in the step itself, serves the fastest and stores the times (an
engine that finds them serves the stored winner untimed, and builds nothing more where that is the
per-kernel step).  On the H200 the dataflow step led for fp16 (1B shape x1.16-1.21, 7B x1.08) and
the 1B q4f16_1 shape (x1.03), the per-kernel step for 7B q4f16_1 (x0.98)
(bench/results/dataflow-q4-words-NVIDIA_H200-2026-11-28.json, dataflow-knobs-...).  step="dataflow"
serves it alone, step="kernels" builds only the per-kernel step.  A model or format the dataflow step refuses
gets the per-kernel step.

A q4f16_1 or fp16 engine serves, per matmul shape, the fastest of the `verify` (8) best configs the
database (or a same-device recording) has measured, timed in an isolated CUDA graph
(engine/verify.py) and then inside the engine's own step (engine/step_tuning.py), then walked one
knob at a time inside the step (engine/descent.py: a config no tuning run measured alone may be the
step's fastest); the step's times and moves are stored in the database, so the next engine of the
same model, device and candidates serves the same configs without timing them again.
"""

from __future__ import annotations

import numpy as np

from autosched.build import Builder
from autosched.database import default_db_path
from autosched.device import query
from autosched.engine.matmul import TUNED_FORMATS, Matmul, blocks_pair_rows, tuned_workload
from autosched.engine.prefill import PREFILL_FORMATS, STEPWISE_UP_TO, BatchedPrefill
from autosched.engine.shapes import EPILOGUE, matmul_shapes
from autosched.engine.step_tuning import StepTuning
from autosched.engine.verify import fastest_in_graph
from autosched.selection import default_candidate, untuned
from autosched.launch import LoadedKernel
from autosched.runtime import pdl_supported, ptr
from autosched.engine.weights import as_torch, check_format, step_matrices
from autosched.models.llama2c import LlamaConfig
from autosched.models.rope import inv_freq
from autosched.templates import decode as dk
from autosched.templates.dataflow import refusal
from autosched.templates.epilogue import pairs_rows
from autosched.tune_command import command

# torch and cuda.core are imported inside functions: optional / slow to import, a CPU install runs without
# them; rank is imported inside functions too: looked up at call time, as tests replace it on its module




# candidates a tuned matmul times inside the step: the 7B q4f16_1 as shipped ran 75.9% of its
# bandwidth limit with 4 and 77.6% with 8 on one H100, 77.6% with 16 on another (2026-11-26); the
# times are stored, so an engine of the same model and device pays the few seconds of timing once
VERIFY = 8

# Engine(step=...): the fastest of both timed in the step, or one of them
STEPS = ("auto", "kernels", "dataflow")

# L2 prefetch budgets (bytes a grid asks for before its dependency wait, kernels/pdl.cuh) the step
# verification times with programmatic launch, the .cuh's default first: the best one depends on
# the model and format (H100, 2026-11-27, served configs: the 7B q4f16_1 at 2 MiB 1.5-3.5% faster
# than at 8, the 1B fp16 4% faster, the 1B q4f16_1 2% slower)
PREFETCH_BUDGETS = (8 << 20, 4 << 20, 2 << 20, 1 << 20)


# attention's prefetch of gate_up (kernels/decode.cuh PdlWaitThenPrefetch), kept where the step is
# faster with it: at most PREFETCH_MAX bytes, PREFETCH_SHARE of the matrix (H100, 7B q4f16_1: 8, 16,
# 24 and 32 MB of gate_up's 45 tried, 16 best at +0.6 points of the bandwidth limit)
PREFETCH_MAX = 16 << 20
PREFETCH_SHARE = 0.375


def gate_up_prefetch_bytes(n: int, k: int, fmt: str) -> int:
    """Bytes of the gate_up matrix (n, k) in `fmt` attention asks the L2 for, a multiple of 16."""
    size = n * k // 2 if fmt == "q4f16_1" else n * k * 2
    return int(min(PREFETCH_MAX, PREFETCH_SHARE * size)) // 16 * 16


def gemv_candidates(cfg: LlamaConfig, info, db, verify: int, fmt: str = "q4f16_1") -> dict:
    """name -> [Candidate] of each matmul of a tuned format (q4f16_1, fp16): the `verify` best
    measured configs, ranked (the predicted or default config where none was measured).  gate_up
    takes only configs whose blocks own an even number of rows (its epilogue pairs gate and up)."""
    from autosched.selection import rank
    out = {}
    for name, (n, k) in matmul_shapes(cfg).items():
        w, want = tuned_workload(fmt, n, k), max(1, verify)
        choices = rank(w, info, db, k=4 * want if pairs_rows(EPILOGUE[name]) else want)
        if pairs_rows(EPILOGUE[name]):
            paired = [c for c in choices if blocks_pair_rows(w, c.config)]
            choices = paired[:want] or [default_candidate(w, info, "default (no measured config pairs rows)")]
        out[name] = choices
    return out


def served_gemv_choices(cfg: LlamaConfig, info, builder, candidates: dict, pdl: bool = True,
                        fmt: str = "q4f16_1") -> dict:
    """name -> (Candidate, [(Candidate, graph us)]) of each tuned matmul: its only candidate, or the
    fastest of its candidates in a CUDA graph (engine/verify.py)."""
    shapes = matmul_shapes(cfg)
    return {name: (fastest_in_graph(name, *shapes[name], cs, info, builder, pdl=pdl, fmt=fmt) if len(cs) > 1
                   else (cs[0], []))
            for name, cs in candidates.items()}


def torch_stack(rows):
    import torch
    return torch.stack(rows)


def rope_table(cfg: LlamaConfig, device):
    """(seq_len, head_size / 2) pairs (cos, sin) of pos * theta^(-2j/hs) (Llama-3's scaled
    frequencies where the config has rope_scaling: models/rope.py), in float32 the way transformers
    computes them (inverse frequencies first, then one float32 product)."""
    import torch
    inv = inv_freq(cfg, torch)
    ang = torch.arange(cfg.seq_len, dtype=torch.int64).float()[:, None] * inv[None, :]
    return torch.stack([ang.cos(), ang.sin()], dim=-1).contiguous().to(device)


class Engine(StepTuning):
    """One model, one weight format, batch 1: its kernels built, its weights packed on the GPU, a
    KV cache of the model's seq_len.  step() feeds a token; decode() and generate() are greedy."""

    def __init__(self, cfg: LlamaConfig, weights: dict, fmt: str = "q4f16_1", *, device_id: int = 0, db=None,
                 builder=None, graphs: bool = True, pdl: bool = True, splits: int | None = None,
                 verify: int = VERIFY, reverify: bool = False, progress=None, batched_prefill: bool = True,
                 prefill_backend: str = "auto", step: str = "auto", descent: bool = True):
        import torch
        from cuda.core import Device
        self.cfg, self.fmt = cfg, check_format(fmt)
        if step not in STEPS:
            raise ValueError(f"step={step!r}: choose from {', '.join(STEPS)}")
        self.step_mode = step
        self.flow = None                 # the dataflow step (engine/dataflow.py), where built
        self.flow_served = False         # whether launches go to it
        self.flow_times: dict = {}       # knob label (or "kernels") -> us a step, as timed or stored
        self.descent = descent           # walk the served GEMV configs one knob at a time in the step
        self.descent_moves = []          # the moves it made (engine/descent.py Move), when it ran here
        self.dev = torch.device("cuda", device_id)
        self.info = query(device_id)
        self.flow_refusal = refusal(cfg, self.fmt, arch=self.info.arch)
        if step == "dataflow" and self.flow_refusal:
            raise ValueError(self.flow_refusal)
        Device(device_id).set_current()
        self.act = "float" if fmt == "fp32" else "half"
        self.tdtype = torch.float32 if fmt == "fp32" else torch.float16
        self.graphs_enabled = graphs
        # programmatic launch pays on the served configs (H100, 2026-11-23, 7B q4f16_1: 460 tokens/s
        # with it, 433 without; an earlier config set measured 407 vs 421): the bench measures both
        self.pdl = pdl and pdl_supported()
        self._graph = None
        self.prefill_backend = prefill_backend
        self.attn_prefetch = 0           # bytes of gate_up's weights attention streams into the L2
        self.prefetch_choices: tuple[int, ...] = (0,)
        self.prefetch_budget = PREFETCH_BUDGETS[0]        # of the matmul kernels (kernels/pdl.cuh)
        self.budget_choices: tuple[int, ...] = PREFETCH_BUDGETS[:1]
        own_builder = builder is None
        if own_builder:
            builder = Builder()
        try:
            self._build(weights, builder, db, progress, splits, verify, reverify, batched_prefill)
            self._alloc()
            self.step_verification = self._verify_in_step(weights, builder, progress, db) if graphs else {}
            if step != "kernels" and not self.flow_refusal:
                self._choose_step(weights, builder, progress, db)
        finally:
            if own_builder:
                builder.close()

    # -- set-up -----------------------------------------------------------------------------
    def _build(self, weights, builder, db, progress, splits, verify, reverify, batched_prefill=True) -> None:
        import torch
        c, act, arch = self.cfg, self.act, self.info.arch
        hs = c.head_size
        shapes = matmul_shapes(c)
        # specs first, all built in the pool at once
        self.splits = splits or dk.attention_splits(c.n_heads, c.seq_len, self.info.sm_count)
        specs = {
            "embed": dk.embed_norm_spec(act, arch),
            "argmax": dk.argmax_spec(act, arch, c.vocab_size),
            "attn": dk.rope_attention_spec(c.n_heads, hs, self.splits, act, arch),
        }
        # q4f16_1 and fp16: per shape, the fastest in a graph of the `verify` best measured configs,
        # unless the database holds this engine's step verification: then its winners, timed no
        # more (an engine that serves only the dataflow step launches no matmul kernel: rank's first)
        only_flow = self.step_mode == "dataflow"
        self.candidates = (gemv_candidates(c, self.info, db, verify if not only_flow else 1, self.fmt)
                           if self.fmt in TUNED_FORMATS else {})
        if self.pdl and self.fmt in TUNED_FORMATS and not only_flow:
            n, kk = shapes["gate_up"]
            self.prefetch_choices = (0, gate_up_prefetch_bytes(n, kk, self.fmt))
            self.budget_choices = PREFETCH_BUDGETS
        self._stored_step = self._stored_verification(db) if self.graphs_enabled and not reverify else None
        if self._stored_step is not None:
            times, stored = self._stored_step
            if "attn_prefetch" in times:
                self.attn_prefetch = self.prefetch_choices[int(np.argmin(times["attn_prefetch"]))]
            if "prefetch_budget" in times:
                self.prefetch_budget = self.budget_choices[int(np.argmin(times["prefetch_budget"]))]
            self.verification = {name: (self._step_winner(name, times[name], stored) if name in times else cs[0], [])
                                 for name, cs in self.candidates.items()}
            for name, moved in self._stored_descent(db).items():
                self.verification[name] = (moved, [])     # the descent's last move of each matmul
        elif self.candidates:
            self.verification = served_gemv_choices(c, self.info, builder, self.candidates, self.pdl, self.fmt)
        else:
            self.verification = {}
        self.mm = {name: Matmul(name, self.fmt, n, kk, act, act, self.info, db, pdl=self.pdl,
                                choice=self.verification[name][0] if self.verification else None,
                                epilogue=EPILOGUE[name], prefetch_budget=self.prefetch_budget)
                   for name, (n, kk) in shapes.items()}
        # the batched prefill's kernels and GEMM micro-kernels (engine/prefill.py), where the format has it
        self.prefiller = None
        if batched_prefill and self.fmt in PREFILL_FORMATS:
            self.prefiller = BatchedPrefill(c, self.fmt, self.info, db.path if db is not None else default_db_path(),
                                           backend=self.prefill_backend)
        pre = self.prefiller.all_specs() if self.prefiller else []
        list(builder.build_many([*specs.values(), *(m.spec for m in self.mm.values()), *pre]))   # in parallel
        self.k = {name: LoadedKernel(spec, builder, self.pdl) for name, spec in specs.items()}
        for m in self.mm.values():
            m.load(builder)
        if self.prefiller:
            self.prefiller.load(builder)

        self._pack(weights, list(self.mm), progress)
        self.embedding = as_torch(weights["token_embedding"], self.dev)
        torch.cuda.synchronize(self.dev)

    def _pack(self, weights, names: list[str], progress=None) -> None:
        """Quantize and pack the weights of the matmuls `names` (every layer) into their kernels'
        layouts, one layer at a time: a 7B model never sits on the GPU in float32 all at once."""
        task = progress.add_task("packing weights", total=self.cfg.n_layers + 1) if progress else None
        for _, mats in step_matrices(weights, self.cfg, self.dev, names):
            for name, w in mats.items():
                self.mm[name].add_layer(w)
            if progress:
                progress.advance(task)
        if progress and "cls" not in names:
            progress.advance(task)

    def _alloc(self) -> None:
        import torch
        c, dev, t = self.cfg, self.dev, self.tdtype
        q_dim = c.n_heads * c.head_size
        z = lambda n, dt=t: torch.zeros(n, dtype=dt, device=dev)  # noqa: E731
        # the residual stream (float), its copy in the activation type (the V of the matmuls that
        # follow a norm), and per norm the sum of squares of the residual it normalizes
        self.x, self.x16 = z(c.dim, torch.float32), z(c.dim)
        self.ss = z(2 * c.n_layers + 1, torch.float64)    # doubles: see kernels/epilogue.cuh
        self.qkv = z(q_dim + 2 * c.kv_dim)
        self.att = z(q_dim)
        self.hb = z(c.hidden_dim)
        self.logits = z(c.vocab_size)
        self.logits_f = z(c.vocab_size, torch.float32)
        self.token = z(1, torch.int32)
        self.pos_d = z(1, torch.int32)
        self.part = z(c.n_heads * self.splits * (c.head_size + 2), torch.float32)
        self.count = z(c.n_heads, torch.int32)       # split-KV tickets; the last block resets its own
        blocks = dk.argmax_blocks(c.vocab_size)        # argmax: each block's winner, and its ticket
        self.best_v, self.best_i, self.best_count = z(blocks, torch.float32), z(blocks, torch.int32), z(1, torch.int32)
        self.rope_cs = rope_table(c, dev)
        self.k_cache = torch.zeros((c.n_layers, c.seq_len, c.kv_dim), dtype=t, device=dev)
        self.v_cache = torch.zeros_like(self.k_cache)
        self.pos = 0

    def kernels_per_step(self) -> int:
        """Launches one step makes: the dataflow kernel, or embed + 5 a layer + cls + argmax."""
        return 1 if self.flow_served else 5 * self.cfg.n_layers + 3

    # -- one step ---------------------------------------------------------------------------
    def _launch_step(self, stream) -> None:
        if self.flow_served:
            self.flow.launch(stream)
            return
        c, k, mm = self.cfg, self.k, self.mm
        i32, f32, none = np.int32, np.float32, np.uint64(0)
        x, ss = ptr(self.x), ptr(self.ss)
        dim, eps = i32(c.dim), f32(c.norm_eps)

        def norm(i):            # the epilogue arguments of a matmul after norm i
            return none, ss + np.uint64(8 * i), none, dim, eps

        def residual(i):        # ... of a matmul whose sum feeds norm i
            return x, none, ss + np.uint64(8 * i), dim, eps

        k["embed"](stream, x, ptr(self.x16), ss, i32(self.ss.numel()), ptr(self.embedding), ptr(self.token), dim)
        for layer in range(c.n_layers):
            mm["qkv"](stream, layer, self.qkv, self.x16, norm(2 * layer))
            k["attn"](stream, ptr(self.att), ptr(self.part), ptr(self.count), ptr(self.qkv), ptr(self.k_cache[layer]),
                               ptr(self.v_cache[layer]), ptr(self.pos_d), ptr(self.rope_cs), i32(c.n_heads),
                               i32(c.kv_dim), i32(c.head_size), i32(c.n_heads // c.n_kv_heads),
                               *self._prefetch_args(layer))
            mm["o"](stream, layer, self.x16, self.att, residual(2 * layer + 1))
            mm["gate_up"](stream, layer, self.hb, self.x16, norm(2 * layer + 1))
            mm["down"](stream, layer, self.x16, self.hb, residual(2 * layer + 2))
        mm["cls"](stream, 0, self.logits, self.x16, norm(2 * c.n_layers))
        k["argmax"](stream, ptr(self.logits_f), ptr(self.logits), i32(c.vocab_size), ptr(self.token), ptr(self.pos_d),
                    ptr(self.best_v), ptr(self.best_i), ptr(self.best_count))

    def _prefetch_args(self, layer: int) -> tuple:
        """rope_attention's prefetch range: the start of layer `layer`'s gate_up weights (its
        largest packed tensor), or none."""
        if not self.attn_prefetch:
            return np.uint64(0), np.int64(0)
        t = max(self.mm["gate_up"].layers[layer].values(), key=lambda t: t.numel() * t.element_size())
        return ptr(t), np.int64(min(self.attn_prefetch, t.numel() * t.element_size()))

    def _stream(self):
        import torch
        from cuda.core import Stream
        return Stream.from_handle(torch.cuda.current_stream(self.dev).cuda_stream)

    def _run(self) -> None:
        import torch
        if not self.graphs_enabled:
            self._launch_step(self._stream())
            return
        if self._graph is None:
            # capture on a side stream (torch's rule) after one warm-up step there; the launches read
            # pos and token from memory, so restore both afterwards
            saved = (self.token.clone(), self.pos_d.clone())
            g = torch.cuda.CUDAGraph()
            s = torch.cuda.Stream(self.dev)
            s.wait_stream(torch.cuda.current_stream(self.dev))
            with torch.cuda.stream(s):
                self._launch_step(self._stream())
            torch.cuda.current_stream(self.dev).wait_stream(s)
            self.token.copy_(saved[0])
            self.pos_d.copy_(saved[1])
            with torch.cuda.graph(g, stream=s):
                self._launch_step(self._stream())
            self._graph = g
        self._graph.replay()

    def reset(self) -> None:
        self.pos = 0
        self.pos_d.zero_()

    def step(self, token: int):
        """Feed `token` at the next position; the float32 logits (vocab,) on the GPU."""
        c = self.cfg
        if self.pos >= c.seq_len:
            raise ValueError(f"context full: this model's seq_len is {c.seq_len}")
        if not 0 <= token < c.vocab_size:
            raise ValueError(f"token {token} outside the vocabulary of {c.vocab_size}")
        self.token.fill_(token)
        self._run()
        self.pos += 1
        return self.logits_f

    def decode(self, steps: int) -> None:
        """`steps` greedy steps on the device, no host round trip: each feeds the token the
        previous step chose (the caller fed the first with step())."""
        for _ in range(steps):
            if self.pos >= self.cfg.seq_len:
                raise ValueError(f"context full: this model's seq_len is {self.cfg.seq_len}")
            self._run()
            self.pos += 1

    def next_token(self) -> int:
        """The greedy token the last step chose."""
        return int(self.token.item())

    def prefill(self, prompt: list[int], mode: str = "auto", all_logits: bool = False):
        """Start afresh and feed `prompt`; the last position's float32 logits (vocab,) on the GPU, or
        with all_logits every position's (T, vocab).  mode "batched": the whole prompt through each
        layer at once (engine/prefill.py; fp16, int8 and q4f16_1 engines); "stepwise": one step a
        token; "auto": batched past STEPWISE_UP_TO tokens where the engine has it.  Either way the
        KV cache, the position and the greedy next token end as T steps leave them."""
        if not prompt:
            raise ValueError("the prompt must hold at least one token")
        if mode not in ("auto", "batched", "stepwise"):
            raise ValueError(f"prefill mode must be auto, batched or stepwise, got {mode!r}")
        c = self.cfg
        if len(prompt) > c.seq_len:
            raise ValueError(f"a prompt of {len(prompt)} tokens does not fit this model's seq_len {c.seq_len}")
        bad = [t for t in prompt if not 0 <= t < c.vocab_size]
        if bad:
            raise ValueError(f"token {bad[0]} outside the vocabulary of {c.vocab_size}")
        if mode == "batched" and self.prefiller is None:
            raise ValueError(f"this engine has no batched prefill ({self.fmt} engine, or batched_prefill=False)")
        self.reset()
        if mode == "stepwise" or (mode == "auto" and (self.prefiller is None
                                                       or len(prompt) <= STEPWISE_UP_TO[self.fmt])):
            rows = []
            for t in prompt:
                logits = self.step(t)
                if all_logits:
                    rows.append(logits.clone())
            return torch_stack(rows) if all_logits else logits
        logits16 = self.prefiller.run(self, prompt, 0, all_logits)
        # argmax_step on the last row: the float logits, the greedy token, and pos -> T, as a step does
        c = self.cfg
        self.pos_d.fill_(len(prompt) - 1)
        self.k["argmax"](self._stream(), ptr(self.logits_f), ptr(logits16[-1]), np.int32(c.vocab_size),
                         ptr(self.token), ptr(self.pos_d), ptr(self.best_v), ptr(self.best_i), ptr(self.best_count))
        self.pos = len(prompt)
        return logits16.float() if all_logits else self.logits_f

    def extend(self, logits, max_tokens: int, choose=None, on_token=None, stop_token: int | None = None) -> list[int]:
        """Up to `max_tokens` tokens after what has been fed, each chosen from the logits before it:
        greedily (the argmax the step took on the GPU) or by `choose(logits)`.  Stops early at
        `stop_token` (not returned) or when prompt and tokens fill the context."""
        out = []
        for _ in range(max_tokens):
            nxt = self.next_token() if choose is None else choose(logits)
            if nxt == stop_token:
                break
            out.append(nxt)
            if on_token:
                on_token(nxt)
            if self.pos + 1 >= self.cfg.seq_len:      # this token fills the context: no step after it
                break
            logits = self.step(nxt)
        return out

    def generate(self, prompt: list[int], max_tokens: int, choose=None, on_token=None,
                 stop_token: int | None = None) -> list[int]:
        """The prompt, then up to `max_tokens` tokens (see extend)."""
        return list(prompt) + self.extend(self.prefill(prompt), max_tokens, choose, on_token, stop_token)

    # -- accounting -------------------------------------------------------------------------
    def weight_bytes_per_token(self) -> int:
        """Bytes of weights one step reads: every matmul weight and one embedding row (the norm
        weights are folded into the matmuls')."""
        mm = sum(m.nbytes(i) for m in self.mm.values() for i in range(len(m.layers)))
        return mm + 4 * self.cfg.dim

    def untuned(self) -> list[str]:
        """The matmuls served a config never measured on this shape and GPU ("name NxK")."""
        return untuned_matmuls({name: m.choice for name, m in self.mm.items()}, matmul_shapes(self.cfg))

    def describe(self, model: str | None = None) -> list[str]:
        """A line per matmul (its config and where it came from), and one naming the untuned ones
        with the command that tunes them (`model`: the model as the user named it)."""
        lines = [m.describe() for m in self.mm.values()]
        if self.flow_served:
            lines.append(self.flow.describe() + self._times_note())
        else:
            pf = (f", attention streams {self.attn_prefetch / 2**20:.1f} MiB of gate_up into the L2"
                  if self.attn_prefetch else "")
            if self.pdl:
                pf += (f", a matmul grid asks the L2 for {self.prefetch_budget / 2**20:g} MiB of its weights "
                       f"before its wait")
            why = f"; the dataflow step refuses this model: {self.flow_refusal}" if self.flow_refusal else ""
            lines.append(f"decode step: {self.kernels_per_step()} kernels ({'CUDA graph' if self.graphs_enabled else 'no graph'}"
                         f", PDL {'on' if self.pdl else 'off'}{pf}){self._times_note()}{why}")
        lines += (self.prefiller.describe() if self.prefiller
                  else [f"prefill: stepwise (no batched prefill for {self.fmt})"])
        note = untuned_note(self.untuned(), model, self.fmt)
        return lines + ([note] if note else [])


def untuned_matmuls(choices: dict, shapes: dict) -> list[str]:
    """name -> Candidate (None: a format with nothing to tune) -> ["name NxK" of the untuned]."""
    return [f"{name} {shapes[name][0]}x{shapes[name][1]}" for name, c in choices.items()
            if c is not None and untuned(c)]


def untuned_note(untuned: list[str], model: str | None, fmt: str) -> str:
    """What to tell a user whose engine serves untuned shapes, with the command that tunes them."""
    if not untuned:
        return ""
    return (f"untuned on this GPU ({fmt}): {', '.join(untuned)} (a predicted or default config); tune them with "
            f"`{command(model or 'MODEL', [fmt])}`")

