"""The dataflow decode step (kernels/dataflow_step.cuh): its KernelSpec, its knobs, and a Python
model of how it cuts a step's matmuls into chunks and hands them to blocks (CPU tests check the model
covers every row exactly once; the kernel computes the same chunks).

    knobs = Knobs(stages=6, stage_bytes=32768)
    spec = dataflow_step_spec(cfg, "q4f16_1", "sm_90", knobs)      # grid (1,1,1): the engine sets it
    plan = chunk_plan(cfg, "q4f16_1", knobs)                        # the matmuls in step order

A block holds a ring of `stages` shared-memory slots of `stage_bytes` each, streamed with weights
ahead of the computation; one block an SM (the ring takes most of the shared memory).  The knobs are
timed in the engine's own step (engine/dataflow.py), as the GEMV configs of the per-kernel step are.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math

from autosched.templates.base import KernelSpec, kernel_source
from autosched.templates.decode import attention_pairs, matmul_shapes

HEADER = "dataflow_step.cuh"
THREADS = 256          # attention_item's buffers take at most 256
KPRE = 4               # positions each warp of attention_item has in flight
FORMATS = {"fp16": 0, "q4f16_1": 1}
KINDS = ("qkv", "o", "gate_up", "down", "cls")
SMEM_LIMIT = 227 * 1024           # sm_90's opt-in shared memory a block
SMEM_SM = 228 * 1024              # an SM's shared memory, of which the driver keeps 1 KB a block
STATIC_SMEM = THREADS * 8 * 4 + 4 + 2 * 4 * (THREADS // 32)     # the kernel's static buffers
TIMELINE_MACRO = "-DAUTOSCHED_TIMELINE"


@dataclasses.dataclass(frozen=True)
class Knobs:
    """The step's schedule: the ring's depth and slot size (a chunk's weights fill at most a slot),
    the most rows a chunk takes (a thread keeps a sum a row), and blocks an SM (per_sm: more blocks
    hide more latency, each with a smaller ring and fewer registers)."""
    stages: int = 6
    stage_bytes: int = 32 * 1024
    max_rows: int = 32
    per_sm: int = 1

    def label(self) -> str:
        return f"{self.stages}x{self.stage_bytes // 1024}K r{self.max_rows}" + (f" {self.per_sm}/SM" if self.per_sm > 1 else "")


# what the engine times in its step (engine/dataflow.py), the default first; choices() keeps those
# that fit a model.  Two blocks an SM first: it led for the 1B shape in both formats, one block an
# SM with deeper rings follow (H200, 2026-11-28, bench/results/dataflow-ring-NVIDIA_H200-2026-11-28.json;
# 6x32K and 8x24K r16 lost 7-35% there and are not timed)
CHOICES = (Knobs(3, 32 * 1024, 16, per_sm=2), Knobs(4, 24 * 1024, 32, per_sm=2), Knobs(4, 48 * 1024, 32),
           Knobs(3, 64 * 1024, 32))


def row_bytes(fmt: str, k: int) -> int:
    """Bytes of one weight row of k columns: fp16 halves, or q4f16_1 words and scales."""
    return 2 * k if fmt == "fp16" else k // 2 + k // 16


def chunk_rows(fmt: str, kind: str, k: int, knobs: Knobs) -> int:
    """Rows a chunk of a (kind, K) matmul takes: as many as fill a slot, at most max_rows, an even
    number for gate_up (rows pair gate and up) -- mat_of in the kernel."""
    r = min(knobs.max_rows, knobs.stage_bytes // row_bytes(fmt, k))
    return r & ~1 if kind == "gate_up" else r


def chunk_plan(cfg, fmt: str, knobs: Knobs) -> list[dict]:
    """The step's matmuls in order (per layer qkv, o, gate_up, down; then cls), each with its rows
    a chunk, its chunks and the global number of its first chunk."""
    shapes = matmul_shapes(cfg)
    out, base = [], 0
    for m in range(4 * cfg.n_layers + 1):
        kind = "cls" if m == 4 * cfg.n_layers else KINDS[m % 4]
        n, k = shapes[kind]
        r = chunk_rows(fmt, kind, k, knobs)
        chunks = -(-n // r)
        out.append({"kind": kind, "layer": m // 4, "n": n, "k": k, "rows": r, "chunks": chunks, "base": base})
        base += chunks
    return out


def block_rows(cfg, fmt: str, knobs: Knobs, grid: int) -> list[dict[int, list[range]]]:
    """Per block, matrix index -> the row ranges it computes (chunk g goes to block g % grid)."""
    out = [dict() for _ in range(grid)]
    for m, mat in enumerate(chunk_plan(cfg, fmt, knobs)):
        for c in range(mat["chunks"]):
            lo = c * mat["rows"]
            out[(mat["base"] + c) % grid].setdefault(m, []).append(range(lo, min(lo + mat["rows"], mat["n"])))
    return out


def acts_per_thread(cfg) -> int:
    """16-byte units of activations each thread keeps (XV): the widest K over THREADS."""
    k = max(matmul_shapes(cfg)[kind][1] for kind in KINDS)
    return max(1, math.ceil(k / 8 / THREADS))


def smem_bytes(knobs: Knobs) -> int:
    """Dynamic shared memory: the ring and two buffers of the warps' partials (32 rows each)."""
    return knobs.stages * knobs.stage_bytes + 4 * 2 * (THREADS // 32) * 32


def splits(cfg, grid: int) -> int:
    """Slices a head's attention is cut into: enough to give every block an item at a long context,
    none shorter than 32 positions."""
    return max(min(grid // cfg.n_heads, cfg.seq_len // 32), 1)


def refusal(cfg, fmt: str, knobs: Knobs | None = None, arch: str | None = None) -> str | None:
    """Why the dataflow step cannot serve `cfg` in `fmt` with `knobs` on `arch` (None: it can)."""
    if arch is not None and int(arch.removeprefix("sm_").rstrip("a")) < 90:
        return (f"{arch}: the dataflow step's ring is fed by bulk copies on mbarriers (sm_90 and later); this GPU "
                "uses the per-kernel step")
    if fmt not in FORMATS:
        return (f"the dataflow decode step serves {', '.join(FORMATS)} weights; a {fmt} engine uses the "
                "per-kernel step")
    if knobs is None:          # the model's question: can any of the choices serve it
        problems = [refusal(cfg, fmt, k) for k in CHOICES]
        return None if None in problems else problems[0]
    hs = cfg.head_size
    if hs > THREADS or hs % 8:
        return f"head size {hs}: the dataflow step needs a multiple of 8 up to {THREADS}"
    if cfg.n_heads % cfg.n_kv_heads:
        return f"{cfg.n_heads} heads do not group over {cfg.n_kv_heads} kv heads"
    unit = 8 if fmt == "fp16" else 256      # 16-byte rows; q4: whole 16-byte runs of scales too
    for kind, (n, k) in matmul_shapes(cfg).items():
        if k % unit:
            return f"{kind}: K = {k} is not a multiple of {unit} ({fmt} chunks are copied in 16-byte units)"
        need = 2 if kind == "gate_up" else 1
        if chunk_rows(fmt, kind, k, knobs) < need:
            return (f"{kind}: a row of {row_bytes(fmt, k)} bytes leaves fewer than {need} row(s) a "
                    f"{knobs.stage_bytes}-byte slot")
    if knobs.stages < 3:
        return f"{knobs.label()}: the ring needs 3 slots at least (one in flight beside the two in use)"
    if smem_bytes(knobs) + STATIC_SMEM > SMEM_LIMIT:
        return f"{knobs.label()}: {smem_bytes(knobs) + STATIC_SMEM} bytes of shared memory a block, over {SMEM_LIMIT}"
    if knobs.per_sm < 1 or knobs.per_sm * (smem_bytes(knobs) + STATIC_SMEM + 1024) > SMEM_SM:
        return (f"{knobs.label()}: {knobs.per_sm} blocks of {smem_bytes(knobs) + STATIC_SMEM} bytes of shared memory "
                f"do not fit an SM's {SMEM_SM}")
    xv = acts_per_thread(cfg)
    if xv > 8:
        return f"K up to {max(k for _, k in matmul_shapes(cfg).values())}: more activations a thread than its registers hold"
    return None


def source_digest() -> str:
    """A digest of the kernel's source: a step choice stored by another version of it is not reused."""
    return hashlib.sha256(kernel_source(HEADER).encode()).hexdigest()[:16]


def choices(cfg, fmt: str) -> list[Knobs]:
    """The knobs of CHOICES that can serve `cfg` in `fmt`, the default first."""
    return [k for k in CHOICES if refusal(cfg, fmt, k) is None]


def dataflow_step_spec(cfg, fmt: str, arch: str, knobs: Knobs, timeline: bool = False) -> KernelSpec:
    """The kernel, its grid left at 1 block: the engine sets one block an SM at launch.  timeline:
    the instrumented build (-DAUTOSCHED_TIMELINE: one more argument, a u64 buffer of (phases, grid,
    4) entries, engine/timeline.py)."""
    problem = refusal(cfg, fmt, knobs)
    if problem:
        raise ValueError(problem)
    shapes = matmul_shapes(cfg)
    rows = ", ".join(str(chunk_rows(fmt, kind, shapes[kind][1], knobs)) for kind in KINDS)
    expr = (f"dataflow_step<{FORMATS[fmt]}, {THREADS}, {knobs.per_sm}, {knobs.stages}, {knobs.stage_bytes}, {rows}, "
            f"{acts_per_thread(cfg)}, {KPRE}, {attention_pairs(cfg.head_size)}>")
    return KernelSpec(family="decode", workload_key="decode:dataflow_step", config=(("kernel", expr),),
                      source=kernel_source(HEADER), name_expression=expr, grid=(1, 1, 1), block=(THREADS, 1, 1),
                      smem_bytes=smem_bytes(knobs), args=(), arch=arch,
                      options=(TIMELINE_MACRO,) if timeline else ())


def phase_names(n_layers: int) -> list[str]:
    """The step's phases in the kernel's numbering (its counters, then the classifier)."""
    kinds = ("qkv", "attn", "o", "gate_up", "down")
    return ["embed", *(f"l{i}.{k}" for i in range(n_layers) for k in kinds), "cls"]
