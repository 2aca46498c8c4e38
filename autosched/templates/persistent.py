"""The persistent decode step (kernels/persistent_step.cuh): its KernelSpec, how big its grid may be,
and a Python model of how it partitions a step's work over that grid (CPU tests check the model
covers every row and head exactly once; the kernel computes the same spans).

    spec = persistent_step_spec(cfg, "sm_90")           # grid (1,1,1): the engine sets it at load
    g = grid_blocks(blocks_per_sm(regs, THREADS, smem, static), sm_count)
    nsplit = persistent_splits(cfg, g)

Only fp16 weights so far (the q4f16_1 GEMV has its own tuned kernels; int8 and fp32 are not served
this way): `refusal(cfg, fmt)` says why a model or format cannot take it.
"""

from __future__ import annotations

from autosched.templates.base import KernelSpec, kernel_source
from autosched.templates.decode import attention_pairs, attention_smem_bytes

HEADER = "persistent_step.cuh"
THREADS = 256          # attention_item's merge buffer takes at most 256
MIN_BLOCKS = 2         # __launch_bounds__: <= 128 registers, so two blocks share an SM
CHUNK = 256            # rows a block finishes at a time (floats of shared memory)
UNROLL = 4             # 16-byte weight loads in flight per lane
KPRE = 4               # positions each warp of attention_item has in flight (rope_attention: 8)
FORMATS = ("fp16",)

# H100 / sm_90 SM limits used by the occupancy model (the driver's answer wins on a GPU)
SM_REGISTERS = 65536
SM_THREADS = 2048
SM_BLOCKS = 32
SM_SMEM = 228 * 1024
BLOCK_SMEM_RESERVED = 1024       # the driver keeps 1 KB of shared memory per block
REG_ALLOC_UNIT = 256             # registers are given to a warp in units of 256


def refusal(cfg, fmt: str) -> str | None:
    """Why the persistent step cannot serve `cfg` in `fmt` (None: it can)."""
    if fmt not in FORMATS:
        return (f"the persistent decode step serves {', '.join(FORMATS)} weights only; a {fmt} engine uses the "
                "per-kernel step (persistent=False)")
    hs = cfg.head_size
    q_dim = cfg.n_heads * hs
    if hs > THREADS or hs % 8:
        return f"head size {hs}: the persistent step needs a multiple of 8 up to {THREADS}"
    if cfg.n_heads % cfg.n_kv_heads:
        return f"{cfg.n_heads} heads do not group over {cfg.n_kv_heads} kv heads"
    for name, k in (("dim", cfg.dim), ("n_heads * head_size", q_dim), ("hidden_dim", cfg.hidden_dim)):
        if k % 8:
            return f"{name} = {k}: matmul rows are read in 16-byte loads (a multiple of 8 fp16 needed)"
    return None


def attention_floats() -> int:
    """attention_item's dynamic floats: each warp's running max and sum for the merge (the scores
    stay in registers, so neither the context nor the slice enters)."""
    return attention_smem_bytes(THREADS) // 4


def smem_bytes() -> int:
    """The step's dynamic shared memory: a CHUNK of finished rows, or the attention's merge."""
    return 4 * max(attention_floats(), CHUNK)


def persistent_splits(cfg, grid: int) -> int:
    """Slices a head: as many as give every block of the grid an item, none shorter than 32
    positions."""
    return max(min(grid // cfg.n_heads, cfg.seq_len // 32), 1)


def blocks_per_sm(registers: int, threads: int, smem: int, static_smem: int = 0) -> int:
    """Co-resident blocks an SM holds (the CUDA occupancy rules for sm_90, from the compile report);
    0 when one block does not fit."""
    warps = -(-threads // 32)
    regs_per_warp = -(-max(registers, 1) * 32 // REG_ALLOC_UNIT) * REG_ALLOC_UNIT
    by_regs = SM_REGISTERS // (regs_per_warp * warps)
    by_threads = SM_THREADS // (warps * 32)
    per_block = smem + static_smem + BLOCK_SMEM_RESERVED
    by_smem = SM_SMEM // per_block
    return max(0, min(by_regs, by_threads, by_smem, SM_BLOCKS))


def grid_blocks(per_sm: int, sm_count: int) -> int:
    """The cooperative grid: every block co-resident (grid_sync waits for all of them)."""
    if per_sm < 1:
        raise ValueError("the persistent step does not fit one block an SM (registers or shared memory)")
    return per_sm * sm_count


def span(units: int, block: int, grid: int) -> tuple[int, int]:
    """Block `block`'s units [lo, hi) (span_lo in the kernel)."""
    return units * block // grid, units * (block + 1) // grid


def partition(cfg, grid: int, nsplit: int) -> dict[str, list]:
    """phase -> per block the list of what it computes: rows of each matmul (gate_up in pairs) and
    attention items (head, slice), as the kernel assigns them."""
    q_dim = cfg.n_heads * cfg.head_size
    rows = {"qkv": (q_dim + 2 * cfg.kv_dim, 1), "o": (cfg.dim, 1), "gate_up": (cfg.hidden_dim, 2),
            "down": (cfg.dim, 1), "cls": (cfg.vocab_size, 1)}
    out = {}
    for name, (units, unit) in rows.items():
        out[name] = [list(range(unit * span(units, b, grid)[0], unit * span(units, b, grid)[1])) for b in range(grid)]
    items = cfg.n_heads * nsplit
    out["attention"] = [[(i % cfg.n_heads, i // cfg.n_heads) for i in range(b, items, grid)] for b in range(grid)]
    return out


PHASE_TIMES_MACRO = "-DAUTOSCHED_PHASE_TIMES"
PHASE_KINDS = ("qkv", "attn", "o", "gate_up", "down")     # a layer's phases, in the kernel's order


def phase_names(n_layers: int) -> list[str]:
    """The step's phases in the kernel's order (its phase_times index): embed, per layer the five of
    PHASE_KINDS as "l<i>.<kind>", cls (matmul, block argmax, ticket), argmax (the last block)."""
    return ["embed", *(f"l{i}.{k}" for i in range(n_layers) for k in PHASE_KINDS), "cls", "argmax"]


def persistent_step_spec(cfg, arch: str, phase_times: bool = False) -> KernelSpec:
    """The kernel, its grid left at 1 block: the engine sizes it from the occupancy at load.
    phase_times: the instrumented build (-DAUTOSCHED_PHASE_TIMES: one more argument, a u64 buffer
    of (phases, grid, 3) timestamps; engine/phase_times.py); off, the spec is the plain one."""
    problem = refusal(cfg, "fp16")
    if problem:
        raise ValueError(problem)
    expr = f"persistent_step<{THREADS}, {MIN_BLOCKS}, {CHUNK}, {UNROLL}, {KPRE}, {attention_pairs(cfg.head_size)}>"
    return KernelSpec(family="decode", workload_key="decode:persistent_step", config=(("kernel", expr),),
                      source=kernel_source(HEADER), name_expression=expr, grid=(1, 1, 1), block=(THREADS, 1, 1),
                      smem_bytes=smem_bytes(), args=(), arch=arch,
                      options=(PHASE_TIMES_MACRO,) if phase_times else ())
