"""hgemm_dyn: the FP16 tensor-core micro-kernel of a dynamic-M GEMM (DietCode), kernels/hgemm_dyn.cuh.

One config is compiled once and launched for every M of a range, so its space does not depend on M
(no rule reads it: a 128-row block is as valid for M = 1 as for M = 4096; the cost model, not the
space, says which M it suits).  Tiles are any multiples of 16 (BM = warps * WM), not divisors of a
shape.  UNROLL is not a knob: `unroll(config)` derives it as the product of the inner tile sizes and
the kernel's static_assert holds render to it.  `local_pad` chooses padded tiles (1: predicate-free
compute loop) or guarded loads and compute (0); see the header.

Not in the registry's hgemm family: `autosched tune hgemm` keeps searching the static templates;
autosched.dynamic renders this one.
"""

from __future__ import annotations

from autosched.space import Constraint, Knob, Space
from autosched.templates.base import ArgSpec, KernelSpec, Template, kernel_source
from autosched.templates.gemm_tiles import threads, tile_use, warp_register_rule
from autosched.templates.hgemm_mma import MAX_ACC, MAX_REGS, REG_OVERHEAD, registers_needed, smem_bytes
from autosched.workloads.base import WorkloadError

_ARG_ORDER = ("B_COL", "BM", "BN", "BK", "WM", "WN", "STAGES", "PAD", "LOCAL_PAD", "UNROLL")
WARP_TILES = tuple(range(16, 129, 16))          # WM, WN: 1..8 tiles of 16
BLOCK_TILES = tuple(range(16, 257, 16))         # BM, BN: up to 256
VECTOR_BYTES = 16                               # cp.async moves 16 bytes (8 halves) a chunk
# thread-count and smem limits come from the device; this is the per-SM block cap of every GPU
# since Volta (32 resident blocks), which the occupancy estimate below also needs
MAX_BLOCKS_PER_SM = 32


def unroll(config: dict) -> int:
    """MMAs a warp issues per K slice: (WM/16) * (WN/8) * (BK/16), the product of the inner tiles;
    the compute loop is unrolled exactly this far."""
    return (config["wm"] // 16) * (config["wn"] // 8) * (config["bk"] // 16)


# registers are allocated a warp at a time in units of 256 (8 a thread) on every GPU since Maxwell
REG_ALLOC_UNIT = 256
MAX_THREAD_REGISTERS = 255


def smem_reserved_per_block(device) -> int:
    """Shared memory the runtime reserves per resident block (1 KB on sm_80 and sm_90): what an SM
    has beyond the most one block may opt in to."""
    return max(0, device.smem_per_sm - device.smem_per_block_optin)


def launch_bounds_registers(nthreads: int, device) -> int:
    """The most registers a thread ptxas leaves a kernel of __launch_bounds__(nthreads) (the
    template's): one block must fit the register file in whole allocation units (more spill)."""
    warps = -(-nthreads // device.warp_size)
    units = device.regs_per_block // (warps * REG_ALLOC_UNIT)
    return min(MAX_THREAD_REGISTERS, units * REG_ALLOC_UNIT // device.warp_size)


def blocks_per_sm(nthreads: int, registers: int, smem: int, device) -> int:
    """Resident blocks an SM holds, from the compile report (threads, registers a thread, shared
    memory a block): the least of the thread, register-file, shared-memory and block limits, by the
    CUDA occupancy rules (registers allocated per warp in units of REG_ALLOC_UNIT, each block's shared
    memory plus the runtime's reserve)."""
    warps = -(-nthreads // device.warp_size)
    regs_per_warp = -(-max(1, registers) * device.warp_size // REG_ALLOC_UNIT) * REG_ALLOC_UNIT
    per_block = max(1, smem) + smem_reserved_per_block(device)
    return max(0, min(device.max_threads_per_sm // (warps * device.warp_size),
                      device.regs_per_sm // (regs_per_warp * warps), device.smem_per_sm // per_block,
                      MAX_BLOCKS_PER_SM))


class HgemmDynTemplate(Template):
    family = "hgemm_dyn"
    workload_name = "hgemm"
    header = "hgemm_dyn.cuh"

    def refuses(self, workload) -> str | None:
        why = super().refuses(workload)
        if why is not None:
            return why
        if workload.bf16:
            return "its kernel reads FP16 inputs only, not bf16"
        if workload.blocked or workload.a_col:
            return f"its kernel reads A row-major (layouts nn and nt), not layout {workload.layout}"
        return None

    def space(self, workload, device) -> Space:
        why = self.refuses(workload)
        if why is not None:
            raise WorkloadError(f"{self.family} cannot serve {workload.key}: {why}")
        return micro_kernel_space(workload.N, workload.b_col, device)

    def default_config(self, workload, device) -> dict:
        cfg = {"bm": 128, "bn": 128, "wm": 64, "wn": 64, "bk": 32, "stages": 3, "pad": 8, "local_pad": 1}
        return self.space(workload, device).nearest(cfg)

    def derived_features(self, config: dict, params: dict, device) -> dict[str, float]:
        c, M, N = config, params["M"], params["N"]
        t = threads(c["bm"], c["bn"], c["wm"], c["wn"])
        smem = smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"], params.get("b_col", 0))
        per_sm = max(1, blocks_per_sm(t, registers_needed(c["wm"], c["wn"]), smem, device))
        blocks = -(-M // c["bm"]) * -(-N // c["bn"])
        return {"threads": t, "blocks": blocks, "waves": blocks / (per_sm * device.sm_count),
                "blocks_per_sm": per_sm, "unroll": unroll(c),
                **tile_use(M, N, c["bm"], c["bn"])}

    def render(self, workload, config: dict, device) -> KernelSpec:
        cfg = self.space(workload, device).validate(config)
        M, N, K = workload.M, workload.N, workload.K
        values = {"B_COL": workload.b_col, "BM": cfg["bm"], "BN": cfg["bn"], "BK": cfg["bk"], "WM": cfg["wm"],
                  "WN": cfg["wn"], "STAGES": cfg["stages"], "PAD": cfg["pad"], "LOCAL_PAD": cfg["local_pad"],
                  "UNROLL": unroll(cfg)}
        return KernelSpec(
            family=self.family, workload_key=workload.key, config=tuple(sorted(cfg.items())),
            source=kernel_source(self.header), name_expression=name_expression(values),
            grid=(-(-N // cfg["bn"]), -(-M // cfg["bm"]), 1),
            block=(threads(cfg["bm"], cfg["bn"], cfg["wm"], cfg["wn"]), 1, 1),
            smem_bytes=smem_bytes(cfg["bm"], cfg["bn"], cfg["bk"], cfg["stages"], cfg["pad"], workload.b_col),
            args=(ArgSpec("A", "input", ctype="const half*"), ArgSpec("B", "input", ctype="const half*"),
                  ArgSpec("C", "output", ctype="half*"), ArgSpec("M", "scalar", value=M, ctype="int"),
                  ArgSpec("N", "scalar", value=N, ctype="int"), ArgSpec("K", "scalar", value=K, ctype="int")),
            arch=device.arch)


def name_expression(values: dict) -> str:
    return "hgemm_dyn<" + ", ".join(str(values[a]) for a in _ARG_ORDER) + ">"


def micro_kernel_space(N: int, b_col: int, device) -> Space:
    """Every micro-kernel the target admits for a GEMM of N columns: the rules are the target's
    (threads a block, registers a thread, shared memory a block, 16-byte vectors), none reads M."""
    knobs = [
        Knob("bm", BLOCK_TILES, "rows of C a block owns (warps_m * wm)"),
        Knob("bn", BLOCK_TILES, "columns of C a block owns (warps_n * wn)"),
        Knob("wm", WARP_TILES, "rows of C a warp owns (16-row MMA tiles)"),
        Knob("wn", WARP_TILES, "columns of C a warp owns (pairs of 8-column MMA tiles)"),
        Knob("bk", (16, 32, 48, 64), "K slice staged in shared memory"),
        Knob("stages", (2, 3, 4), "slices in the cp.async ring"),
        Knob("pad", (0, 8), "halves of padding per shared row (bank conflicts of ldmatrix)"),
        Knob("local_pad", (1, 0), "1: padded tiles, predicate-free compute; 0: guarded loads and compute"),
    ]
    C = Constraint
    ceil16 = lambda x: -(-x // 16) * 16    # noqa: E731
    rules = [
        C("BN no wider than N rounded up to 16", ("bn",), lambda bn: bn <= max(16, ceil16(N))),
        C("BM % WM == 0", ("bm", "wm"), lambda bm, wm: bm % wm == 0),
        C("BN % WN == 0", ("bn", "wn"), lambda bn, wn: bn % wn == 0),
        C(f"threads (BM/WM)*(BN/WN)*32 between 64 and {device.max_threads_per_block}", ("bm", "bn", "wm", "wn"),
          lambda bm, bn, wm, wn: 64 <= threads(bm, bn, wm, wn) <= device.max_threads_per_block),
        C(f"accumulators WM*WN/32 <= {MAX_ACC} a thread", ("wm", "wn"), lambda wm, wn: wm * wn // 32 <= MAX_ACC),
        warp_register_rule(registers_needed, REG_OVERHEAD, MAX_REGS, device),
        C(f"vector width: shared rows of whole {VECTOR_BYTES}-byte chunks", ("bn", "bk"),
          lambda bn, bk: (2 * bk) % VECTOR_BYTES == 0 and (2 * bn) % VECTOR_BYTES == 0),
        C(f"shared memory <= {device.smem_per_block_optin} B a block", ("bm", "bn", "bk", "stages", "pad"),
          lambda bm, bn, bk, st, pad: smem_bytes(bm, bn, bk, st, pad, b_col) <= device.smem_per_block_optin),
    ]
    return Space(knobs, rules)
