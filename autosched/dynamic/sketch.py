"""Micro-kernel sketches for a dynamic M: tile sizes sampled jointly under the target's limits, from
the largest extents, and mutated without touching the tiles bound to threads.

A micro-kernel is an hgemm_dyn config.  Its tiles, per dimension, from the outside in:

    M:  grid rows (ceil(M/BM), dynamic) | warps_m (threadIdx) | mt: 16-row MMA tiles a warp holds
    N:  grid cols                       | warps_n (threadIdx) | nt: 16-column pairs of MMA tiles
    K:  slices (K/BK)                   | ks: k16 steps of a slice

so BM = warps_m * 16 * mt, BN = warps_n * 16 * nt, BK = 16 * ks.  `sample` draws (warps_m, warps_n)
first (the block's threads), then the inner tiles (mt, nt) that the register file admits for that
many threads, then ks, stages and padding that the shared memory admits: all jointly, each draw
among the values the earlier ones leave valid, none required to divide any extent (an M of 4095 or
a prime N is as good as 4096).  The unroll factor is never drawn: it is mt * 2nt * ks
(templates.hgemm_dyn.unroll), so a mutated config stays consistent.
"""

from __future__ import annotations

import random

from autosched.space import ConfigError, Space
from autosched.templates.hgemm_dyn import BLOCK_TILES, WARP_TILES, unroll

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


# -- hgemm_wgmma micro-kernels ----------------------------------------------------------------------
# The template is a sketch dimension: a micro-kernel is (family, config).  wgmma's tiles are bound to
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
# hgemm_wgmma_splitk (behind templates/hgemm_wgmma_splitk.py's dyn_split_k_enabled) is the same
# kernel with K cut in split_k slices: one more inner tile of K, drawn last and mutated like the
# ring depth; the tiles bound to threads are wgmma's, so the same sampler and mutation serve both.
DYN, WG, WGS = "hgemm_dyn", "hgemm_wgmma", "hgemm_wgmma_splitk"
WG_FAMILIES = (WG, WGS)       # warpgroup tiles: TMA, persistent grid, one CTA an SM
WG_THREAD_TILES = ("consumers",)
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


# -- hgemm_stream micro-kernels ----------------------------------------------------------------------
# The weight-streaming kernel for few rows (templates/hgemm_stream.py, behind its dyn_stream_enabled).
# Its tiles, from the outside in:
#
#     N (rows of W):  grid x                 | wn warps (threadIdx) | rw: 16-row blocks a warp owns
#     M (rows of A):  grid z (ceil(M/mt))    | every warp           | mt / 8 MMA columns
#     K:              grid y (split_k)       | wk warps (threadIdx) | kw a warp takes of each ring slot
#
# so its output tile is mt x BN with BN = 16 x rw x wn.  `sample_stream` draws the warps (wn, wk: the
# block's threads) first, then (rw, mt) jointly under the accumulator budget (rw x mt / 2 floats a
# thread), then kw, the ring depth and split_k; `mutate_stream` keeps the warps.  The unroll (MMAs a
# warp issues per ring slot: rw x mt / 8 x kw / 16) is derived, never drawn.
STR = "hgemm_stream"


def stream_unroll(config: dict) -> int:
    c = config
    return c["rw"] * (c["mt"] // 8) * (c["kw"] // 16)


def sample_stream(space: Space, extents: tuple[int, int], rng: random.Random, max_tries: int = 2000) -> dict:
    """One hgemm_stream micro-kernel of HgemmStreamDynTemplate's space, drawn jointly: ConfigError if
    none is found."""
    from autosched.templates.hgemm_stream import MAX_ACC
    vals = {k.name: k.values for k in space.knobs}
    for _ in range(max_tries):
        wn, wk = rng.choice(vals["wn"]), rng.choice(vals["wk"])
        if not 64 <= 32 * wn * wk <= 512:
            continue
        inner = [(rw, mt) for rw in vals["rw"] for mt in vals["mt"] if rw * mt // 2 <= MAX_ACC]
        rw, mt = rng.choice(inner)
        cfg = {"rw": rw, "wn": wn, "wk": wk, "mt": mt, "kw": rng.choice(vals["kw"]),
               "stages": rng.choice(vals["stages"]), "split_k": rng.choice(vals["split_k"])}
        if space.contains(cfg):
            return cfg
    raise ConfigError(f"no hgemm_stream micro-kernel found for extents {extents} in {max_tries} draws")


def mutate_stream(space: Space, config: dict, rng: random.Random, extents: tuple[int, int],
                  max_tries: int = 50) -> dict | None:
    """A neighbour keeping the warps (wn, wk): a factor of 2 moved between rw and mt (the same
    accumulators), rw, mt or kw resampled, or the ring depth or split_k changed."""
    vals = {k.name: k.values for k in space.knobs}
    for _ in range(max_tries):
        c = dict(config)
        move = rng.random()
        if move < 0.3:
            if c["rw"] * 2 in vals["rw"] and c["mt"] // 2 in vals["mt"]:
                c["rw"], c["mt"] = c["rw"] * 2, c["mt"] // 2
            elif c["rw"] // 2 in vals["rw"] and c["mt"] * 2 in vals["mt"]:
                c["rw"], c["mt"] = c["rw"] // 2, c["mt"] * 2
        elif move < 0.7:
            knob = rng.choice(("rw", "mt", "kw"))
            c[knob] = rng.choice(vals[knob])
        else:
            knob = rng.choice(("stages", "split_k"))
            c[knob] = rng.choice(vals[knob])
        if c != config and space.contains(c):
            return c
    return None


def stream_describe(config: dict) -> str:
    c = config
    return (f"stream {c['mt']}x{16 * c['rw'] * c['wn']} warps {c['wn']}x{c['wk']} rw {c['rw']} kw {c['kw']} "
            f"st{c['stages']} split{c['split_k']} unroll {stream_unroll(c)}")


# -- hgemm_wgmma_swap micro-kernels -------------------------------------------------------------------
# The swapped-roles wgmma kernel for few rows (templates/hgemm_wgmma_swap.py, behind swap_enabled):
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
SWP = "hgemm_wgmma_swap"


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


# -- hgemm_wgmma_sched micro-kernels ------------------------------------------------------------------
# hgemm_wgmma's producer and raster with two consumer warpgroups (cooperative: the tile's rows split
# between them; ping-pong: whole tiles in turn) and an epilogue staged whole or a box at a time
# (templates/hgemm_wgmma_sched.py, behind dyn_sched_enabled).  Its threads are fixed (384), so
# `sample_sched` draws the schedule first (which sets the tile heights a consumer's accumulators
# allow), then (BM, BN) jointly under the accumulators and the largest extents, then the staging,
# swizzle, ring depth and raster group; the unroll (wgmma a consumer issues per slot: its m64 blocks x
# BK / 16) is derived, never drawn.
SCH = "hgemm_wgmma_sched"


def sched_unroll(config: dict) -> int:
    from autosched.templates.hgemm_wgmma_sched import consumer_m_blocks
    return consumer_m_blocks(config["bm"], config["schedule"]) * (config["swizzle"] // 32)


def _sched_inner(space: Space, schedule: str, extents) -> list[tuple[int, int]]:
    from autosched.templates.hgemm_wgmma_sched import consumer_m_blocks
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


def tile_of(family: str, config: dict) -> tuple[int, int]:
    """(rows of the output, columns) one tile (a CTA, or a persistent loop's step) covers."""
    if family == STR:
        return config["mt"], 16 * config["rw"] * config["wn"]
    if family == SWP:
        return config["bt"], config["bw"]
    return config["bm"], config["bn"]


# -- any template ---------------------------------------------------------------------------------

def sample_any(spaces: dict, extents: tuple[int, int], rng: random.Random, local_pad: int = 1) -> tuple[str, dict]:
    """(family, config): the template drawn first (uniformly among `spaces`, family -> Space), then
    its tiles jointly."""
    fam = rng.choice(sorted(spaces)) if len(spaces) > 1 else next(iter(spaces))
    if fam in WG_FAMILIES:
        return fam, sample_wgmma(spaces[fam], extents, rng)
    if fam == STR:
        return fam, sample_stream(spaces[fam], extents, rng)
    if fam == SWP:
        return fam, sample_swap(spaces[fam], extents, rng)
    if fam == SCH:
        return fam, sample_sched(spaces[fam], extents, rng)
    return fam, sample(spaces[fam], extents, rng, local_pad=local_pad)


def mutate_any(spaces: dict, family: str, config: dict, rng: random.Random, extents) -> dict | None:
    if family in WG_FAMILIES:
        return mutate_wgmma(spaces[family], config, rng, extents)
    if family == STR:
        return mutate_stream(spaces[family], config, rng, extents)
    if family == SWP:
        return mutate_swap(spaces[family], config, rng, extents)
    if family == SCH:
        return mutate_sched(spaces[family], config, rng, extents)
    return mutate(spaces[family], config, rng, extents)


def threads_of(family: str, config: dict) -> int:
    if family in WG_FAMILIES:
        return 128 * (config["consumers"] + 1)
    if family == STR:
        return 32 * config["wn"] * config["wk"]
    if family == SWP:
        from autosched.templates.hgemm_wgmma_swap import THREADS
        return THREADS
    if family == SCH:
        from autosched.templates.hgemm_wgmma_sched import THREADS
        return THREADS
    from autosched.templates.gemm_tiles import threads
    return threads(config["bm"], config["bn"], config["wm"], config["wn"])


def unroll_of(family: str, config: dict) -> int:
    if family == STR:
        return stream_unroll(config)
    if family == SWP:
        return swap_unroll(config)
    if family == SCH:
        return sched_unroll(config)
    return wgmma_unroll(config) if family in WG_FAMILIES else unroll(config)


def describe_any(family: str, config: dict) -> str:
    if family == STR:
        return stream_describe(config)
    if family == SWP:
        return swap_describe(config)
    if family == SCH:
        return sched_describe(config)
    return wgmma_describe(config) if family in WG_FAMILIES else describe(config)


# -- seeds: the rule-based configs --------------------------------------------------------------------

def _measured_seeds(family: str) -> list[tuple[int, int, dict]] | None:
    """(first M, last M, config) seeds of a template without a default ladder: hgemm_stream's
    STREAM_SEEDS (each config up to its largest M, from the one before), hgemm_wgmma_splitk's
    SPLIT_K_SEEDS; None for the others."""
    if family == STR:
        from autosched.templates.hgemm_stream import STREAM_SEEDS
        firsts = [1] + [top + 1 for top, _ in STREAM_SEEDS[:-1]]
        return [(first, top, cfg) for first, (top, cfg) in zip(firsts, STREAM_SEEDS)]
    if family == WGS:
        from autosched.templates.hgemm_wgmma_splitk import SPLIT_K_SEEDS
        return list(SPLIT_K_SEEDS)
    if family == SWP:
        from autosched.templates.hgemm_wgmma_swap import SWAP_SEEDS
        return list(SWAP_SEEDS)
    if family == SCH:
        from autosched.templates.hgemm_wgmma_sched import SCHED_SEEDS
        return list(SCHED_SEEDS)
    return None


def seed_kernels(dw, templates, device) -> list[tuple[str, dict, list[tuple[int, int]]]]:
    """(family, config, [(first M, last M), ...]) of the rule-based configs that ops.hgemm serves by
    default over dw's range (templates/hgemm_ladder.py: hgemm_dyn's DEFAULT_LADDER, hgemm_wgmma's
    wave-model ladder over WGMMA_CANDIDATES; hgemm_stream, which ops serve only once tuned, its
    STREAM_SEEDS over the Ms they were best at; hgemm_wgmma_splitk its SPLIT_K_SEEDS), for each of
    `templates` that has a ladder, each config once with the Ms of the range it serves, and only
    those the template's space holds for dw.largest.  Measured first, they make the search start from the known-good kernels and give
    selection its floor: no instance served worse than its ladder's kernel."""
    from autosched.space import config_hash
    from autosched.templates.hgemm_ladder import served_configs
    out: dict[tuple[str, str], tuple[str, dict, list]] = {}
    for t in templates:
        space = t.space(dw.largest, device)
        served = served_configs(t.family, space, dw.N, dw.lo, dw.hi, device.sm_count)
        seeds = _measured_seeds(t.family)      # no default ladder: the configs measured best, over their Ms
        if seeds is not None:
            served = [(max(first, dw.lo), min(last, dw.hi), cfg) for first, last, cfg in seeds
                      if max(first, dw.lo) <= min(last, dw.hi)]
        for first, last, cfg in served:
            if not space.contains(cfg):
                continue
            key = (t.family, config_hash(cfg))
            out.setdefault(key, (t.family, space.validate(cfg), []))[2].append((first, last))
    return list(out.values())
