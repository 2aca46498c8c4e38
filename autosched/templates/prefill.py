"""KernelSpecs of the batched prefill's kernels besides the GEMM (kernels/prefill.cuh).

Their grids depend on the prompt length, so a spec's grid is a placeholder (1, 1, 1): the engine
launches them with the grid of the call (launch.LoadedKernel.launch).  Sizes are arguments, except
the attention kernel's head size and tiles, which are template arguments (its registers hold a
thread's share of a query tile's output).
"""

from __future__ import annotations

from autosched.templates.base import KernelSpec, kernel_source

HEADER = "prefill.cuh"
ROW_THREADS = 256               # a block a row for the norms, rope and the KV write
ATTENTION_THREADS = 256         # prefill_attention's 16 x 16 grid of threads
ATTENTION_BQ, ATTENTION_BKV = 64, 32
ELEMENTWISE_THREADS = 256


def _spec(name: str, expr: str, arch: str, block: int, smem: int = 0, header: str = HEADER) -> KernelSpec:
    return KernelSpec(family="prefill", workload_key=f"prefill:{name}", config=(("kernel", expr),),
                      source=kernel_source(header), name_expression=expr, grid=(1, 1, 1), block=(block, 1, 1),
                      smem_bytes=smem, args=(), arch=arch)


def embed_spec(arch: str) -> KernelSpec:
    return _spec("embed_rows_norm", f"embed_rows_norm<{ROW_THREADS}>", arch, ROW_THREADS)


def add_norm_spec(arch: str) -> KernelSpec:
    return _spec("add_norm_rows", f"add_norm_rows<{ROW_THREADS}>", arch, ROW_THREADS)


def swiglu_spec(arch: str) -> KernelSpec:
    return _spec("swiglu_rows", "swiglu_rows", arch, ELEMENTWISE_THREADS)


def rope_kv_spec(arch: str) -> KernelSpec:
    return _spec("rope_kv_rows", f"rope_kv_rows<{ROW_THREADS}>", arch, ROW_THREADS)


def attention_smem_bytes(head_size: int, bq: int = ATTENTION_BQ, bkv: int = ATTENTION_BKV) -> int:
    """Q and K tiles in rows of head_size + 4 floats, V in rows of head_size, P in rows of bkv + 4."""
    return 4 * ((bq + bkv) * (head_size + 4) + bkv * head_size + bq * (bkv + 4))


def check_head_size(head_size: int) -> None:
    """The kernel's rules (static_asserts in prefill.cuh), checked before NVRTC."""
    if head_size % 16 or not 16 <= head_size <= 256:
        raise ValueError(f"prefill attention needs a head size that is a multiple of 16 in 16..256, got {head_size}")


def attention_grid(n_q: int, n_heads: int, bq: int = ATTENTION_BQ) -> tuple[int, int, int]:
    return (-(-n_q // bq), n_heads, 1)


def attention_spec(head_size: int, arch: str, bq: int = ATTENTION_BQ, bkv: int = ATTENTION_BKV) -> KernelSpec:
    check_head_size(head_size)
    if bq % 16 or bkv % 16:
        raise ValueError(f"query and key tiles must be multiples of 16, got {bq}, {bkv}")
    return _spec("prefill_attention", f"prefill_attention<{head_size}, {bq}, {bkv}, {ATTENTION_THREADS}>", arch,
                 ATTENTION_THREADS, attention_smem_bytes(head_size, bq, bkv))


# -- the tensor-core attention (kernels/prefill_attention_tc.cuh) ------------------------------------
TC_HEADER = "prefill_attention_tc.cuh"
TC_BK = 64                      # keys a K / V tile (autosched_attn_tc::BK)
TC_BQS = (64, 128)              # query tiles: 4 or 8 warps of 16 rows
# Head sizes: the MMA's k is 16, and a warp's O (16 x HS) and S (16 x 64) live in fp32 registers: up to
# 128 ptxas keeps them all (162 registers at 128); at 80 and 96 it settles on 128 registers and spills 8
# bytes (NVRTC 13, sm_90), so those stay on the CUDA-core kernel.
TC_HEAD_SIZES = (16, 32, 48, 64, 112, 128)


def tc_attention_refuses(head_size: int, bq: int = 128) -> str | None:
    """Why prefill_attention_tc cannot serve (head_size, bq), or None: its static_asserts, checked
    before NVRTC."""
    if head_size not in TC_HEAD_SIZES:
        return f"head size {head_size}: the tensor-core attention serves {', '.join(map(str, TC_HEAD_SIZES))}"
    if bq not in TC_BQS:
        return f"query tile {bq}: the tensor-core attention has tiles of {' or '.join(map(str, TC_BQS))}"
    return None


def tc_attention_threads(bq: int) -> int:
    return bq // 16 * 32


def tc_attention_smem_bytes(head_size: int, bq: int) -> int:
    """fp16 Q [bq] and two K and two V tiles [TC_BK], in rows of head_size + 8 halves."""
    return 2 * (head_size + 8) * (bq + 4 * TC_BK)


def tc_attention_bq(n_q: int, n_heads: int, sm_count: int) -> int:
    """The query tile of a prompt of n_q tokens: 128 rows (K and V read once per 128 queries) where that
    still gives at least two blocks an SM, else 64 (a 512-token 7B prompt: 256 blocks, not 128 on 132
    SMs).  A rule, not a measurement: `scripts/timing.py prefill-attn` times both tiles."""
    return 128 if -(-n_q // 128) * n_heads >= 2 * sm_count else 64


def tc_attention_spec(head_size: int, arch: str, bq: int = 128) -> KernelSpec:
    why = tc_attention_refuses(head_size, bq)
    if why:
        raise ValueError(why)
    return _spec("prefill_attention_tc", f"prefill_attention_tc<{head_size}, {bq}>", arch, tc_attention_threads(bq),
                 tc_attention_smem_bytes(head_size, bq), header=TC_HEADER)


def dequant_q4_spec(arch: str) -> KernelSpec:
    return _spec("dequant_q4", "dequant_q4", arch, ELEMENTWISE_THREADS)


def dequant_int8_spec(arch: str) -> KernelSpec:
    return _spec("dequant_int8", "dequant_int8", arch, ELEMENTWISE_THREADS)


def elementwise_grid(n: int, sm_count: int, per_thread: int = 1) -> tuple[int, int, int]:
    """A grid-stride loop's grid: enough blocks for every item, at most 16 waves' worth of blocks."""
    need = -(-n // (ELEMENTWISE_THREADS * per_thread))
    return (max(1, min(need, 16 * 8 * sm_count)), 1, 1)


NIBBLE_CODES = {"natural": 0, "k": 1, "rows": 2}


def q4_layout(spec) -> tuple[int, int, int]:
    """(nibble code, n, k) of the A_q layout a q4f16_1 GEMV spec packs its weights in: the runtime
    arguments of dequant_q4."""
    a_q = next(a for a in spec.args if a.name == "A_q")
    p = a_q.params()
    scale = next(a for a in spec.args if a.name == "A_scale").params()
    if a_q.layout != "q4_words" or scale.get("n", 1) != p["n"]:
        raise ValueError(f"unexpected q4f16_1 layout {a_q.layout} {p}, scales {scale}")
    return NIBBLE_CODES[p["nibbles"]], p["n"], p["k"]
