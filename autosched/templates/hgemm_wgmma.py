"""The FP16/BF16 GEMM on Hopper's warpgroup tensor cores (kernels/hgemm_wgmma.cuh): TMA loads into
an mbarrier ring, one producer and one or two consumer warpgroups issuing wgmma, a persistent grid
walking a grouped raster, the epilogue through shared memory and TMA stores.

Knobs: the block tile (BM = 64 x consumers x 1 or 2 m64 blocks, BN = wgmma N), the swizzle (which
sets the K slice: BK = swizzle / 2 elements), the ring depth, the consumer warpgroups and the raster
group.  Serves nn, nt, tn and tt in FP16 and BF16 (wgmma transposes 16-bit operands in shared
memory); the operands reach the kernel as TMA tensor maps (ArgSpec role "tensormap", encoded per
buffer by autosched.runtime.encode_tensormap).  Needs sm_90 (compiled for sm_90a).

Split-K is a template of its own (templates/hgemm_wgmma_splitk.py): a knob here would change this
template's build id and config keys, staling every recording and database row of it.

Clusters of two CTAs sharing an operand by TMA multicast are a template of their own too
(templates/hgemm_wgmma_cluster.py), for the same reason; so are ping-pong consumers, an epilogue
staged a box at a time (which leaves a 128 x 256 tile a fourth ring slot) and wgmma N = 168
(templates/hgemm_wgmma_sched.py).

Not here: the blocked layout.
"""

from __future__ import annotations

import math
import random

from autosched.space import ConfigError, Constraint, Knob, Space
from autosched.templates import gemm_model
from autosched.templates.base import (ArgSpec, KernelSpec, MicroKernelTemplate, Template, default_and_random, distinct,
                                      kernel_source)
from autosched.templates.gemm_tiles import tile_use
from autosched.templates.hgemm_ladder import WG, ladder_rungs
from autosched.workloads.base import WorkloadError

MAX_ACC = 128           # accumulator floats a consumer thread holds: MW * BN / 2 (of 232 registers)
C_BOX = 64              # the epilogue stores 64 x 64 boxes (128 bytes of 16-bit values a row)
SMEM_CAP_SM90 = 232448  # the .cuh's static_assert: the sm_90 opt-in maximum per block

# within the .cuh's static_assert (2 to 16); the shared-memory rule leaves a 64 x 64 tile of 128B
# swizzle 12 slots at most, a 128 x 64 tile 8
STAGE_VALUES = (2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16)

_ARG_ORDER = ("BF16", "A_MN", "B_MN", "BM", "BN", "SWZ", "STAGES", "CONSUMERS", "GROUP")


def bk_of(swizzle: int) -> int:
    """K elements a slot holds: one swizzle row of 16-bit values."""
    return swizzle // 2


GROUP_VALUES = (1, 4, 8, 16)


def _group_before(g: int) -> int:
    """The raster group value before `g` in GROUP_VALUES."""
    return GROUP_VALUES[GROUP_VALUES.index(g) - 1]


def smem_bytes(bm, bn, swizzle, stages) -> int:
    """The ring (STAGES slots of A and B), the output staging (BM x BN halves), 2 x STAGES mbarriers
    and 1024 bytes to align the base to the swizzle atom: HgemmWgmma::SMEM_BYTES."""
    return stages * (bm + bn) * swizzle + bm * bn * 2 + 2 * stages * 8 + 1024


def a_box_rows(M: int, bm: int) -> int:
    """HgemmWgmma::a_rows of a K-major A: min(BM, M rounded up to 16)."""
    return min(bm, -(-M // 16) * 16)


def m_blocks(bm, consumers) -> int:
    """m64 blocks a consumer warpgroup owns (0 where BM is no multiple of 64 x consumers)."""
    return bm // (64 * consumers) if bm % (64 * consumers) == 0 else 0


def tensormap_params(of: str, dtype: str, dims: tuple, row_bytes: int, box: tuple, swizzle: int) -> tuple:
    """The layout_params of a "tensormap" ArgSpec: a 2-d tensor of 16-bit `dtype` with `dims`
    (innermost first, elements), the stride of its outer dimension in bytes, the box TMA moves
    (innermost first) and the swizzle in bytes (0: none).  `of`: "input" or "output" (the buffer
    the map points into)."""
    return tuple(sorted({"of": of, "dtype": dtype, "dims": tuple(dims), "strides": (row_bytes,),
                         "box": tuple(box), "swizzle": swizzle}.items()))


class HgemmWgmmaTemplate(Template):
    probe_shapes = ("200x264x200_bt",)        # B transposed (the sanitizer shapes' _bt is refused)
    family = "hgemm_wgmma"
    workload_name = "hgemm"
    header = "hgemm_wgmma.cuh"
    dynamic_m = False         # True: no rule reads M (HgemmWgmmaDynTemplate)

    def refuses(self, workload) -> str | None:
        """The kernel reads the row layouts through TMA, whose row strides must be multiples of 16
        bytes: N % 8 for C (and for a row-major B), K % 8 or M % 8 for the stored rows of A and B
        (the workload already demands all but C's)."""
        why = super().refuses(workload)
        if why is not None:
            return why
        if workload.blocked:
            return "its kernel reads row layouts through TMA, not the blocked 16x16 tiles (bb)"
        if workload.N % 8:
            return (f"N={workload.N}: its TMA store writes C rows of N values, which must be a multiple of "
                    "8 (16 bytes)")
        return None

    def default_on(self, device) -> bool:
        # its default reaches about three times mma.sync's rate (bench/results/hgemm-*-2026-11-23.json)
        return self.device_refuses(device) is None

    def device_refuses(self, device) -> str | None:
        """wgmma, setmaxnreg and the sm_90a target exist on compute capability 9.0 only."""
        if tuple(device.cc) != (9, 0):
            return (f"wgmma and setmaxnreg need an sm_90 GPU (compiled for sm_90a); {device.name} is "
                    f"{device.arch}")
        return None

    def space(self, workload, device) -> Space:
        why = self.refuses(workload)
        if why is not None:
            raise WorkloadError(f"{self.family} cannot serve {workload.key}: {why}")
        return self._space(workload, device)

    def _space(self, workload, device) -> Space:
        M, N = workload.M, workload.N
        knobs = [
            Knob("bm", (64, 128, 256), "rows of C a CTA tile holds: 64 x consumers x m64 blocks each"),
            Knob("bn", (64, 128, 192, 256), "columns of C a CTA tile holds: the wgmma N"),
            Knob("consumers", (1, 2), "consumer warpgroups issuing wgmma (one producer beside them)"),
            Knob("swizzle", (32, 64, 128), "TMA and wgmma swizzle in bytes; the K slice is swizzle/2"),
            Knob("stages", STAGE_VALUES, "slots in the TMA ring (deep rings keep a skinny GEMM's DRAM busy)"),
            Knob("group", GROUP_VALUES, "tile rows walked together by the persistent raster (L2 reuse)"),
        ]
        C = Constraint
        dev_why = self.device_refuses(device)
        tiles_m = lambda bm: -(-M // bm)  # noqa: E731
        m_rules = [
            # a tile twice the size that covers the matrix only adds zero-filled work
            C("BM no larger than the smallest tile height that covers M", ("bm",), lambda bm: bm == 64 or bm // 2 < M),
            # groups at or past M's tile rows all walk one order, so only the first of them is kept,
            # 4 where M has two tile rows (there is no 2): walked together, the two CTAs that read one
            # B tile run side by side (bench/results/checks/bench-hgemm-raster-group-2026-11-27.log)
            C("raster group 1, or the smallest group value past the one before it reaches M's tile rows",
              ("bm", "group"), lambda bm, g: g == 1 or _group_before(g) < tiles_m(bm)),
        ]
        rules = [
            C("BM = 64 x consumers x 1 or 2 (m64 blocks a consumer warpgroup owns)", ("bm", "consumers"),
              lambda bm, c: m_blocks(bm, c) in (1, 2)),
            C(f"accumulators MW x BN / 2 <= {MAX_ACC} a consumer thread", ("bm", "bn", "consumers"),
              lambda bm, bn, c: m_blocks(bm, c) * bn // 2 <= MAX_ACC),
            C("BN no larger than the smallest tile width that covers N", ("bn",), lambda bn: bn == 64 or bn // 2 < N),
            *([] if self.dynamic_m else m_rules),
            C(f"shared memory <= {min(device.smem_per_block_optin, SMEM_CAP_SM90)} B a block (ring + output "
              "staging + barriers + alignment)", ("bm", "bn", "swizzle", "stages"),
              lambda bm, bn, sw, st: smem_bytes(bm, bn, sw, st) <= min(device.smem_per_block_optin, SMEM_CAP_SM90)),
        ]
        if dev_why is not None:        # an empty space that says why, rather than kernels that cannot run
            rules.insert(0, C(dev_why, ("bm",), lambda bm: False))
        return Space(knobs, rules)

    def derived_features(self, config: dict, params: dict, device) -> dict[str, float]:
        """Tiles, the persistent waves over the SMs, tile use in M and N, shared memory."""
        c, M, N = config, params["M"], params["N"]
        rows, cols = self.tile(c)
        tiles = -(-M // rows) * -(-N // cols)
        out = {"tiles": tiles, "waves": tiles / device.sm_count,
               "smem_bytes": self.smem(c),
               **tile_use(M, N, rows, cols)}
        return out

    def default_config(self, workload, device) -> dict:
        """The config `ops.hgemm` serves this M by default: the wave-model ladder over
        hgemm_ladder.WGMMA_CANDIDATES (128 x 256 tiles of two consumers, 3 slots, where the tiles fill
        the GPU; 64-row tiles with deeper rings where they do not: H100, 128x4096x4096_bt, 22.9 us
        against 49.6 for 128 x 256), as the point of this shape's space nearest it."""
        why = self.device_refuses(device)
        if why is not None:
            raise WorkloadError(f"{self.family} cannot serve {workload.key} here: {why}")
        return ladder_rungs(WG, self.space(workload, device), workload.N, workload.M, device.sm_count)[-1][1]

    def kernel_values(self, workload, cfg: dict) -> dict:
        return {"BF16": workload.bf16, "A_MN": workload.a_col, "B_MN": 1 - workload.b_col, "BM": cfg["bm"],
                "BN": cfg["bn"], "SWZ": cfg["swizzle"], "STAGES": cfg["stages"], "CONSUMERS": cfg["consumers"],
                "GROUP": cfg["group"]}

    def tensormaps(self, workload, cfg: dict) -> tuple[ArgSpec, ArgSpec, ArgSpec]:
        """The three TMA maps, boxes as HgemmWgmma loads and stores them: a K-major operand in one
        box of (BK, rows), an MN-major one in boxes of (BK, BK); C in 64 x 64 boxes.  Where a cluster
        shares an operand (shared_operand), each CTA loads half of it: a K-major one in a box of
        (BK, rows / 2), an MN-major one in boxes of (BK, BK / 2) (half the k rows of each chunk)."""
        M, N, K, dt = workload.M, workload.N, workload.K, workload.dtype
        sw, bk = cfg["swizzle"], bk_of(cfg["swizzle"])
        ctype = "const __grid_constant__ autosched_wgmma::TensorMap"
        shared = self.shared_operand(cfg)
        half = lambda which: 2 if shared == which else 1  # noqa: E731
        if workload.a_col:        # A stored (K, M)
            a = tensormap_params("input", dt, (M, K), 2 * M, (bk, bk // half("A")), sw)
        else:
            a = tensormap_params("input", dt, (K, M), 2 * K, (bk, self.a_box_rows(M, cfg) // half("A")), sw)
        if workload.b_col:        # B stored (N, K)
            b = tensormap_params("input", dt, (K, N), 2 * K, (bk, cfg["bn"] // half("B")), sw)
        else:
            b = tensormap_params("input", dt, (N, K), 2 * N, (bk, bk // half("B")), sw)
        c = tensormap_params("output", dt, (N, M), 2 * N, (C_BOX, C_BOX), 128)
        return (ArgSpec("A", "tensormap", layout_params=a, ctype=ctype),
                ArgSpec("B", "tensormap", layout_params=b, ctype=ctype),
                ArgSpec("C", "tensormap", layout_params=c, ctype=ctype))

    def a_box_rows(self, M: int, cfg: dict) -> int:
        """Rows of a K-major A's TMA box: HgemmWgmma::a_rows, BM or, where M is shorter, M rounded up
        to 16 (a box mostly past M is slow to arrive; the .cuh says more)."""
        return a_box_rows(M, cfg["bm"])

    def shared_operand(self, cfg: dict) -> str | None:
        """"A" or "B" where the CTAs of a cluster share that operand by multicast; None here."""
        return None

    def render(self, workload, config: dict, device) -> KernelSpec:
        why = self.device_refuses(device)
        if why is not None:
            raise WorkloadError(f"{self.family} cannot render for this GPU: {why}")
        cfg = self.space(workload, device).validate(config)
        M, N, K = workload.M, workload.N, workload.K
        header, expr, grid, cluster_shape, extra = self._kernel(workload, cfg, device)
        args = (*self.tensormaps(workload, cfg), ArgSpec("M", "scalar", value=M, ctype="int"),
                ArgSpec("N", "scalar", value=N, ctype="int"), ArgSpec("K", "scalar", value=K, ctype="int"), *extra)
        return KernelSpec(
            family=self.family, workload_key=workload.key, config=tuple(sorted(cfg.items())),
            source=kernel_source(header), name_expression=expr,
            grid=(grid, 1, 1), block=(self.threads(cfg), 1, 1),
            smem_bytes=self.smem(cfg), args=args, arch="sm_90a", cluster=cluster_shape)

    def smem(self, cfg: dict) -> int:
        """Dynamic shared memory a CTA of `cfg` takes (a variant with other staging says its own)."""
        return smem_bytes(cfg["bm"], cfg["bn"], cfg["swizzle"], cfg["stages"])

    def threads(self, cfg: dict) -> int:
        """A producer warpgroup and the consumers."""
        return 128 * (cfg["consumers"] + 1)

    def tile(self, cfg: dict) -> tuple[int, int]:
        """(rows, columns) of C one tile of `cfg` covers (a variant with the roles swapped says its own)."""
        return cfg["bm"], cfg["bn"]

    def _kernel(self, workload, cfg: dict, device) -> tuple:
        """(header, name expression, grid.x, cluster shape or None, arguments after M, N, K) of a
        validated config: what a variant of this kernel (HgemmWgmmaSplitKTemplate) renders differently.
        Here the kernel named as the family, its template arguments kernel_values' in their order (a
        variant with other arguments, hgemm_wgmma_sched, says them there)."""
        rows, cols = self.tile(cfg)
        tiles = -(-workload.M // rows) * -(-workload.N // cols)
        targs = ", ".join(str(v) for v in self.kernel_values(workload, cfg).values())
        # persistent, a CTA per SM at most
        return self.header, f"{self.family}<{targs}>", min(tiles, device.sm_count), None, ()

    def sanitizer_picks(self, workload, device) -> list[dict]:
        """The wgmma template's corners: the most shared memory (deepest ring, largest tiles), the
        smallest tile with the shortest ring and 32-byte swizzle, one consumer with two m64 blocks, the
        default, then two random ones; none where the GPU has no wgmma or the shape no split (an empty
        space).  Of hgemm_wgmma_splitk, its deepest split on the smallest tile and on the most shared memory
        come first (so PER_TEMPLATE=2 keeps them); of hgemm_wgmma_cluster, pairs along M and along N on
        the smallest tile and on the most shared memory come before the rest."""
        cfgs = self.space(workload, device).enumerate()
        if not cfgs:
            return []
        smem = lambda c: smem_bytes(c["bm"], c["bn"], c["swizzle"], c["stages"])  # noqa: E731
        picks = [max(cfgs, key=smem), min(cfgs, key=lambda c: (c["bm"] * c["bn"], c["swizzle"], c["stages"])),
                 max(cfgs, key=lambda c: (c["consumers"] == 1, m_blocks(c["bm"], c["consumers"]), c["bn"], -c["group"]))]
        picks += [c for c in default_and_random(self, workload, device) if c not in picks]
        deepest = max((c.get("split_k", 1) for c in cfgs), default=1)
        split = [c for c in cfgs if deepest > 1 and c["split_k"] == deepest]
        if split:   # hgemm_wgmma_splitk: its deepest split first (partials, counters, the last CTA's sum)
            picks = [min(split, key=lambda c: (c["bm"] * c["bn"], c["swizzle"], c["stages"])), max(split, key=smem)] + picks
        pairs = [c for c in cfgs if "cluster_dim" in c]
        if pairs:   # hgemm_wgmma_cluster: pairs along M and N (multicast B, A) on the smallest tile (the
            #         most pairs, lone ones at the edges) and on the most shared memory (deepest ring) first
            small = lambda c: (c["bm"] * c["bn"], c["swizzle"], c["stages"])  # noqa: E731
            picks = [pick(p) for pick in (lambda p: min(p, key=small), lambda p: max(p, key=smem))
                     for p in ([c for c in pairs if c["cluster_dim"] == d] for d in ("m", "n")) if p] + picks
        return distinct(picks)


class HgemmWgmmaVariant(HgemmWgmmaTemplate):
    """A kernel of its own file beside hgemm_wgmma (its split-K, its column-split consumers, its
    clusters): a template of the hgemm family whose build id is its own header's (which inlines
    hgemm_wgmma.cuh); never the default (hgemm_wgmma's serves untuned shapes; a variant wins only
    where measured)."""

    def default_on(self, device) -> bool:
        return False


def template_args(values: dict) -> str:
    """The template arguments HgemmWgmma and its variants share, in their order."""
    return ", ".join(str(values[a]) for a in _ARG_ORDER)


class WgmmaMicroKernel(MicroKernelTemplate):
    """What hgemm_wgmma and its variants share as micro-kernels: TMA maps, a persistent grid of at most
    a CTA an SM over work units, wgmma's sketch (its split-K adds split_k, sampled and mutated with it).
    Listed after the template class it completes, whose tile, threads and smem it reads."""
    tma = True
    persistent = True
    on_wgmma = True
    template_code = 1.0
    roof = (7e12, 85.0)

    def sample(self, space, extents, rng, local_pad: int = 1) -> dict:
        return sample_wgmma(space, extents, rng)

    def mutate(self, space, config: dict, rng, extents) -> dict | None:
        return mutate_wgmma(space, config, rng, extents)

    def describe(self, config: dict) -> str:
        return wgmma_describe(config)

    def short(self, config: dict) -> str:
        c = config
        split = f" split{c['split_k']}" if "split_k" in c else ""
        return f"wgmma {c['bm']}x{c['bn']} c{c['consumers']} sw{c['swizzle']} st{c['stages']}{split}"

    def unroll(self, config: dict) -> int:
        return wgmma_unroll(config)

    def grid(self, M: int, N: int, config: dict, sm_count: int) -> tuple[int, int, int]:
        rows, cols = self.tile(config)
        units = -(-M // rows) * -(-N // cols) * config.get("split_k", 1)
        return (min(units, sm_count), 1, 1)

    def c_grid(self, config: dict, N: int, sm_count: int) -> str:
        return f"dim3(units < {sm_count} ? units : {sm_count}, 1, 1)"

    def ladder(self, space, N: int, m_max: int, sm_count: int) -> list[tuple[int, dict]]:
        return ladder_rungs(self.family, space, N, m_max, sm_count)

    def resources(self, config: dict, workload, device) -> tuple[int, int, int, int]:
        return self.threads(config), wgmma_registers(config), 0, self.smem(config)

    def modelled(self, config: dict, M: int, N: int, K: int, spec, device) -> tuple[float, int]:
        return modelled_wgmma_us(config, M, N, K, device), wgmma_registers(config)

    def probe_features(self, config: dict, workload, device) -> list[float]:
        c = config
        return [math.log2(c[k]) for k in ("bm", "bn", "consumers", "swizzle", "stages", "group")] + [
            math.log2(self.threads(c)), math.log2(self.unroll(c))] + (
            [math.log2(c["split_k"])] if "split_k" in c else [])


class HgemmWgmmaDynTemplate(HgemmWgmmaTemplate, WgmmaMicroKernel):
    """hgemm_wgmma as a dynamic-M micro-kernel (autosched.dynamic, ops.HgemmDispatch): the same kernel
    and family, whose space reads no M (as hgemm_dyn's): M, N and K are run-time arguments, so one
    binary serves every M and a config is valid whatever M it is launched for; the rules that prune
    by M (a tile taller than M needs, a raster group over its tile rows) are the cost model's business
    here, not the space's."""
    dynamic_m = True


# -- the micro-kernel's sketch (WgmmaMicroKernel) ----------------------------------------------------
# wgmma's tiles are bound to
# warpgroups, not warps:
#
#     M:  tiles (persistent loop, dynamic) | consumers (warpgroups: threadIdx / 128) | mw: m64 blocks each
#     N:  tiles                            | one wgmma instruction of N = BN
#     K:  slots (K / BK)                   | k16 steps of a slot: BK / 16 = swizzle / 32
#
# so BM = 64 * mw * consumers and BN = the wgmma N (64, 128, 192, 256).  `sample_wgmma` draws the
# consumers (the block's threads) first, then (mw, BN) jointly under the accumulator budget (mw * BN
# / 2 <= 128 floats a consumer thread) and the largest extents, then the swizzle (the K slice),
# stages under the shared memory, and the raster group.  The unroll (wgmma a consumer issues per
# slot: mw * BK / 16) is derived, never drawn.  `mutate_wgmma` keeps the consumers.
#
# hgemm_wgmma_splitk (behind its switch) is the same
# kernel with K cut in split_k slices: one more inner tile of K, drawn last and mutated like the
# ring depth; the tiles bound to threads are wgmma's, so the same sampler and mutation serve both.
WG_N = (64, 128, 192, 256)


def wgmma_decision(config: dict) -> dict:
    c = config
    d = {"consumers": c["consumers"], "mw": c["bm"] // (64 * c["consumers"]), "bn": c["bn"],
         "swizzle": c["swizzle"], "stages": c["stages"], "group": c["group"]}
    if "split_k" in c:
        d["split_k"] = c["split_k"]
    return d


def wgmma_config_of(d: dict) -> dict:
    c = {"bm": 64 * d["mw"] * d["consumers"], "bn": d["bn"], "consumers": d["consumers"],
         "swizzle": d["swizzle"], "stages": d["stages"], "group": d["group"]}
    if "split_k" in d:
        c["split_k"] = d["split_k"]
    return c


def _splits(space: Space) -> tuple:
    return space.knob("split_k").values if "split_k" in space.names else ()


def wgmma_unroll(config: dict) -> int:
    """wgmma instructions a consumer issues per slot: its m64 blocks x the k16 steps of BK."""
    return (config["bm"] // (64 * config["consumers"])) * (config["swizzle"] // 2 // 16)


def _wg_caps(extents):
    m_max, n = extents
    return max(64, -(-m_max // 64) * 64), max(64, -(-n // 64) * 64)


def sample_wgmma(space: Space, extents: tuple[int, int], rng: random.Random, max_tries: int = 2000) -> dict:
    """One hgemm_wgmma micro-kernel (HgemmWgmmaDynTemplate's space), or hgemm_wgmma_splitk's
    (HgemmWgmmaSplitKDynTemplate's: its split_k drawn last), drawn jointly for the largest extents
    (M_max, N): ConfigError if none is found."""
    cap_m, cap_n = _wg_caps(extents)
    for _ in range(max_tries):
        cons = rng.choice(space.knob("consumers").values)
        inner = [(mw, bn) for mw in (1, 2) for bn in WG_N
                 if mw * bn // 2 <= 128 and 64 * mw * cons <= max(64 * cons, cap_m) and bn <= max(64, cap_n)
                 and 64 * mw * cons in space.knob("bm").values and bn in space.knob("bn").values]
        if not inner:
            continue
        mw, bn = rng.choice(inner)
        d = {"consumers": cons, "mw": mw, "bn": bn, "swizzle": rng.choice(space.knob("swizzle").values),
             "stages": rng.choice(space.knob("stages").values), "group": rng.choice(space.knob("group").values)}
        if _splits(space):
            d["split_k"] = rng.choice(_splits(space))
        cfg = wgmma_config_of(d)
        if space.contains(cfg):
            return cfg
    raise ConfigError(f"no wgmma micro-kernel found for extents {extents} in {max_tries} draws")


def mutate_wgmma(space: Space, config: dict, rng: random.Random, extents: tuple[int, int],
                 max_tries: int = 50) -> dict | None:
    """A neighbour keeping the consumer warpgroups (the threads): a factor of 2 moved between mw and
    BN (same accumulators), BN or mw resampled, or the swizzle, ring depth, raster group or (of a
    split-K space) split_k changed."""
    cap_m, cap_n = _wg_caps(extents)
    base = wgmma_decision(config)
    for _ in range(max_tries):
        d = dict(base)
        move = rng.random()
        if move < 0.3:
            if d["mw"] == 2 and d["bn"] * 2 in WG_N:
                d["mw"], d["bn"] = 1, d["bn"] * 2
            elif d["mw"] == 1 and d["bn"] // 2 in WG_N:
                d["mw"], d["bn"] = 2, d["bn"] // 2
        elif move < 0.6:
            if rng.random() < 0.5:
                d["bn"] = rng.choice(WG_N)
            else:
                d["mw"] = 3 - d["mw"]
        else:
            knob = rng.choice(("swizzle", "stages", "group") + (("split_k",) * 2 if _splits(space) else ()))
            d[knob] = rng.choice(space.knob(knob).values)
        if d == base or d["mw"] * d["bn"] // 2 > 128 or (64 * d["mw"] * d["consumers"] > max(64 * d["consumers"], cap_m)):
            continue
        cfg = wgmma_config_of(d)
        if d["bn"] <= max(64, cap_n) and space.contains(cfg):
            return cfg
    return None


def wgmma_describe(config: dict) -> str:
    d = wgmma_decision(config)
    split = f" split{config['split_k']}" if "split_k" in config else ""
    return (f"wgmma {config['bm']}x{config['bn']}x{config['swizzle'] // 2} consumers {d['consumers']} mw {d['mw']} "
            f"st{config['stages']} g{config['group']}{split} unroll {wgmma_unroll(config)}")


# -- the synthetic runner's model of it (templates/gemm_model.py) ------------------------------------

def wgmma_registers(config: dict) -> int:
    """Registers a thread of an hgemm_wgmma block holds at entry, estimated: two consumers take 232
    by setmaxnreg, the block enters at 65536 / 384 = 168; one consumer: its accumulators + ~64."""
    c = config
    if c["consumers"] == 2:
        return 168
    return min(255, (c["bm"] // 64) * c["bn"] // 2 + 64)


def modelled_wgmma_us(config: dict, M: int, N: int, K: int, device) -> float:
    """hgemm_wgmma, persistent: ceil(tiles / #SMs) rounds of one tile an SM, a tile's time from the
    wgmma rate times an efficiency (tile intensity against the 128 x 256 tile's, one consumer 0.85,
    a 2-slot ring 0.8, narrower swizzles 0.8 / 0.9), the memory floor, launch and noise."""
    c = config
    tiles = -(-M // c["bm"]) * -(-N // c["bn"])
    tile_us = 2.0 * c["bm"] * c["bn"] * K / (gemm_model.WGMMA_PEAK_SM_TFLOPS * 1e12 * wgmma_efficiency(c)) * 1e6
    us = -(-tiles // device.sm_count) * tile_us
    return (max(us, gemm_model.floor_us(M, N, K)) + gemm_model.LAUNCH_US) * gemm_model.noise(c, M, N, K, "wg")


def wgmma_efficiency(c: dict) -> float:
    """A wgmma tile's share of the SM's peak (both wgmma models): its intensity against the 128 x 256
    tile's, one consumer 0.85, a 2-slot ring 0.8, narrower swizzles 0.8 / 0.9."""
    ai = c["bm"] * c["bn"] / (c["bm"] + c["bn"])
    eff = min(1.0, ai / 85.0) * (0.85 if c["consumers"] == 1 else 1.0) * (0.8 if c["stages"] == 2 else 1.0)
    return eff * {32: 0.8, 64: 0.9, 128: 1.0}[c["swizzle"]]
