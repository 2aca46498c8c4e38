"""The wgmma GEMM with the operands' roles swapped, for few rows (kernels/hgemm_wgmma_swap.cuh):
Y = X . W^T computed as Y^T = W . X^T, the weight's rows on wgmma's M side (64 or 128 a tile) and the
tokens on its N side (8 to 128 a tile), so a tile is as narrow along the tokens as wgmma allows.  At
BERT's dense layers (M = 80-192 tokens, N and K 768 or 3072) hgemm_wgmma's 64-row tiles make 24-36
CTAs and run at 0.81-0.88 of cuBLAS (checks/alloc-pairs-*.json, both on the same buffers), whose
kernels there are of this kind (nvjet ..._64x24_..._TNT, checks/cublas-kernels-*.json).

A template of its own beside hgemm_wgmma (its own build id; hgemm_wgmma's recordings stay valid).
Serves B stored (N, K) with A stored (M, K) (nt, `_bt`: a linear layer; both operands K-major), FP16
and BF16, on sm_90.  Knobs: `bw` (weight rows a tile, 64 or 128: one consumer warpgroup's m64
blocks), `bt` (tokens a tile: the wgmma N), the swizzle, the ring depth, `split_k` (K slices of a
tile; 1 is none: for few tiles and a long K, BERT's 768 x 3072) and `reduce`, where a split tile's
slices meet: "workspace" (FP32 partials in global memory, summed by the slice that finishes last, as
hgemm_wgmma_splitk's) or "cluster" (the slices one thread-block cluster, summed by its rank 0 over
distributed shared memory: kernel hgemm_wgmma_swap_cluster, a CTA a work unit, no workspace); no
raster group (the token tiles of one weight tile are walked first, side by side).  (Clusters of 2 or 4
weight tiles sharing the token slot by TMA multicast were correct and slower, 0.78-0.81 of cuBLAS
against 0.91-0.93: deleted, checks/mcast-sweep-2026-11-27.json.)

As a dynamic-M micro-kernel (HgemmWgmmaSwapDynTemplate: a space that reads no M) it joins DietCode's
search and ops.HgemmDispatch's serving under the same switch.

Gated by knobs.WGMMA_SWAP: on since its GPU stage passed on an H100 (2026-11-27, `scripts/gpu_check.py
swap`: the static and dynamic GPU tests vs float64, memcheck and racecheck of its corners clean; in
swap_sweep.py it beat hgemm_wgmma at every BERT shape, 0.975 vs 0.858 of cuBLAS at 160 x 3072 x 768,
checks/swap-sweep-2026-11-27.json).  AUTOSCHED_WGMMA_SWAP=0 turns it off for one process.
"""

from __future__ import annotations

import math
import random

from autosched import knobs
from autosched.space import ConfigError, Constraint, Knob, Space
from autosched.templates import gemm_model
from autosched.templates.base import ArgSpec, default_and_random, distinct
from autosched.templates.hgemm_wgmma import (C_BOX, MAX_ACC, SMEM_CAP_SM90, STAGE_VALUES, HgemmWgmmaVariant,
                                             WgmmaMicroKernel, tensormap_params, wgmma_efficiency)
from autosched.templates.hgemm_wgmma_splitk import SplitFeatures, counter_bytes, k_slices_rule, split_bound_rules
from autosched.workloads.base import WorkloadError

THREADS = 256           # a producer warpgroup and one consumer
BW_VALUES = (64, 128)
BT_VALUES = (8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 128)
SPLIT_VALUES = (1, 2, 3, 4, 6, 8)       # the .cuh's static_assert allows 1 to 8
REDUCE_VALUES = ("workspace", "cluster")


# (first M, last M, config): where DietCode's search starts with this template, the token tiles cuBLAS's
# own kernels of this layout use at BERT's shapes on the H100 (8 at M <= 48, 24 at 80-160, 40-80 at
# 3072 x 768; checks/cublas-kernels-2026-11-27.json), a 64-row weight tile, 128B swizzle, deep rings.
# Measured on the H100 in swap_sweep.py (2026-11-27): unsplit, 64 x 24 deep rings best at 33 x 4096 x 4096,
# 64 x 64 at 128 x 4096 x 4096, 32-40 tokens x 128 rows or 80-96 x 64 at 160 x 768 x 768
# (checks/swap-sweep-2026-11-27.json);
# split, where cuBLAS splits K too (768 x 3072), 32 tokens in 3 slices best at M = 80 and 40 in 2 at
# M = 160 (checks/swap-splitk-sweep-2026-11-27.json, swap-exit-read-sweep-2026-11-27.json); those two
# tiles with their slices summed in a cluster were 2.5-3% faster still, paired with cuBLAS at M = 80-160
# (checks/cluster-reduce-sweep-2026-11-27.json).
_W = "workspace"
SWAP_SEEDS = ((1, 64, {"bw": 64, "bt": 8, "swizzle": 128, "stages": 12, "split_k": 1, "reduce": _W}),
              (33, 192, {"bw": 64, "bt": 24, "swizzle": 128, "stages": 12, "split_k": 1, "reduce": _W}),
              (65, 256, {"bw": 64, "bt": 40, "swizzle": 128, "stages": 10, "split_k": 1, "reduce": _W}),
              (129, 512, {"bw": 64, "bt": 64, "swizzle": 128, "stages": 8, "split_k": 1, "reduce": _W}),
              (1, 128, {"bw": 64, "bt": 32, "swizzle": 128, "stages": 16, "split_k": 3, "reduce": _W}),
              (129, 256, {"bw": 64, "bt": 40, "swizzle": 128, "stages": 16, "split_k": 2, "reduce": _W}),
              (1, 128, {"bw": 64, "bt": 32, "swizzle": 128, "stages": 16, "split_k": 3, "reduce": "cluster"}),
              (129, 256, {"bw": 64, "bt": 40, "swizzle": 128, "stages": 16, "split_k": 2, "reduce": "cluster"}))


def swap_enabled() -> bool:
    return knobs.WGMMA_SWAP.enabled()


def workspace_bytes(M: int, N: int, bw: int, bt: int, split_k: int, reduce: str = "workspace") -> int:
    """HgemmWgmmaSwap's workspace (splitk_reduce.cuh): a u32 counter per tile padded to 256 bytes, then
    split_k x tiles FP32 partial tiles of bw x bt; counters only at split_k 1 or a cluster reduction
    (unread there)."""
    tiles = -(-M // bt) * -(-N // bw)
    parts = split_k if split_k > 1 and reduce == "workspace" else 0
    return counter_bytes(tiles) + parts * tiles * bw * bt * 4


def reads_workspace(config: dict) -> bool:
    """Whether the kernel of `config` reads its workspace: K split, the slices meeting in global memory."""
    return config["split_k"] > 1 and config.get("reduce", "workspace") == "workspace"


def cluster_ring_holds_partials(bw: int, bt: int, swizzle: int, stages: int) -> bool:
    """Whether the TMA ring holds a slice's FP32 accumulators (128 consumer threads x BW / 64 x BT / 2
    floats), where a cluster reduction leaves them (the .cuh's static_assert)."""
    return stages * (bw + bt) * swizzle >= (bw // 64) * (bt // 2) * 128 * 4


def smem_bytes(bw, bt, swizzle, stages) -> int:
    """HgemmWgmmaSwap::SMEM_BYTES: the ring (W and X slots), rounded up to 1024 bytes, the staging of
    BW / 64 output boxes of BT x 64, full and empty barriers per slot, 1024 bytes to align the base."""
    ring = -(-stages * (bw + bt) * swizzle // 1024) * 1024
    return ring + (bw // 64) * bt * C_BOX * 2 + 2 * stages * 8 + 1024


class HgemmWgmmaSwapTemplate(SplitFeatures, HgemmWgmmaVariant):
    family = "hgemm_wgmma_swap"
    header = "hgemm_wgmma_swap.cuh"    # inlines hgemm_wgmma.cuh

    def refuses(self, workload) -> str | None:
        why = super().refuses(workload)
        if why is not None:
            return why
        if workload.a_col or not workload.b_col:
            return ("it reads A stored (M, K) and B stored (N, K), both K-major (layout nt, `_bt`), the "
                    f"layout of a linear layer; this one is {workload.layout}")
        return None

    def _space(self, workload, device) -> Space:
        M, N = workload.M, workload.N
        knobs = [
            Knob("bw", BW_VALUES, "weight rows (columns of C) a tile holds: wgmma's M side, 1 or 2 m64 blocks"),
            Knob("bt", BT_VALUES, "tokens (rows of C) a tile holds: the wgmma N"),
            Knob("swizzle", (32, 64, 128), "TMA and wgmma swizzle in bytes; the K slice is swizzle/2"),
            Knob("stages", STAGE_VALUES, "slots in the TMA ring"),
            Knob("split_k", SPLIT_VALUES, "K slices of a tile (1: none)"),
            Knob("reduce", REDUCE_VALUES, "where a split tile's slices meet: a global workspace (the last to "
                 "finish adds) or one cluster's shared memory (rank 0 adds over DSMEM)"),
        ]
        C = Constraint
        cap = min(device.smem_per_block_optin, SMEM_CAP_SM90)
        tiles = lambda bw, bt: -(-M // bt) * -(-N // bw)  # noqa: E731
        rules = [
            C(f"accumulators (BW / 64) x BT / 2 <= {MAX_ACC} a consumer thread", ("bw", "bt"),
              lambda bw, bt: (bw // 64) * bt // 2 <= MAX_ACC),
            C("BW no larger than the smallest tile that covers N", ("bw",), lambda bw: bw == 64 or bw // 2 < N),
            k_slices_rule(workload.K),
            C("reduce = workspace where K is not split (one config, not two alike)", ("split_k", "reduce"),
              lambda sk, r: sk > 1 or r == "workspace"),
            C("a cluster reduction leaves a slice's FP32 accumulators in the ring: it must hold them",
              ("bw", "bt", "swizzle", "stages", "reduce"),
              lambda bw, bt, sw, st, r: r == "workspace" or cluster_ring_holds_partials(bw, bt, sw, st)),
            *([] if self.dynamic_m else [
                C("BT no wider than M rounded up to 8", ("bt",), lambda bt: bt == 8 or bt - 8 < M),
                # a GPU full of tiles gains nothing from splitting K: the partials only cost
                C(f"split_k above 1 only while the tiles fill at most {device.sm_count} SMs", ("bw", "bt", "split_k"),
                  lambda bw, bt, sk: sk == 1 or tiles(bw, bt) < device.sm_count),
                # (the workspace cap read as if the slices met in global memory: a cluster split too
                # deep for that has few tiles only on shapes that a shallower split serves)
                *split_bound_rules(("bw", "bt"), tiles, lambda bw, bt, sk: workspace_bytes(M, N, bw, bt, sk),
                                   device.sm_count)]),
            C(f"shared memory <= {cap} B a block (ring + output staging + barriers + alignment)",
              ("bw", "bt", "swizzle", "stages"), lambda bw, bt, sw, st: smem_bytes(bw, bt, sw, st) <= cap),
        ]
        dev_why = self.device_refuses(device)
        if dev_why is not None:
            rules.insert(0, C(dev_why, ("bw",), lambda bw: False))
        return Space(knobs, rules)

    def default_config(self, workload, device) -> dict:
        """64 weight rows a tile, and the narrowest token tile whose tiles still fit in one wave of the
        GPU (the most CTAs without a second wave; where none fits, the widest: the fewest reads of
        each W tile), 128B swizzle, the shortest ring that holds all of K (more slots wait for
        nothing), else the deepest."""
        why = self.device_refuses(device)
        if why is not None:
            raise WorkloadError(f"{self.family} cannot serve {workload.key} here: {why}")
        space = self.space(workload, device)
        M, N, K = workload.M, workload.N, workload.K
        pool = [c for c in space if c["bw"] == 64 and c["swizzle"] == 128 and c["split_k"] == 1]
        if not pool:
            return space.nearest({"bw": 64, "bt": 16, "swizzle": 128, "stages": 8, "split_k": 1,
                                  "reduce": "workspace"})
        one_wave = [c for c in pool if -(-M // c["bt"]) * -(-N // 64) <= device.sm_count]
        bt = min(c["bt"] for c in one_wave) if one_wave else max(c["bt"] for c in pool)
        # among that BT's rings, the shortest that holds all of K, else the deepest
        rings = sorted(c["stages"] for c in pool if c["bt"] == bt)
        kslots = -(-K // 64)
        stages = next((s for s in rings if s >= kslots), rings[-1])
        return {"bw": 64, "bt": bt, "swizzle": 128, "stages": stages, "split_k": 1, "reduce": "workspace"}

    def kernel_values(self, workload, cfg: dict) -> dict:
        """The entry's template arguments."""
        return {"BF16": workload.bf16, "BW": cfg["bw"], "BT": cfg["bt"], "SWZ": cfg["swizzle"],
                "STAGES": cfg["stages"], "SPLIT_K": cfg["split_k"]}

    def workspace_size(self, M: int, N: int, cfg: dict) -> int:
        return workspace_bytes(M, N, cfg["bw"], cfg["bt"], cfg["split_k"], cfg["reduce"])

    def derived_features(self, config: dict, params: dict, device) -> dict[str, float]:
        return {**super().derived_features(config, params, device),
                "cluster_reduce": float(config["reduce"] == "cluster")}

    def _kernel(self, workload, cfg: dict, device) -> tuple:
        """Persistent over work units (tile, K slice), a CTA per SM at most; the workspace after K.  With
        reduce = cluster: hgemm_wgmma_swap_cluster, a CTA a work unit (the cluster dims are compiled in:
        the launch is a plain one of every unit)."""
        header, expr, _, cluster, _ = super()._kernel(workload, cfg, device)
        M, N = workload.M, workload.N
        workspace = ArgSpec("workspace", "workspace", value=self.workspace_size(M, N, cfg), ctype="unsigned char*")
        if cfg["reduce"] == "cluster":
            expr = expr.replace(self.family + "<", self.family + "_cluster<", 1)
        return header, expr, self.grid_units(M, N, cfg, device.sm_count), cluster, (workspace,)

    def grid_units(self, M: int, N: int, cfg: dict, sm_count: int) -> int:
        """The grid at M: every work unit (tile, K slice) where the slices meet in a cluster, else a
        persistent grid of a CTA per SM at most."""
        units = -(-M // cfg["bt"]) * -(-N // cfg["bw"]) * cfg["split_k"]
        return units if cfg.get("reduce") == "cluster" else min(units, sm_count)

    def tensormaps(self, workload, cfg: dict) -> tuple[ArgSpec, ArgSpec, ArgSpec]:
        """X (A) in boxes of (BK, BT), W (B) in boxes of (BK, BW), both
        K-major; C in boxes of 64 weight columns by BT tokens, 128B-swizzled."""
        M, N, K, dt = workload.M, workload.N, workload.K, workload.dtype
        sw, bk = cfg["swizzle"], cfg["swizzle"] // 2
        ctype = "const __grid_constant__ autosched_wgmma::TensorMap"
        x = tensormap_params("input", dt, (K, M), 2 * K, (bk, cfg["bt"]), sw)
        w = tensormap_params("input", dt, (K, N), 2 * K, (bk, cfg["bw"]), sw)
        c = tensormap_params("output", dt, (N, M), 2 * N, (C_BOX, cfg["bt"]), 128)
        return (ArgSpec("A", "tensormap", layout_params=x, ctype=ctype),
                ArgSpec("B", "tensormap", layout_params=w, ctype=ctype),
                ArgSpec("C", "tensormap", layout_params=c, ctype=ctype))

    def smem(self, cfg: dict) -> int:
        return smem_bytes(cfg["bw"], cfg["bt"], cfg["swizzle"], cfg["stages"])

    def threads(self, cfg: dict) -> int:
        return THREADS

    def tile(self, cfg: dict) -> tuple[int, int]:
        """BT tokens (rows of C) by BW weight rows (columns of C): hgemm_wgmma's grid, features and tile
        use then count this kernel's tiles."""
        return cfg["bt"], cfg["bw"]

    def sanitizer_picks(self, workload, device) -> list[dict]:
        """hgemm_wgmma_swap's corners: the smallest tile with the shortest ring and 32-byte swizzle (the
        most CTAs, the narrowest wgmma), the deepest K split of the widest tile (the most partials summed
        through the workspace), the same summed in a cluster (the most DSMEM reads), the most shared
        memory, two m64 blocks with the widest token tile (the most accumulators), a 64-byte swizzle whose
        ring ends off the staging's 1024-byte boundary (BW + BT no multiple of 16 rows), then the default
        and two random ones; none where the layout is not nt."""
        if self.refuses(workload) is not None:
            return []
        cfgs = self.space(workload, device).enumerate()
        if not cfgs:
            return []
        smem = self.smem
        deepest = lambda c: (c["split_k"], c["bw"] * c["bt"], -c["stages"])  # noqa: E731
        clustered = [c for c in cfgs if c["reduce"] == "cluster"]
        picks = [min(cfgs, key=lambda c: (c["bw"] * c["bt"], c["swizzle"], c["stages"], c["split_k"])),
                 max((c for c in cfgs if c["reduce"] == "workspace"), key=deepest),
                 *([max(clustered, key=deepest)] if clustered else []), max(cfgs, key=smem),
                 max(cfgs, key=lambda c: (c["bw"], c["bt"], -c["stages"]))]
        odd = [c for c in cfgs if c["swizzle"] == 64 and (c["bw"] + c["bt"]) % 16 and c["stages"] % 2]
        if odd:
            picks.append(max(odd, key=smem))
        picks += default_and_random(self, workload, device)
        return distinct(picks)


class HgemmWgmmaSwapDynTemplate(HgemmWgmmaSwapTemplate, WgmmaMicroKernel):
    """hgemm_wgmma_swap as a dynamic-M micro-kernel (autosched.dynamic, ops.HgemmDispatch): the same
    kernel and family, whose space reads no M (the token tile's bound by M is the cost model's
    business): one binary serves every M, its X and C tensor maps encoded per M at the call."""
    dynamic_m = True
    workspace = True
    nt_only = True
    switch = knobs.WGMMA_SWAP
    template_code = 3.0

    def sample(self, space, extents, rng, local_pad: int = 1) -> dict:
        return sample_swap(space, extents, rng)

    def mutate(self, space, config: dict, rng, extents) -> dict | None:
        return mutate_swap(space, config, rng, extents)

    def describe(self, config: dict) -> str:
        return swap_describe(config)

    def short(self, config: dict) -> str:
        c = config
        return (f"swap {c['bt']}x{c['bw']} sw{c['swizzle']} st{c['stages']} split{c['split_k']}"
                + (" cluster" if c.get("reduce") == "cluster" else ""))

    def unroll(self, config: dict) -> int:
        return swap_unroll(config)

    def reads_workspace(self, config: dict) -> bool:
        return reads_workspace(config)

    def grid(self, M: int, N: int, config: dict, sm_count: int) -> tuple[int, int, int]:
        """Persistent, or every work unit where a tile's slices meet in a cluster."""
        return (self.grid_units(M, N, config, sm_count), 1, 1)

    def c_grid(self, config: dict, N: int, sm_count: int) -> str:
        if config["reduce"] == "cluster":
            return "dim3(units, 1, 1)"
        return super().c_grid(config, N, sm_count)

    def seeds(self, space, N: int, lo: int, hi: int, sm_count: int) -> list[tuple[int, int, dict]]:
        return list(SWAP_SEEDS)

    def resources(self, config: dict, workload, device) -> tuple[int, int, int, int]:
        return self.threads(config), swap_registers(config), 0, self.smem(config)

    def modelled(self, config: dict, M: int, N: int, K: int, spec, device) -> tuple[float, int]:
        return modelled_swap_us(config, M, N, K, device), swap_registers(config)

    def probe_features(self, config: dict, workload, device) -> list[float]:
        c = config
        return [math.log2(c[k]) for k in ("bw", "bt", "swizzle", "stages", "split_k")] + [
            math.log2(self.threads(c)), math.log2(self.unroll(c))]


# -- the micro-kernel's sketch ------------------------------------------------------------------------
#
#     N (weight rows):  tiles (persistent loop) | one consumer warpgroup | mw: m64 blocks (BW = 64 mw)
#     M (tokens):       tiles                   | one wgmma of N = BT
#     K:                slots (K / BK)          | k16 steps of a slot: swizzle / 32
#
# Its threads are fixed (a producer and one consumer warpgroup), so `sample_swap` draws (BW, BT) jointly
# under the accumulator budget (mw x BT / 2 <= 128) and the largest extents, then the swizzle, the
# ring depth and split_k (K cut in slices: an inner tile of K, as hgemm_wgmma_splitk's) with where the
# slices meet (a global workspace or one cluster's shared memory); the unroll
# (wgmma per slot: mw x BK / 16) is derived, never drawn.


def swap_unroll(config: dict) -> int:
    return (config["bw"] // 64) * (config["swizzle"] // 32)


def _swap_inner(space: Space, extents) -> list[tuple[int, int]]:
    m_max, n = extents
    cap_t, cap_w = max(8, -(-m_max // 8) * 8), max(64, -(-n // 64) * 64)
    return [(bw, bt) for bw in space.knob("bw").values for bt in space.knob("bt").values
            if (bw // 64) * bt // 2 <= 128 and bt <= cap_t and bw <= cap_w]


def sample_swap(space: Space, extents: tuple[int, int], rng: random.Random, max_tries: int = 2000) -> dict:
    """One hgemm_wgmma_swap micro-kernel of HgemmWgmmaSwapDynTemplate's space, drawn jointly for the
    largest extents (M_max, N): ConfigError if none is found."""
    inner = _swap_inner(space, extents)
    splits, reduces = space.knob("split_k").values, space.knob("reduce").values
    for _ in range(max_tries if inner else 0):
        bw, bt = rng.choice(inner)
        # K unsplit half the time: a split only pays where the tiles leave SMs idle
        cfg = {"bw": bw, "bt": bt, "swizzle": rng.choice(space.knob("swizzle").values),
               "stages": rng.choice(space.knob("stages").values),
               "split_k": 1 if 1 in splits and rng.random() < 0.5 else rng.choice(splits)}
        cfg["reduce"] = "workspace" if cfg["split_k"] == 1 else rng.choice(reduces)
        if space.contains(cfg):
            return cfg
    raise ConfigError(f"no hgemm_wgmma_swap micro-kernel found for extents {extents} in {max_tries} draws")


def mutate_swap(space: Space, config: dict, rng: random.Random, extents: tuple[int, int],
                max_tries: int = 50) -> dict | None:
    """A neighbour (the threads are the template's): BT moved to a neighbouring wgmma N or resampled, BW
    flipped, or the swizzle, the ring depth, split_k or where the slices meet changed (an unsplit
    config's reduce follows its split: the workspace, the space's one value there)."""
    inner = set(_swap_inner(space, extents))
    bts = list(space.knob("bt").values)
    for _ in range(max_tries):
        c = dict(config)
        move = rng.random()
        if move < 0.35:
            i = bts.index(c["bt"]) + rng.choice((-1, 1))
            if 0 <= i < len(bts):
                c["bt"] = bts[i]
        elif move < 0.5:
            c["bt"] = rng.choice(bts)
        elif move < 0.65:
            c["bw"] = 192 - c["bw"]
        else:
            knob = rng.choice(("swizzle", "stages", "split_k", "reduce"))
            c[knob] = rng.choice(space.knob(knob).values)
            if c["split_k"] == 1:
                c["reduce"] = "workspace"
        if c != config and (c["bw"], c["bt"]) in inner and space.contains(c):
            return c
    return None


def swap_describe(config: dict) -> str:
    c = config
    where = " cluster" if c.get("reduce") == "cluster" else ""
    return f"swap {c['bt']}x{c['bw']}x{c['swizzle'] // 2} st{c['stages']} split{c['split_k']}{where} unroll {swap_unroll(c)}"

# -- the synthetic runner's model of it (templates/gemm_model.py) ------------------------------------

def swap_registers(config: dict) -> int:
    """Registers a thread of an hgemm_wgmma_swap block holds, estimated: its accumulators + ~64 (what
    ptxas reported from the smallest tile to the largest)."""
    return min(255, (config["bw"] // 64) * config["bt"] // 2 + 64)


def modelled_swap_us(config: dict, M: int, N: int, K: int, device) -> float:
    """hgemm_wgmma_swap, persistent: ceil(tiles x split_k / #SMs) rounds of one work unit an SM, tiles
    BT tokens x BW weight rows over K / split_k; a unit's time the slower of its wgmma work (at the
    efficiency of `modelled_wgmma_us`, one consumer) and its (BW + BT) x K / split_k operands at an
    SM's rate from L2 (the token tiles of one W tile run side by side, so W comes from DRAM about
    once), so narrow token tiles make many CTAs that each read little, plus a split unit's partial
    written and read back (a quarter of that where the slices meet in a cluster's shared memory, whose
    grid is every unit); the memory floor, launch and noise.  MODELLED, not measured."""
    c = config
    bt, bw, sk = c["bt"], c["bw"], c["split_k"]
    cluster = c.get("reduce") == "cluster"
    units = -(-M // bt) * -(-N // bw) * sk
    eff = wgmma_efficiency({"bm": bw, "bn": bt, "consumers": 1, "stages": c["stages"], "swizzle": c["swizzle"]})
    kk = K / sk
    unit_us = max(2.0 * bw * bt * kk / (gemm_model.WGMMA_PEAK_SM_TFLOPS * 1e12 * eff) * 1e6,
                  (bw + bt) * kk * 2 / gemm_model.SM_L2_BYTES_S * 1e6)
    if sk > 1:
        unit_us += (0.25 if cluster else 1.0) * 2 * bw * bt * 4 / gemm_model.SM_L2_BYTES_S * 1e6
    us = -(-units // device.sm_count) * unit_us
    return (max(us, gemm_model.floor_us(M, N, K)) + gemm_model.LAUNCH_US) * gemm_model.noise(c, M, N, K, "swap")
