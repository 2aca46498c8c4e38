"""The wgmma GEMM with its two consumer warpgroups splitting the tile by columns
(kernels/hgemm_wgmma_nsplit.cuh): each multiplies every m64 block of the BM x BN tile by half of B's
columns, so a 64-row tile still has two warpgroups issuing wgmma.  For prefill GEMMs of 128 rows:
64 x 64 tiles give 128 CTAs for N = 4096, where hgemm_wgmma's two consumers split rows and need
BM = 128 (64 CTAs); cuBLAS's kernel for that shape splits 64 x 64 tiles the same way (H100).

A template of its own beside hgemm_wgmma, as split-K is: a knob of hgemm_wgmma would change its
build id and config keys, so none of its recordings would count any more.  Knobs: hgemm_wgmma's
without `consumers` (always two, by columns), BM 64 or 128, BN 64, 128 or 256 (a consumer's half is
a wgmma N: 32, 64 or 128), at most 128 accumulators a consumer thread.

Gated by knobs.WGMMA_NSPLIT.  Its GPU stage (`python3 scripts/gpu_check.py nsplit`) passed on an H100 on
2026-11-26 (tests vs float64 in every layout, memcheck and racecheck clean), but the switch stays
off: tuned on the three prefill shapes under 91% of cuBLAS it beat hgemm_wgmma on none
(128x4096x4096: 64 x 64 tiles on 128 CTAs 26.9 us, its best 26.7, hgemm_wgmma's 128 x 64 on 64 CTAs
26.0), so in the family it would only take tuning time.  What cuBLAS's kernel has beside the column
split is a cluster of two with TMA multicast (kernels/hgemm_wgmma_cluster.cuh pairs CTAs of
hgemm_wgmma's row-split consumers only).
"""

from __future__ import annotations

from autosched import knobs
from autosched.space import Constraint, Knob, Space
from autosched.templates.base import default_and_random, distinct
from autosched.templates.hgemm_wgmma import MAX_ACC, HgemmWgmmaVariant, bk_of
from autosched.workloads.base import WorkloadError

THREADS = 384           # a producer warpgroup and two consumers


def nsplit_enabled() -> bool:
    return knobs.WGMMA_NSPLIT.enabled()


class HgemmWgmmaNSplitTemplate(HgemmWgmmaVariant):
    family = "hgemm_wgmma_nsplit"
    header = "hgemm_wgmma_nsplit.cuh"   # inlines wgmma_narrow.cuh and hgemm_wgmma.cuh: an edit to any stales the build id

    def _space(self, workload, device) -> Space:
        """hgemm_wgmma's space (its rules on N, M, the raster group, shared memory and the GPU) without
        `consumers` and the rules that read it, BM and BN narrowed, and the column split's own rules."""
        base = super()._space(workload, device)
        narrowed = {
            "bm": Knob("bm", (64, 128), "rows of C a CTA tile holds: 1 or 2 m64 blocks, both consumers run each"),
            "bn": Knob("bn", (64, 128, 256), "columns of C a CTA tile holds: each consumer takes half (its wgmma N)"),
        }
        knobs = [narrowed.get(k.name, k) for k in base.knobs if k.name != "consumers"]
        C = Constraint
        rules = [c for c in base.constraints if "consumers" not in c.knobs] + [
            C(f"accumulators (BM / 64) x BN / 4 <= {MAX_ACC} a consumer thread, and BM x BN / 2 for the ring's "
              "one-consumer layout", ("bm", "bn"), lambda bm, bn: (bm // 64) * bn // 2 <= MAX_ACC),
            C("an MN-major B (stored (K, N)): a consumer's half of BN is whole K slices wide", ("bn", "swizzle"),
              lambda bn, sw: workload.b_col or (bn // 2) % bk_of(sw) == 0),
        ]
        return Space(knobs, rules)

    def default_config(self, workload, device) -> dict:
        """64 x 64 tiles, 128B swizzle, an 8-deep ring, raster group 1: the prefill shape's layout."""
        why = self.device_refuses(device)
        if why is not None:
            raise WorkloadError(f"{self.family} cannot serve {workload.key} here: {why}")
        return self.space(workload, device).nearest({"bm": 64, "bn": 64, "swizzle": 128, "stages": 8, "group": 1})

    def kernel_values(self, workload, cfg: dict) -> dict:
        """HgemmWgmmaNSplit's template arguments: hgemm_wgmma's without CONSUMERS (always two)."""
        return {"BF16": workload.bf16, "A_MN": workload.a_col, "B_MN": 1 - workload.b_col, "BM": cfg["bm"],
                "BN": cfg["bn"], "SWZ": cfg["swizzle"], "STAGES": cfg["stages"], "GROUP": cfg["group"]}

    def threads(self, cfg: dict) -> int:
        return THREADS

    def sanitizer_picks(self, workload, device) -> list[dict]:
        """The column-split wgmma template's corners: the smallest tile with the shortest ring and 32-byte
        swizzle (the most CTAs, the halves 32 columns wide), the most shared memory, the most accumulators
        a consumer thread, then the default and two random ones."""
        cfgs = self.space(workload, device).enumerate()
        if not cfgs:
            return []
        smem = self.smem
        picks = [min(cfgs, key=lambda c: (c["bm"] * c["bn"], c["swizzle"], c["stages"])), max(cfgs, key=smem),
                 max(cfgs, key=lambda c: (c["bm"] * c["bn"], -c["group"]))]
        picks += default_and_random(self, workload, device)
        return distinct(picks)
