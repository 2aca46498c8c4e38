"""KernelSpecs of the decode step's kernels other than the q4f16_1 GEMV (kernels/decode.cuh).

They take their sizes as arguments, so one binary serves every layer and position; what is fixed at
compile time is the activation type (`act`: "float" or "half"), block sizes and, for the dense
GEMV, the weight type, rows per block and loads in flight.  The engine launches them with its own
arguments (see the signatures in the .cuh), so the specs list none.
"""

from __future__ import annotations

from autosched.templates.base import KernelSpec, kernel_source
from autosched.templates.epilogue import epilogue_id, pairs_rows


def matmul_shapes(cfg) -> dict[str, tuple[int, int]]:
    """(N, K) of each matmul a decode step launches (Q, K, V fused; gate and up fused), in step order."""
    q_dim = cfg.n_heads * cfg.head_size
    return {"qkv": (q_dim + 2 * cfg.kv_dim, cfg.dim), "o": (cfg.dim, q_dim), "gate_up": (2 * cfg.hidden_dim, cfg.dim),
            "down": (cfg.dim, cfg.hidden_dim), "cls": (cfg.vocab_size, cfg.dim)}

HEADER = "decode.cuh"
ACT_TYPES = {"float": "float", "half": "__half"}
WEIGHT_TYPES = {"fp32": "float", "fp16": "__half", "int8": "signed char"}
WEIGHT_BYTES = {"fp32": 4, "fp16": 2, "int8": 1}


def _ctype(act: str) -> str:
    if act not in ACT_TYPES:
        raise ValueError(f"activation type must be one of {sorted(ACT_TYPES)}, got {act!r}")
    return ACT_TYPES[act]


def _spec(name: str, expr: str, arch: str, grid, block, smem: int = 0) -> KernelSpec:
    return KernelSpec(family="decode", workload_key=f"decode:{name}", config=(("kernel", expr),),
                      source=kernel_source(HEADER), name_expression=expr, grid=tuple(grid), block=tuple(block),
                      smem_bytes=smem, args=(), arch=arch)


def _blocks(n: int, threads: int) -> int:
    return max(1, -(-n // threads))


def embed_norm_spec(act: str, arch: str, threads: int = 1024) -> KernelSpec:
    return _spec("embed_norm", f"embed_norm<{_ctype(act)}, {threads}>", arch, (1, 1, 1), (threads, 1, 1))


def attention_threads(head_size: int) -> int:
    """Eight warps, each streaming its own positions: 256 threads, the most the kernel's merge
    buffer (THREADS * 8 floats, a head of up to 256 dimensions per warp) takes."""
    if head_size > 256:
        raise ValueError(f"head size {head_size} > 256: the attention kernel merges a thread a dimension")
    return 256


ATTENTION_BLOCKS_PER_SM = 2     # rope_attention's __launch_bounds__ (kernels/decode.cuh)


def attention_pairs(head_size: int) -> int:
    """Dimension pairs a lane holds: a warp covers the head, 64 dimensions a pair each."""
    return max(1, -(-head_size // 64))


def attention_batch(act: str, head_size: int) -> int:
    """Positions a warp has in flight, their K and V pairs in registers: 16 fp16 pairs a lane (8
    float ones) fit the 128 registers two blocks an SM leave without spills, at most 8 positions."""
    slots = 8 if _ctype(act) == "float" else 16
    return max(1, min(8, slots // attention_pairs(head_size)))


def attention_splits(n_heads: int, seq_len: int, sm_count: int) -> int:
    """Split-KV slices per head: as many blocks as the GPU holds at once (a block more starts a
    second wave, which costs a whole block's latency), none shorter than 32 positions (a slice that
    is empty at the current position exits at once)."""
    return max(1, min(ATTENTION_BLOCKS_PER_SM * sm_count // n_heads, seq_len // 32))


def attention_smem_bytes(threads: int) -> int:
    """Each warp's running max and sum for the merge: two floats a warp (the scores stay in
    registers, so the context's length does not enter)."""
    return 4 * 2 * (threads // 32)


def rope_attention_spec(n_heads: int, head_size: int, splits: int, act: str, arch: str,
                        threads: int | None = None) -> KernelSpec:
    threads = threads or attention_threads(head_size)
    elem = 4 if act == "float" else 2
    if head_size * elem % 16:
        raise ValueError(f"head size {head_size} x {elem} bytes is not a multiple of 16 (K/V rows are read "
                         "in 16-byte loads)")
    if not head_size <= threads <= 256 or threads % 32:
        raise ValueError(f"attention needs whole warps, head_size <= threads <= 256; got {threads} threads "
                         f"for head size {head_size}")
    smem = attention_smem_bytes(threads)
    expr = f"rope_attention<{_ctype(act)}, {threads}, {attention_batch(act, head_size)}, {attention_pairs(head_size)}>"
    return _spec("rope_attention", expr, arch, (n_heads, splits, 1), (threads, 1, 1), smem)


def gemv_dense_spec(n: int, k: int, weight: str, act: str, out: str, arch: str, warps: int = 4,
                    unroll: int = 4, epilogue: str = "store") -> KernelSpec:
    """out (n) = W (n, k) . x, one warp a row, then `epilogue` (templates/epilogue.py).
    weight: fp32 | fp16 | int8 (per-row fp16 scale)."""
    if weight not in WEIGHT_TYPES:
        raise ValueError(f"dense weight format must be one of {sorted(WEIGHT_TYPES)}, got {weight!r}")
    if k * WEIGHT_BYTES[weight] % 16:
        raise ValueError(f"{weight} rows of {k} elements are not 16-byte aligned (k * {WEIGHT_BYTES[weight]} % 16 != 0)")
    epi = epilogue_id(epilogue)
    if pairs_rows(epilogue) and (warps % 2 or n % 2):
        raise ValueError(f"the {epilogue} epilogue pairs rows: warps ({warps}) and n ({n}) must be even")
    expr = f"gemv_dense<{WEIGHT_TYPES[weight]}, {_ctype(act)}, {_ctype(out)}, {warps}, {unroll}, {epi}>"
    return _spec(f"gemv_dense_{weight}", expr, arch, (_blocks(n, warps), 1, 1), (32 * warps, 1, 1))


ARGMAX_SLICE = 2048      # logits a block of argmax_step takes: 16 blocks for a 32000-token vocabulary


def argmax_blocks(vocab: int) -> int:
    return _blocks(vocab, ARGMAX_SLICE)


def argmax_spec(act: str, arch: str, vocab: int, threads: int = 256) -> KernelSpec:
    return _spec("argmax_step", f"argmax_step<{_ctype(act)}, {threads}>", arch, (argmax_blocks(vocab), 1, 1),
                 (threads, 1, 1))
