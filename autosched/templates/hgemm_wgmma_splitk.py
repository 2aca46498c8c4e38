"""Split-K of the wgmma GEMM (kernels/hgemm_wgmma_splitk.cuh): the persistent grid walks work units of
(output tile, K slice); the last slice of a tile to finish sums the others' FP32 partials from a
workspace (ArgSpec role "workspace": allocated zeroed once by the launcher, left zeroed by the
kernel) and stores C.  For GEMMs with few output tiles and a long K, which hgemm_wgmma leaves short
of a full GPU (128 prefill rows: 64 tiles of 128 x 64 for 132 SMs).

A template of its own beside hgemm_wgmma, not a knob of it: a knob would change hgemm_wgmma's build
id and the keys of its configs, so none of its recordings or database rows would count any more.
Here hgemm_wgmma stays what was measured, split_k 1 is hgemm_wgmma itself (this space holds 2, 3, 4, 6, 8),
and tuning searches both as templates of the hgemm family, selection serving the fastest measured.
Knobs: hgemm_wgmma's (no clusters: the work units are not paired) and split_k.  Its space is empty
on shapes whose every tile leaves two waves of tiles or more (4096^3): there the grid is full
without it, and the tuner and the bench pass over it.

HgemmWgmmaSplitKDynTemplate is the same kernel as a dynamic-M micro-kernel (autosched.dynamic,
ops.HgemmDispatch): M is a run-time argument of the kernel already, so only the rules that read M
(tiles against the SMs, the workspace cap) leave its space, and the workspace is sized per launch by
whoever launches it (dynamic_workspace below).  Gated by its own switch, knobs.DYN_SPLIT_K: the
static switch was earned by GPU tests of one workspace per M, not of one workspace reused across Ms.
"""

from __future__ import annotations

from autosched import knobs
from autosched.space import Constraint, Knob, Space
from autosched.templates import gemm_model
from autosched.templates.base import ArgSpec
from autosched.templates.hgemm_wgmma import (HgemmWgmmaTemplate, HgemmWgmmaVariant, WgmmaMicroKernel, bk_of,
                                            template_args, wgmma_efficiency, wgmma_registers)
from autosched.workloads.base import WorkloadError

SPLIT_K_VALUES = (2, 3, 4, 6, 8)            # within the .cuh's static_assert, 2 to 8 (1 is hgemm_wgmma)
WORKSPACE_CAP = 64 << 20                    # bytes of FP32 partials and counters a launch may ask for


def split_k_enabled() -> bool:
    return knobs.WGMMA_SPLIT_K.enabled()




def dyn_split_k_enabled() -> bool:
    return knobs.DYN_SPLIT_K.enabled()


def workspace_bytes(M: int, N: int, bm: int, bn: int, split_k: int) -> int:
    """HgemmWgmma<..., SPLIT_K>'s workspace (splitk_reduce.cuh): a u32 counter per output tile padded
    to 256 bytes, then split_k x tiles FP32 partial tiles of bm x bn."""
    tiles = -(-M // bm) * -(-N // bn)
    return counter_bytes(tiles) + split_k * tiles * bm * bn * 4


def counter_bytes(tiles: int) -> int:
    """The counters' part of the workspace: a u32 per tile, padded to 256 bytes (the .cuh's
    SplitKReduce::partial)."""
    return -(-tiles * 4 // 256) * 256


def dynamic_workspace(M: int, N: int, bm: int, bn: int, split_k: int, counter_region: int) -> tuple[int, int]:
    """(offset, bytes needed) of one launch in a workspace that launches of any M and any tile share.

    The kernel puts its counters at its pointer and its partials right after ceil(tiles * 4 / 256)
    * 256 bytes, both following its tiles; it resets each counter it used and expects the buffer
    zeroed once.  Sharing one buffer between launches of different tile counts as is would put one
    launch's counters on another's stale partials.  So the pointer is moved forward by
    counter_region - counter_bytes(tiles): every launch's counters then end at counter_region, in
    the first counter_region bytes that no partial ever touches (zeroed once, left zeroed by every
    launch), and every launch's partials start at counter_region.  counter_region: counter_bytes of
    the most tiles any launch may have (the largest M served, the smallest tile)."""
    tiles = -(-M // bm) * -(-N // bn)
    cb = counter_bytes(tiles)
    if cb > counter_region:
        raise ValueError(f"M={M}: {tiles} tiles of {bm}x{bn} need {cb} B of counters, over the {counter_region} "
                         "B the workspace was laid out for")
    return counter_region - cb, counter_region + split_k * tiles * bm * bn * 4


def split_bound_rules(tile_knobs: tuple[str, str], tiles, workspace, sm_count: int) -> list[Constraint]:
    """The rules of a static split-K space (this template's, hgemm_wgmma_swap's) that bound the split by
    the shape: a deep split only within two waves of work units, the workspace under its cap.
    tiles(a, b) and workspace(a, b, split_k) take the values of `tile_knobs` in that order."""
    a, b = tile_knobs
    return [
        # a deep split pays for partials that only a GPU short of tiles earns back
        Constraint(f"split_k above 4 only while its work units fill at most 2 x {sm_count} SMs", (a, b, "split_k"),
                   lambda x, y, sk: sk <= 4 or tiles(x, y) * sk <= 2 * sm_count),
        Constraint(f"split-K workspace (FP32 partials + counters) <= {WORKSPACE_CAP >> 20} MiB", (a, b, "split_k"),
                   lambda x, y, sk: workspace(x, y, sk) <= WORKSPACE_CAP),
    ]


class SplitFeatures:
    """For a persistent wgmma kernel that splits K (this template, hgemm_wgmma_swap): hgemm_wgmma's
    features with the waves counted in work units (tile, K slice), and the split's own; every config
    of such a template has the same features, so its rows of the cost model are all of one length."""

    def workspace_size(self, M: int, N: int, cfg: dict) -> int:
        raise NotImplementedError

    def derived_features(self, config: dict, params: dict, device) -> dict[str, float]:
        c, sk = config, config["split_k"]
        out = super().derived_features(c, params, device)
        out.update({"split_k": sk, "work_units": out["tiles"] * sk, "waves": out["tiles"] * sk / device.sm_count,
                    "k_blocks_per_unit": -(-params["K"] // bk_of(c["swizzle"])) / sk,
                    "workspace_bytes": self.workspace_size(params["M"], params["N"], c)})
        return out


def split_k_knob() -> Knob:
    return Knob("split_k", SPLIT_K_VALUES, "K slices of a tile, summed by the slice that finishes last")


def k_slices_rule(K: int) -> Constraint:
    """The rule of both spaces, static and dynamic, that reads K: no K slice left empty."""
    return Constraint("every K slice holds at least one k-block: ceil(K / BK) >= split_k", ("swizzle", "split_k"),
                      lambda sw, sk: -(-K // bk_of(sw)) >= sk)


class HgemmWgmmaSplitKTemplate(SplitFeatures, HgemmWgmmaVariant):
    family = "hgemm_wgmma_splitk"
    header = "hgemm_wgmma_splitk.cuh"   # inlines hgemm_wgmma.cuh: an edit to either stales the build id

    def _space(self, workload, device) -> Space:
        base = super()._space(workload, device)
        M, N, K, sms = workload.M, workload.N, workload.K, device.sm_count
        tiles = lambda bm, bn: -(-M // bm) * -(-N // bn)  # noqa: E731
        C = Constraint
        rules = [
            # with two waves of tiles or more the persistent grid is full already: the partials'
            # traffic and the reduction would only cost (read by bm and bn alone, so the walk prunes
            # a tile before it reaches the knobs after it)
            C(f"fewer output tiles than 2 x {sms} SMs", ("bm", "bn"), lambda bm, bn: tiles(bm, bn) < 2 * sms),
            k_slices_rule(K),
            *split_bound_rules(("bm", "bn"), tiles, lambda bm, bn, sk: workspace_bytes(M, N, bm, bn, sk), sms),
        ]
        return Space([*base.knobs, split_k_knob()], [*base.constraints, *rules])

    def default_config(self, workload, device) -> dict:
        """hgemm_wgmma's default with two K slices, or the config of the space nearest to it."""
        why = self.device_refuses(device)
        if why is not None:
            raise WorkloadError(f"{self.family} cannot serve {workload.key} here: {why}")
        cfg = {**HgemmWgmmaTemplate().default_config(workload, device), "split_k": 2}
        return self.space(workload, device).nearest(cfg)

    def workspace_size(self, M: int, N: int, cfg: dict) -> int:
        return workspace_bytes(M, N, cfg["bm"], cfg["bn"], cfg["split_k"])

    def _kernel(self, workload, cfg: dict, device) -> tuple:
        M, N, split = workload.M, workload.N, cfg["split_k"]
        tiles = -(-M // cfg["bm"]) * -(-N // cfg["bn"])
        expr = f"hgemm_wgmma_splitk<{template_args(self.kernel_values(workload, cfg))}, {split}>"
        workspace = ArgSpec("workspace", "workspace", value=workspace_bytes(M, N, cfg["bm"], cfg["bn"], split),
                            ctype="unsigned char*")
        # persistent: a CTA per work unit up to one per SM
        return self.header, expr, min(tiles * split, device.sm_count), None, (workspace,)


# A dynamic run's seeds of this template (it has no default ladder): (first M, last M, config) where a
# GEMM's output tiles are too few for the SMs and K is long: the tiles and slices the hgemm bench and the
# full DietCode run found best there (bench/results/hgemm-*-2026-11-26*.json, dynamic-*-2026-11-26*.json);
# four slices of 64 x 64 for a narrow N (768: 12 tile columns), which no split-K micro-kernel served.
SPLIT_K_SEEDS = ((1, 128, {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 12, "group": 1, "split_k": 2}),
                 (1, 256, {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 12, "group": 1, "split_k": 4}),
                 (65, 256, {"bm": 128, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 8, "group": 1, "split_k": 2}))


class HgemmWgmmaSplitKDynTemplate(HgemmWgmmaSplitKTemplate, WgmmaMicroKernel):
    """hgemm_wgmma_splitk as a dynamic-M micro-kernel (as HgemmWgmmaDynTemplate is hgemm_wgmma's):
    the same kernel, family and knobs; its space reads no M, so one binary serves every M.  The
    rules that read M (fewer tiles than two waves, the workspace cap) are the cost model's business
    here: a split-K micro-kernel is picked only where it is predicted fastest, and the workspace of
    a launch follows that launch's M.  The workspace ArgSpec is sized for the M rendered for (what
    the measuring worker allocates); ops.HgemmDispatch lays one buffer out for all Ms instead
    (dynamic_workspace)."""
    dynamic_m = True
    workspace = True
    switch = knobs.DYN_SPLIT_K

    def seeds(self, space, N: int, lo: int, hi: int, sm_count: int) -> list[tuple[int, int, dict]]:
        return list(SPLIT_K_SEEDS)

    def modelled(self, config: dict, M: int, N: int, K: int, spec, device) -> tuple[float, int]:
        return modelled_wgmma_splitk_us(config, M, N, K, device), wgmma_registers(config)

    def _space(self, workload, device) -> Space:
        base = HgemmWgmmaTemplate._space(self, workload, device)     # dynamic_m: no rule on M
        return Space([*base.knobs, split_k_knob()], [*base.constraints, k_slices_rule(workload.K)])

# -- the synthetic runner's model of it (templates/gemm_model.py) ------------------------------------

SPLIT_SYNC_US = 0.3          # a work unit's counter atomic and the wait on its partial's visibility


def modelled_wgmma_splitk_us(config: dict, M: int, N: int, K: int, device) -> float:
    """hgemm_wgmma_splitk, persistent over work units (tile, K slice): ceil(tiles x split_k / #SMs)
    rounds of one unit an SM.  A unit is a wgmma tile over K / split_k at the efficiency of
    `modelled_wgmma_us`, plus its FP32 partial written and, for the last slice, the others' read back
    (at an SM's share of the bandwidth) and a counter's sync.  So at a small M, whose few tiles leave
    SMs idle, more units fill them; at a large M the rounds only grow by the partials' cost.  The
    memory floor adds the partials' traffic to the operands'.  MODELLED, not measured."""
    c, sk = config, config["split_k"]
    tiles = -(-M // c["bm"]) * -(-N // c["bn"])
    eff = wgmma_efficiency(c)
    k_slice = -(-K // sk)
    partial = c["bm"] * c["bn"] * 4
    unit_us = (2.0 * c["bm"] * c["bn"] * k_slice / (gemm_model.WGMMA_PEAK_SM_TFLOPS * 1e12 * eff) * 1e6
               + partial * (2 - 1 / sk) / (gemm_model.BANDWIDTH / device.sm_count) * 1e6 + SPLIT_SYNC_US)
    us = -(-tiles * sk // device.sm_count) * unit_us
    floor = gemm_model.floor_us(M, N, K, 2.0 * tiles * sk * partial)
    return (max(us, floor) + gemm_model.LAUNCH_US) * gemm_model.noise(c, M, N, K, "wgs")
