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

import math
import random

from autosched.space import ConfigError, Constraint, Knob, Space
from autosched.templates import gemm_model
from autosched.templates.base import ArgSpec, KernelSpec, MicroKernelTemplate, kernel_source
from autosched.templates.gemm_tiles import threads, tile_use, warp_register_rule
from autosched.templates.hgemm_ladder import ladder_rungs
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


class HgemmDynTemplate(MicroKernelTemplate):
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

    # -- as a micro-kernel (its sketch below) --------------------------------------------------------
    exports_every_layout = True

    def sample(self, space, extents, rng, local_pad: int = 1) -> dict:
        return sample(space, extents, rng, local_pad=local_pad)

    def mutate(self, space, config: dict, rng, extents) -> dict | None:
        return mutate(space, config, rng, extents)

    def describe(self, config: dict) -> str:
        return describe(config)

    def short(self, config: dict) -> str:
        c = config
        return f"mma {c['bm']}x{c['bn']} warp {c['wm']}x{c['wn']} bk{c['bk']}"

    def unroll(self, config: dict) -> int:
        return unroll(config)

    def threads(self, config: dict) -> int:
        return threads(config["bm"], config["bn"], config["wm"], config["wn"])

    def tile(self, config: dict) -> tuple[int, int]:
        return config["bm"], config["bn"]

    def grid(self, M: int, N: int, config: dict, sm_count: int) -> tuple[int, int, int]:
        return (-(-N // config["bn"]), -(-M // config["bm"]), 1)

    def c_grid(self, config: dict, N: int, sm_count: int) -> str:
        return f"dim3({-(-N // config['bn'])}, (M + {config['bm'] - 1}) / {config['bm']}, 1)"

    def ladder(self, space, N: int, m_max: int, sm_count: int) -> list[tuple[int, dict]]:
        return ladder_rungs(self.family, space, N, m_max, sm_count)

    def resources(self, config: dict, workload, device) -> tuple[int, int, int, int]:
        """What the tiles need, as ptxas caps it under the kernel's __launch_bounds__ (the rest spills)."""
        c = config
        t = self.threads(c)
        need = registers_needed(c["wm"], c["wn"])
        regs = min(need, launch_bounds_registers(t, device))
        return t, regs, need - regs, smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"], workload.b_col)

    def modelled(self, config: dict, M: int, N: int, K: int, spec, device) -> tuple[float, int]:
        b_col = int("b_col=1" in spec.workload_key)
        return modelled_us(config, M, N, K, b_col, device), modelled_registers(config, device)

    def probe_features(self, config: dict, workload, device) -> list[float]:
        c = config
        d = self.derived_features(c, {**workload.params}, device)
        return [math.log2(c[k] + 1) for k in ("bm", "bn", "wm", "wn", "bk", "stages", "pad", "local_pad")] + [
            math.log2(d["threads"]), math.log2(d["unroll"]), float(d["blocks_per_sm"])]

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


# -- the micro-kernel's sketch: tiles sampled jointly, mutated without touching those bound to threads --
# Its tiles, per dimension, from the outside in:
#
#     M:  grid rows (ceil(M/BM), dynamic) | warps_m (threadIdx) | mt: 16-row MMA tiles a warp holds
#     N:  grid cols                       | warps_n (threadIdx) | nt: 16-column pairs of MMA tiles
#     K:  slices (K/BK)                   | ks: k16 steps of a slice
#
# so BM = warps_m * 16 * mt, BN = warps_n * 16 * nt, BK = 16 * ks.  `sample` draws (warps_m, warps_n)
# first (the block's threads), then the inner tiles (mt, nt) that the register file admits for that
# many threads, then ks, stages and padding that the shared memory admits: all jointly, each draw
# among the values the earlier ones leave valid, none required to divide any extent.  The unroll
# factor is never drawn: it is mt * 2nt * ks (`unroll`), so a mutated config stays consistent.
THREAD_TILES = ("warps_m", "warps_n")
INNER_TILES = ("mt", "nt", "ks")


def decision(config: dict) -> dict:
    """A config's tile decision: the thread-bound tiles and the inner ones."""
    return {"warps_m": config["bm"] // config["wm"], "warps_n": config["bn"] // config["wn"],
            "mt": config["wm"] // 16, "nt": config["wn"] // 16, "ks": config["bk"] // 16,
            "stages": config["stages"], "pad": config["pad"], "local_pad": config["local_pad"]}


def config_of(d: dict) -> dict:
    wm, wn = 16 * d["mt"], 16 * d["nt"]
    return {"bm": d["warps_m"] * wm, "bn": d["warps_n"] * wn, "wm": wm, "wn": wn, "bk": 16 * d["ks"],
            "stages": d["stages"], "pad": d["pad"], "local_pad": d["local_pad"]}


def _options(space: Space, extents: tuple[int, int]) -> dict:
    m_max, n = extents
    cap_m = max(16, -(-m_max // 16) * 16)       # no block taller than the largest M needs
    cap_n = max(16, -(-n // 16) * 16)
    return {
        "warps": [(a, b) for a in range(1, 17) for b in range(1, 17) if 2 <= a * b <= 32],
        "mt": [v // 16 for v in WARP_TILES], "nt": [v // 16 for v in WARP_TILES],
        "ks": [v // 16 for v in space.knob("bk").values], "stages": list(space.knob("stages").values),
        "pad": list(space.knob("pad").values), "cap": (min(cap_m, BLOCK_TILES[-1]), min(cap_n, BLOCK_TILES[-1])),
    }


def sample(space: Space, extents: tuple[int, int], rng: random.Random, local_pad: int = 1,
           max_tries: int = 2000) -> dict:
    """One micro-kernel of `space` (templates.hgemm_dyn.micro_kernel_space), its tiles drawn jointly
    for the largest extents (M_max, N): ConfigError if none is found."""
    o = _options(space, extents)
    cap_m, cap_n = o["cap"]
    for _ in range(max_tries):
        wa, wb = rng.choice(o["warps"])
        # inner tiles the block's threads leave room for (registers: the space's rule) and that keep
        # the block within the largest extent
        inner = [(mt, nt) for mt in o["mt"] for nt in o["nt"]
                 if wa * 16 * mt <= cap_m and wb * 16 * nt <= cap_n]
        if not inner:
            continue
        mt, nt = rng.choice(inner)
        d = {"warps_m": wa, "warps_n": wb, "mt": mt, "nt": nt, "ks": rng.choice(o["ks"]),
             "stages": rng.choice(o["stages"]), "pad": rng.choice(o["pad"]), "local_pad": local_pad}
        cfg = config_of(d)
        if space.contains(cfg):
            return cfg
    raise ConfigError(f"no micro-kernel found for extents {extents} in {max_tries} draws")


def mutate(space: Space, config: dict, rng: random.Random, extents: tuple[int, int],
           max_tries: int = 50) -> dict | None:
    """A neighbour of `config` that keeps warps_m and warps_n (the tiles bound to threadIdx): a
    factor moved from one inner tile to another (mt -> ks, ...), one inner tile resampled, or the
    ring depth or padding changed.  None if no valid neighbour is found."""
    cap_m, cap_n = _options(space, extents)["cap"]
    base = decision(config)
    for _ in range(max_tries):
        d = dict(base)
        move = rng.random()
        if move < 0.4:                       # a factor of one inner tile moves to another
            src, dst = rng.sample(INNER_TILES, 2)
            f = rng.choice([x for x in (2, 3) if d[src] % x == 0] or [1])
            if f == 1:
                continue
            d[src] //= f
            d[dst] *= f
        elif move < 0.8:                     # one inner tile takes a new size
            t = rng.choice(INNER_TILES)
            d[t] = rng.choice([v // 16 for v in (space.knob("bk").values if t == "ks" else WARP_TILES)])
        else:
            knob = rng.choice(("stages", "pad"))
            d[knob] = rng.choice(space.knob(knob).values)
        if d == base or d["warps_m"] * 16 * d["mt"] > cap_m or d["warps_n"] * 16 * d["nt"] > cap_n:
            continue
        try:
            cfg = config_of(d)
        except KeyError:
            continue
        if space.contains(cfg):
            return cfg
    return None


def describe(config: dict) -> str:
    d = decision(config)
    return (f"{config['bm']}x{config['bn']}x{config['bk']} warps {d['warps_m']}x{d['warps_n']} "
            f"warp {config['wm']}x{config['wn']} st{config['stages']} pad{config['pad']} "
            f"lp{config['local_pad']} unroll {unroll(config)}")


# -- the synthetic runner's model of it (templates/gemm_model.py) ------------------------------------

def registers_wanted(config: dict) -> int:
    return registers_needed(config["wm"], config["wn"]) + (6 if not config["local_pad"] else 0)


def modelled_registers(config: dict, device) -> int:
    """As ptxas would allocate: capped by the kernel's __launch_bounds__ (the rest spills)."""
    c = config
    return min(registers_wanted(c), launch_bounds_registers(threads(c["bm"], c["bn"], c["wm"], c["wn"]), device))


def modelled_us(config: dict, M: int, N: int, K: int, b_col: int, device) -> float:
    """Waves of blocks at a per-tile rate growing with the tile's intensity and unroll, falling with a
    2-slot ring, unpadded rows, guarded compute and spills; latency hidden by the warps an SM holds;
    the memory floor, launch and noise.  MODELLED, not measured."""
    c = config
    t = threads(c["bm"], c["bn"], c["wm"], c["wn"])
    regs = modelled_registers(c, device)
    bps = blocks_per_sm(t, regs, smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"], b_col), device)
    if bps < 1:
        return float("nan")
    tiles = -(-M // c["bm"]) * -(-N // c["bn"])
    ai = c["bm"] * c["bn"] / (c["bm"] + c["bn"])                 # flops per loaded element, per k
    eff = min(1.0, ai / 48.0) * min(1.0, (unroll(c) / 8.0) ** 0.25)
    eff *= 0.85 if c["stages"] == 2 else 1.0
    eff *= 0.9 if c["pad"] == 0 else 1.0
    eff *= 0.93 if not c["local_pad"] else 1.0                 # predicates in the compute loop
    eff *= 0.6 if regs > 200 or regs < registers_wanted(c) else 1.0     # spills

    def wave_us(resident: int) -> float:
        # `resident` blocks share one SM: latency hiding grows with the warps it holds
        warps = resident * t / 32
        occ = min(1.0, 0.35 + 0.65 * warps / 16)
        flops = resident * 2.0 * c["bm"] * c["bn"] * K
        return flops / (gemm_model.PEAK_SM_TFLOPS * 1e12 * eff * occ) * 1e6

    per_wave = bps * device.sm_count
    full, rem = divmod(tiles, per_wave)
    us = full * wave_us(bps) + (wave_us(-(-rem // device.sm_count)) if rem else 0.0)
    return (max(us, gemm_model.floor_us(M, N, K)) + gemm_model.LAUNCH_US) * gemm_model.noise(c, M, N, K)
