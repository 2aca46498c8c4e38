"""The rule-based ladders of the dynamic-M GEMM micro-kernels: which config serves which M where no
measurement says otherwise.  Data and the wave estimate only, so that both ops.hgemm (which serves
them by default) and dynamic/ (which seeds its search with them) import them from here: templates/
sits below both in the one-way flow.

  * hgemm_dyn (mma.sync): DEFAULT_LADDER, the template's own default (128 x 128 blocks of four
    64 x 64 warps) from M = 257 up, smaller blocks below, so that a short prompt still gives the GPU
    more than a few dozen blocks.
  * hgemm_wgmma: WGMMA_CANDIDATES, each M served by the one `wgmma_estimate` (a wave model) puts
    first (`wgmma_ladder`).

`ladder_rungs(family, space, N, m_max, sm_count)` is what ops.HgemmDispatch serves over 1..m_max;
a template's `seeds` the rungs that serve some M of a dynamic run's range.
"""

from __future__ import annotations

import json

import numpy as np

DYN, WG = "hgemm_dyn", "hgemm_wgmma"

# (largest M it serves, config): the default micro-kernel by M where no dynamic tuning covers M
DEFAULT_LADDER = (
    (64, {"bm": 64, "bn": 64, "wm": 32, "wn": 32, "bk": 32, "stages": 3, "pad": 8, "local_pad": 1}),
    (256, {"bm": 64, "bn": 128, "wm": 32, "wn": 64, "bk": 32, "stages": 3, "pad": 8, "local_pad": 1}),
    (None, {"bm": 128, "bn": 128, "wm": 64, "wn": 64, "bk": 32, "stages": 3, "pad": 8, "local_pad": 1}),
)
# The wgmma configs the ladder picks from.  128B swizzle everywhere (K slices of 64: the longest
# wgmma run per slot, one TMA box per operand); the ring as deep as the 227 KB leave room for (a
# small tile streams its weights faster with more slots in flight: checks/wgmma-stages-*.json);
# raster groups of 8 tile rows.
#   64 x  64, 1 consumer, 12 slots (206 KB): M <= 64 on N <= ~8K: N / 64 CTAs share the weight stream
#   64 x 128, 1 consumer, 8 slots (214 KB): the same for wider N
#   64 x 256, 1 consumer, 4 slots (198 KB): very wide N (22016): 86 CTAs of m64n256 instructions
#  128 x 128, 2 consumers, 6 slots (230 KB): mid M (a few hundred): twice the tiles of 128 x 256
#  128 x 256, 2 consumers, 3 slots (214 KB): the template's default, large M
WGMMA_CANDIDATES = (
    {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 12, "group": 8},
    {"bm": 64, "bn": 128, "consumers": 1, "swizzle": 128, "stages": 8, "group": 8},
    {"bm": 64, "bn": 256, "consumers": 1, "swizzle": 128, "stages": 4, "group": 8},
    {"bm": 128, "bn": 128, "consumers": 2, "swizzle": 128, "stages": 6, "group": 8},
    {"bm": 128, "bn": 256, "consumers": 2, "swizzle": 128, "stages": 3, "group": 8},
)
# arithmetic intensity BM*BN/(BM+BN) (flops per operand byte of a tile, /2) of the 128 x 256 tile, which
# keeps an SM's tensor cores fed from L2; smaller tiles get that share of it
_REF_INTENSITY = 128 * 256 / (128 + 256)
_ONE_CONSUMER = 0.9        # one warpgroup: no second consumer's mainloop to hide its epilogue behind


def wgmma_estimate(config: dict, M, N: int, sm_count: int):
    """Relative time of the persistent wgmma kernel on M (scalar or array): rounds of one tile per
    SM (ceil(tiles / #SMs)) x a tile's work BM*BN over its efficiency, min(1, intensity / the 128 x
    256 tile's) (x 0.9 with one consumer).  A ranking, not a time: it knows waves and tile shape."""
    c = config
    tiles = -(-np.asarray(M) // c["bm"]) * -(-N // c["bn"])
    eff = min(1.0, c["bm"] * c["bn"] / (c["bm"] + c["bn"]) / _REF_INTENSITY)
    eff *= _ONE_CONSUMER if c["consumers"] == 1 else 1.0
    return -(-tiles // sm_count) * (c["bm"] * c["bn"] / eff)


def wgmma_ladder(configs, N: int, m_max: int, sm_count: int) -> list[tuple[int, int]]:
    """(largest M, index into configs) runs over 1..m_max: each M on the config wgmma_estimate ranks
    first (the earlier one on ties)."""
    ms = np.arange(1, m_max + 1)
    est = np.stack([wgmma_estimate(c, ms, N, sm_count) for c in configs])
    best = np.argmin(est, axis=0)
    out: list[tuple[int, int]] = []
    for m, i in zip(ms, best):
        if out and out[-1][1] == int(i):
            out[-1] = (int(m), int(i))
        else:
            out.append((int(m), int(i)))
    return out


def _dedup(configs) -> list[dict]:
    return list({json.dumps(c, sort_keys=True): dict(c) for c in configs}.values())


def _nearest_grouped(space, cfg: dict) -> dict:
    """space.nearest(cfg) with the largest raster group the space keeps up to cfg's: where M has few
    tile rows a static space keeps few groups, and nearest alone takes the first (1), which walks
    two tile rows apart (H100, 128x4096x4096_bt at 64 x 64: group 1 25.3 us, group 4 22.1)."""
    near = space.nearest(cfg)
    fits = [g for g in space.knob("group").values if g <= cfg["group"] and space.contains({**near, "group": g})]
    return space.validate({**near, "group": max(fits)}) if fits else near


def ladder_rungs(family: str, space, N: int, m_max: int, sm_count: int) -> list[tuple[int, dict]]:
    """(largest M, config) rungs of `family`'s ladder over M in 1..m_max, each config the point of
    `space` nearest the ladder's (Space.nearest: a narrow N rules some tiles out).  [] for a family
    without a ladder."""
    if family == DYN:
        rungs = []
        for top, cfg in DEFAULT_LADDER:
            rungs.append((m_max if top is None else min(top, m_max), space.nearest(cfg)))
            if rungs[-1][0] >= m_max:
                break
        return rungs
    if family == WG:
        cands = _dedup(_nearest_grouped(space, c) for c in WGMMA_CANDIDATES)
        return [(top, cands[i]) for top, i in wgmma_ladder(cands, N, m_max, sm_count)]
    return []
