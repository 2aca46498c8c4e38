"""The wgmma GEMM with a consumer schedule and an epilogue staging to choose
(kernels/hgemm_wgmma_sched.cuh): hgemm_wgmma's producer, ring and raster with two consumer warpgroups
that either split each tile by rows (cooperative, as hgemm_wgmma's two do) or take whole tiles in
turn (ping-pong: one's epilogue runs under the other's main loop), and an epilogue that stages either
a consumer's whole share of the tile or one output box at a time through a ring of two; wgmma N up to
256 and 168 (11008 = 65.5 x 168: two full waves of 128-row tiles at M = 512).  The box
ring frees shared memory for the TMA ring: 128 x 256 tiles keep 4 slots of 48 KB where hgemm_wgmma's
64 KB staging leaves 3, the configuration at which its whole space stopped at 96-98% of cuBLAS at
4096^3 (H100, 2026-11-27).

A template of its own beside hgemm_wgmma, as split-K is: a knob of hgemm_wgmma would change its
build id and config keys, so none of its recordings would count any more.  Knobs: hgemm_wgmma's
without `consumers` (always two), `schedule` and `epi_boxes`; cooperative consumers with a whole-share
staging are hgemm_wgmma's own kernel, so the space leaves them out.

Gated by knobs.WGMMA_SCHED (`python3 scripts/gpu_check.py sched`: GPU tests vs float64 in every layout,
memcheck and racecheck of its corners, a timing against hgemm_wgmma and cuBLAS), on since it passed on
an H100 on 2026-11-27: cooperative 128 x 256 with the box ring and 4 slots 181.7 us at 4096^3 against
hgemm_wgmma's best 188.6 and cuBLAS 178.5 in the same process (checks/sched-sweep-2026-11-27.json).
Ping-pong measured slower than cooperative on every shape timed (4096^3: 197 us at best).
"""

from __future__ import annotations

import dataclasses
import math
import random

from autosched import knobs
from autosched.space import ConfigError, Constraint, Knob, Space
from autosched.templates.base import default_and_random, distinct
from autosched.templates.hgemm_wgmma import (C_BOX, MAX_ACC, SMEM_CAP_SM90, HgemmWgmmaVariant, WgmmaMicroKernel, _wg_caps,
                                            modelled_wgmma_us, tensormap_params, wgmma_registers)
from autosched.workloads.base import WorkloadError

THREADS = 384           # a producer warpgroup and two consumers
SCHEDULES = ("cooperative", "pingpong")
EPI_BOXES = (0, 2)      # output boxes a consumer stages at a time; 0: its whole share of the tile
BN_VALUES = (64, 128, 168, 192, 256)
# the default's wave model: a tile's time as BN + this many columns (its prologue and epilogue).  Chosen
# so that the model keeps the widths measured best on the H100 (2026-11-27, checks/sched-sweep-*.json):
# 256 at 4096^3, 8192^3 and 2048x4096x4096, 168 at 512x11008 and 2048x11008, 128 at 512x4096x11008.  A
# fit to one pair alone says more (512x11008's two-wave 168 and 192 columns, 69.4 and 74.1 us: ~190),
# but that would keep 256 at 2048x11008, where 168 measured 3% faster
WAVE_FIXED_COLS = 32
DEFAULT_SHAPE = {"bm": 128, "bn": 256, "swizzle": 128, "stages": 4, "group": 16, "schedule": "cooperative",
                 "epi_boxes": 2}


def sched_enabled() -> bool:
    return knobs.WGMMA_SCHED.enabled()


# (first M, last M, config): where DietCode's search starts with this template: the configs measured
# fastest in the one-process sweeps on the H100 (2026-11-27, checks/sched-sweep-*.json): 128 x 128 with
# 6 slots at 512 rows of N = 4096, 128 x 168 with 4 slots at 512-2048 rows of N = 11008, 128 x 256 with
# 4 slots from 2048 rows
SCHED_SEEDS = ((129, 1024, {"bm": 128, "bn": 128, "swizzle": 128, "stages": 6, "group": 4, "schedule": "cooperative",
                            "epi_boxes": 2}),
               (257, 4096, {"bm": 128, "bn": 168, "swizzle": 128, "stages": 4, "group": 8, "schedule": "cooperative",
                            "epi_boxes": 2}),
               (1025, 4096, {"bm": 128, "bn": 256, "swizzle": 128, "stages": 4, "group": 8,
                             "schedule": "cooperative", "epi_boxes": 2}))


def dyn_sched_enabled() -> bool:
    return knobs.DYN_SCHED.enabled()


def consumer_m_blocks(bm: int, schedule: str) -> int:
    """m64 blocks a consumer runs: all of a ping-pong tile's, half of a cooperative one's."""
    return bm // 64 if schedule == "pingpong" else bm // 128


def box_cols(bn: int) -> int:
    """Columns of an output box (HgemmWgmmaSched::CW): 64, 128B-swizzled; 56 unswizzled where BN is no
    multiple of 64 (168)."""
    return C_BOX if bn % C_BOX == 0 else 56


def smem_bytes(bm, bn, swizzle, stages, schedule, epi_boxes) -> int:
    """HgemmWgmmaSched::SMEM_BYTES: the ring, two consumers' stagings (a ring of epi_boxes output
    boxes, or a whole share), full and empty barriers per slot and an order barrier per consumer,
    1024 bytes to align the base."""
    share = consumer_m_blocks(bm, schedule) * (bn // box_cols(bn))
    staging = (epi_boxes or share) * C_BOX * box_cols(bn) * 2
    return stages * (bm + bn) * swizzle + 2 * staging + (2 * stages + 2) * 8 + 1024


class HgemmWgmmaSchedTemplate(HgemmWgmmaVariant):
    family = "hgemm_wgmma_sched"
    header = "hgemm_wgmma_sched.cuh"   # inlines hgemm_wgmma.cuh: an edit to either stales the build id

    def _space(self, workload, device) -> Space:
        """hgemm_wgmma's space (its rules on N, M, the raster group and the GPU) without `consumers`,
        the rules that read it and its shared-memory rule; the schedule's own tile heights,
        accumulators and shared memory."""
        base = super()._space(workload, device)
        bn = Knob("bn", BN_VALUES, "columns of C a tile holds: the wgmma N (168: 11008 = 65.5 x 168, two waves "
                  "of 128-row tiles at M = 512)")
        knobs = [bn if k.name == "bn" else k for k in base.knobs if k.name != "consumers"] + [
            Knob("schedule", SCHEDULES, "cooperative: both consumers split each tile by rows; pingpong: each "
                 "takes whole tiles, in turn with the other"),
            Knob("epi_boxes", EPI_BOXES, "output boxes (64 x 64; 64 x 56 at BN 168) a consumer stages at a time "
                 "(0: its whole share of the tile; 2: a ring of two, which leaves the TMA ring more shared memory)"),
        ]
        cap = min(device.smem_per_block_optin, SMEM_CAP_SM90)
        C = Constraint
        rules = [c for c in base.constraints
                 if "consumers" not in c.knobs and not c.name.startswith("shared memory")] + [
            C("BM = 64 or 128 ping-pong (a consumer's whole tile), 128 or 256 cooperative (two halves)",
              ("bm", "schedule"), lambda bm, s: bm in ((64, 128) if s == "pingpong" else (128, 256))),
            C(f"accumulators (m64 blocks a consumer runs) x BN / 2 <= {MAX_ACC} a consumer thread",
              ("bm", "bn", "schedule"), lambda bm, bn, s: consumer_m_blocks(bm, s) * bn // 2 <= MAX_ACC),
            C("BN = 168 only with B stored (N, K) (K-major: an MN-major B's boxes are whole K slices wide)",
              ("bn",), lambda bn: bn % C_BOX == 0 or workload.b_col),
            C("cooperative consumers staging their whole share are hgemm_wgmma's own kernel",
              ("schedule", "epi_boxes"), lambda s, e: s == "pingpong" or e > 0),
            C(f"shared memory <= {cap} B a block (ring + two consumers' staging + barriers + alignment)",
              ("bm", "bn", "swizzle", "stages", "schedule", "epi_boxes"),
              lambda bm, bn, sw, st, s, e: smem_bytes(bm, bn, sw, st, s, e) <= cap),
        ]
        return Space(knobs, rules)

    def default_config(self, workload, device) -> dict:
        """Cooperative 128-row tiles of 128B swizzle staging through two boxes, of the width the wave
        model picks: the fewest full waves x (BN + WAVE_FIXED_COLS), the larger BN on a tie; at the
        deepest ring that fits (at most 4 slots from BN = 168 up: 5 of 128 x 168 measured 3% slower at
        2048 x 11008) and raster group 8 where the shape allows it (else its largest).  So 4096^3 and
        2048 x 4096 take 128 x 256 with 4 slots (which hgemm_wgmma's staging cannot hold), and N =
        11008 takes 128 x 168 (66 tiles a row of tiles: 512 rows two full waves), as measured on the
        H100 (2026-11-27, checks/sched-sweep-*.json: 512x11008x4096_bt 70.5 us at 4 slots against 74.1
        for 128 x 192 and 76.0 for hgemm_wgmma's best; 2048x11008x4096_bt 247.9 against 255.5 for
        128 x 256 and 266.7 for hgemm_wgmma's best)."""
        why = self.device_refuses(device)
        if why is not None:
            raise WorkloadError(f"{self.family} cannot serve {workload.key} here: {why}")
        space = self.space(workload, device)
        M, N = workload.M, workload.N
        best = None
        for bn in sorted(BN_VALUES, reverse=True):
            pool = [c for c in space if c["schedule"] == "cooperative" and c["bm"] == 128 and c["bn"] == bn
                    and c["swizzle"] == 128 and c["epi_boxes"] == 2]
            if not pool:
                continue
            tiles = -(-M // 128) * -(-N // bn)
            cost = -(-tiles // device.sm_count) * (bn + WAVE_FIXED_COLS)
            if best is None or cost < best[0]:
                deep = [c for c in pool if bn < 168 or c["stages"] <= 4] or pool
                best = (cost, max(deep, key=lambda c: (c["stages"], c["group"] == 8, c["group"])))
        if best is None:
            return space.nearest(DEFAULT_SHAPE)
        return best[1]

    def kernel_values(self, workload, cfg: dict) -> dict:
        """HgemmWgmmaSched's template arguments: hgemm_wgmma's without CONSUMERS (always two), then
        PINGPONG and EPI_BOXES."""
        return {"BF16": workload.bf16, "A_MN": workload.a_col, "B_MN": 1 - workload.b_col, "BM": cfg["bm"],
                "BN": cfg["bn"], "SWZ": cfg["swizzle"], "STAGES": cfg["stages"], "GROUP": cfg["group"],
                "PINGPONG": int(cfg["schedule"] == "pingpong"), "EPI_BOXES": cfg["epi_boxes"]}

    def tensormaps(self, workload, cfg: dict) -> tuple:
        """hgemm_wgmma's maps; where BN is no multiple of 64, C's in unswizzled 56 x 64 boxes."""
        a, b, c = super().tensormaps(workload, cfg)
        cols = box_cols(cfg["bn"])
        if cols == C_BOX:
            return a, b, c
        p = tensormap_params("output", workload.dtype, (workload.N, workload.M), 2 * workload.N, (cols, C_BOX), 0)
        return a, b, dataclasses.replace(c, layout_params=p)

    def smem(self, cfg: dict) -> int:
        return smem_bytes(cfg["bm"], cfg["bn"], cfg["swizzle"], cfg["stages"], cfg["schedule"], cfg["epi_boxes"])

    def threads(self, cfg: dict) -> int:
        return THREADS

    def derived_features(self, config: dict, params: dict, device) -> dict[str, float]:
        """hgemm_wgmma's, and the schedule and staging as numbers."""
        out = super().derived_features(config, params, device)
        out["pingpong"] = int(config["schedule"] == "pingpong")
        out["epi_boxes"] = config["epi_boxes"]
        return out

    def sanitizer_picks(self, workload, device) -> list[dict]:
        """hgemm_wgmma_sched's corners, per schedule: the smallest tile with the shortest ring and 32-byte
        swizzle (the most CTAs, ping-pong: the most turns), the most shared memory (the deepest ring) with
        the box ring and, ping-pong, with a whole-share staging; where B is K-major, a 168-column tile (its
        unswizzled 56-column output boxes) of each schedule at its deepest ring; then the default and two random ones."""
        cfgs = self.space(workload, device).enumerate()
        picks = []
        for sched in ("pingpong", "cooperative"):
            mine = [c for c in cfgs if c["schedule"] == sched]
            for pool in ([c for c in mine if c["epi_boxes"]], [c for c in mine if not c["epi_boxes"]]):
                if pool:
                    picks += [min(pool, key=lambda c: (c["bm"] * c["bn"], c["swizzle"], c["stages"])),
                              max(pool, key=lambda c: (self.smem(c), c["bm"] * c["bn"]))]
        for sched in ("pingpong", "cooperative"):
            odd = [c for c in cfgs if c["bn"] % 64 and c["schedule"] == sched]
            if odd:
                picks.append(max(odd, key=lambda c: (self.smem(c), c["bm"])))
        if cfgs:
            picks += default_and_random(self, workload, device)
        return distinct(picks)


class HgemmWgmmaSchedDynTemplate(HgemmWgmmaSchedTemplate, WgmmaMicroKernel):
    """hgemm_wgmma_sched as a dynamic-M micro-kernel (as HgemmWgmmaDynTemplate is hgemm_wgmma's): the
    same kernel, family and knobs; its space reads no M (hgemm_wgmma's rules on M are left to the cost
    model), so one binary serves every M, its A and C maps encoded per M at the call."""
    dynamic_m = True
    switch = knobs.DYN_SCHED

    def sample(self, space, extents, rng, local_pad: int = 1) -> dict:
        return sample_sched(space, extents, rng)

    def mutate(self, space, config: dict, rng, extents) -> dict | None:
        return mutate_sched(space, config, rng, extents)

    def describe(self, config: dict) -> str:
        return sched_describe(config)

    def short(self, config: dict) -> str:
        c = config
        return f"sched {c['schedule']} {c['bm']}x{c['bn']} boxes{c['epi_boxes']} sw{c['swizzle']} st{c['stages']}"

    def unroll(self, config: dict) -> int:
        return sched_unroll(config)

    def seeds(self, space, N: int, lo: int, hi: int, sm_count: int) -> list[tuple[int, int, dict]]:
        return list(SCHED_SEEDS)

    def resources(self, config: dict, workload, device) -> tuple[int, int, int, int]:
        return self.threads(config), wgmma_registers({"consumers": 2}), 0, self.smem(config)

    def modelled(self, config: dict, M: int, N: int, K: int, spec, device) -> tuple[float, int]:
        return modelled_sched_us(config, M, N, K, device), wgmma_registers({"consumers": 2})

    def probe_features(self, config: dict, workload, device) -> list[float]:
        c = config
        return [math.log2(c[k]) for k in ("bm", "bn", "swizzle", "stages", "group")] + [
            float(c["schedule"] == "pingpong"), float(c["epi_boxes"]),
            math.log2(self.threads(c)), math.log2(self.unroll(c))]


# -- the micro-kernel's sketch ------------------------------------------------------------------------
# hgemm_wgmma's producer and raster with two consumer warpgroups (cooperative: the tile's rows split
# between them; ping-pong: whole tiles in turn) and an epilogue staged whole or a box at a time
# (templates/hgemm_wgmma_sched.py, behind dyn_sched_enabled).  Its threads are fixed (384), so
# `sample_sched` draws the schedule first (which sets the tile heights a consumer's accumulators
# allow), then (BM, BN) jointly under the accumulators and the largest extents, then the staging,
# swizzle, ring depth and raster group; the unroll (wgmma a consumer issues per slot: its m64 blocks x
# BK / 16) is derived, never drawn.


def sched_unroll(config: dict) -> int:
    return consumer_m_blocks(config["bm"], config["schedule"]) * (config["swizzle"] // 32)


def _sched_inner(space: Space, schedule: str, extents) -> list[tuple[int, int]]:
    cap_m, cap_n = _wg_caps(extents)
    return [(bm, bn) for bm in space.knob("bm").values for bn in space.knob("bn").values
            if consumer_m_blocks(bm, schedule) * bn // 2 <= 128
            and bm <= max(64 if schedule == "pingpong" else 128, cap_m) and bn <= max(64, cap_n)]


def sample_sched(space: Space, extents: tuple[int, int], rng: random.Random, max_tries: int = 2000) -> dict:
    """One hgemm_wgmma_sched micro-kernel of HgemmWgmmaSchedDynTemplate's space, drawn jointly for the
    largest extents (M_max, N): ConfigError if none is found."""
    vals = {k.name: k.values for k in space.knobs}
    for _ in range(max_tries):
        sched = rng.choice(vals["schedule"])
        inner = _sched_inner(space, sched, extents)
        if not inner:
            continue
        bm, bn = rng.choice(inner)
        cfg = {"bm": bm, "bn": bn, "swizzle": rng.choice(vals["swizzle"]), "stages": rng.choice(vals["stages"]),
               "group": rng.choice(vals["group"]), "schedule": sched, "epi_boxes": rng.choice(vals["epi_boxes"])}
        if space.contains(cfg):
            return cfg
    raise ConfigError(f"no hgemm_wgmma_sched micro-kernel found for extents {extents} in {max_tries} draws")


def mutate_sched(space: Space, config: dict, rng: random.Random, extents: tuple[int, int],
                 max_tries: int = 50) -> dict | None:
    """A neighbour keeping the schedule: BM or BN resampled within the accumulators, or the staging,
    swizzle, ring depth or raster group changed."""
    vals = {k.name: k.values for k in space.knobs}
    inner = _sched_inner(space, config["schedule"], extents)
    for _ in range(max_tries):
        c = dict(config)
        if rng.random() < 0.4 and inner:
            c["bm"], c["bn"] = rng.choice(inner)
        else:
            knob = rng.choice(("epi_boxes", "swizzle", "stages", "stages", "group"))
            c[knob] = rng.choice(vals[knob])
        if c != config and space.contains(c):
            return c
    return None


def sched_describe(config: dict) -> str:
    c = config
    return (f"sched {c['schedule']} {c['bm']}x{c['bn']}x{c['swizzle'] // 2} boxes {c['epi_boxes']} st{c['stages']} "
            f"g{c['group']} unroll {sched_unroll(c)}")

# -- the synthetic runner's model of it (templates/gemm_model.py) ------------------------------------

def modelled_sched_us(config: dict, M: int, N: int, K: int, device) -> float:
    """hgemm_wgmma_sched: `modelled_wgmma_us` of two consumers, a ping-pong schedule 5% slower (as it ran
    in the sched sweep) and a box-ring staging 2% faster (its deeper ring).  MODELLED, not measured."""
    c = config
    us = modelled_wgmma_us({"bm": c["bm"], "bn": c["bn"], "consumers": 2, "swizzle": c["swizzle"],
                            "stages": c["stages"], "group": c["group"]}, M, N, K, device)
    return us * (1.05 if c["schedule"] == "pingpong" else 1.0) * (0.98 if c["epi_boxes"] else 1.0)
