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


def _spec(name: str, expr: str, arch: str, block: int, smem: int = 0) -> KernelSpec:
    return KernelSpec(family="prefill", workload_key=f"prefill:{name}", config=(("kernel", expr),),
                      source=kernel_source(HEADER), name_expression=expr, grid=(1, 1, 1), block=(block, 1, 1),
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
