"""The wgmma GEMM with ping-pong consumers (kernels/hgemm_wgmma_pingpong.cuh): each of the two
consumer warpgroups owns whole BM x BN tiles (the CTA's even tiles and its odd ones), and the two take
turns at the tensor cores, so one's epilogue runs under the other's main loop.  hgemm_wgmma's two
consumers split each tile by rows and store it together, leaving the tensor cores idle for every
tile's epilogue: at 4096^3 its whole space holds nothing faster than 96-98% of cuBLAS (H100,
2026-11-27).

A template of its own beside hgemm_wgmma, as split-K is: a knob of hgemm_wgmma would change its
build id and config keys, so none of its recordings would count any more.  Knobs: hgemm_wgmma's
without `consumers` (always two, a tile each), BM 64 or 128 (a consumer runs every m64 block of its
tile), at most 128 accumulators a consumer thread; shared memory holds two tiles' staging.

Gated by PINGPONG_VERIFIED (`bash scripts/gpu_check.sh pingpong`: GPU tests vs float64 in every
layout, memcheck and racecheck of its corners, a timing against hgemm_wgmma and cuBLAS).
"""

from __future__ import annotations

from autosched.space import Constraint, Knob, Space
from autosched.switches import env_switch
from autosched.templates.hgemm_wgmma import MAX_ACC, SMEM_CAP_SM90, HgemmWgmmaVariant
from autosched.workloads.base import WorkloadError

# THE switch: off until `bash scripts/gpu_check.sh pingpong` passes on an sm_90 GPU and its timing
# shows a gain somewhere; AUTOSCHED_WGMMA_PINGPONG=1 in the environment tries it.
PINGPONG_VERIFIED = False
THREADS = 384           # a producer warpgroup and two consumers


def pingpong_enabled() -> bool:
    return env_switch("AUTOSCHED_WGMMA_PINGPONG", PINGPONG_VERIFIED)


def smem_bytes(bm, bn, swizzle, stages) -> int:
    """HgemmWgmmaPingpong::SMEM_BYTES: the ring, two BM x BN stagings (one a consumer), full and empty
    barriers per slot and an order barrier per consumer, 1024 bytes to align the base."""
    return stages * (bm + bn) * swizzle + 2 * bm * bn * 2 + (2 * stages + 2) * 8 + 1024


class HgemmWgmmaPingpongTemplate(HgemmWgmmaVariant):
    family = "hgemm_wgmma_pingpong"
    header = "hgemm_wgmma_pingpong.cuh"   # inlines hgemm_wgmma.cuh: an edit to either stales the build id

    def _space(self, workload, device) -> Space:
        """hgemm_wgmma's space (its rules on N, M, the raster group and the GPU) without `consumers`,
        the rules that read it and its shared-memory rule; BM narrowed to a consumer's tile; the
        accumulator and shared-memory rules of a tile a consumer."""
        base = super()._space(workload, device)
        bm = Knob("bm", (64, 128), "rows of C a tile holds (1 or 2 m64 blocks), each consumer a tile of its own")
        knobs = [bm if k.name == "bm" else k for k in base.knobs if k.name != "consumers"]
        cap = min(device.smem_per_block_optin, SMEM_CAP_SM90)
        C = Constraint
        rules = [c for c in base.constraints
                 if "consumers" not in c.knobs and not c.name.startswith("shared memory")] + [
            C(f"accumulators (BM / 64) x BN / 2 <= {MAX_ACC} a consumer thread", ("bm", "bn"),
              lambda bm, bn: (bm // 64) * bn // 2 <= MAX_ACC),
            C(f"shared memory <= {cap} B a block (ring + two tiles' staging + barriers + alignment)",
              ("bm", "bn", "swizzle", "stages"), lambda bm, bn, sw, st: smem_bytes(bm, bn, sw, st) <= cap),
        ]
        return Space(knobs, rules)

    def default_config(self, workload, device) -> dict:
        """128 x 128 tiles (a consumer each), 128B swizzle, the deepest ring that fits (5 slots), raster
        group 8: the shape of the ping-pong kernels published for large Hopper GEMMs; the nearest
        point of this shape's space."""
        why = self.device_refuses(device)
        if why is not None:
            raise WorkloadError(f"{self.family} cannot serve {workload.key} here: {why}")
        return self.space(workload, device).nearest({"bm": 128, "bn": 128, "swizzle": 128, "stages": 5, "group": 8})

    def kernel_values(self, workload, cfg: dict) -> dict:
        """HgemmWgmmaPingpong's template arguments: hgemm_wgmma's without CONSUMERS (always two)."""
        return {"BF16": workload.bf16, "A_MN": workload.a_col, "B_MN": 1 - workload.b_col, "BM": cfg["bm"],
                "BN": cfg["bn"], "SWZ": cfg["swizzle"], "STAGES": cfg["stages"], "GROUP": cfg["group"]}

    def smem(self, cfg: dict) -> int:
        return smem_bytes(cfg["bm"], cfg["bn"], cfg["swizzle"], cfg["stages"])

    def threads(self, cfg: dict) -> int:
        return THREADS

    def _kernel(self, workload, cfg: dict, device) -> tuple:
        tiles = -(-workload.M // cfg["bm"]) * -(-workload.N // cfg["bn"])
        args = ", ".join(str(v) for v in self.kernel_values(workload, cfg).values())
        # persistent, a CTA per SM at most (its two consumers take the CTA's tiles in turn)
        return self.header, f"hgemm_wgmma_pingpong<{args}>", min(tiles, device.sm_count), None, ()
