"""Two consumer warpgroups on one 64-row tile of the wgmma GEMM (kernels/hgemm_wgmma_kpair.cuh),
splitting the k-blocks between them (consumer it % 2 takes k-block it) and summing through shared
memory before one epilogue.  For GEMMs whose 64-row tiles are few (a prefill's 128 rows: 128 tiles of
64 x 64 for 132 SMs), where hgemm_wgmma has to choose between two consumers on 128-row tiles (half
the SMs idle) and one consumer on 64-row tiles.

A template of its own beside hgemm_wgmma, as split-K is: a knob there would change hgemm_wgmma's build
id and config keys.  Its configs carry bm = 64 and consumers = 2 (the TMA boxes and the block size
read them), with hgemm_wgmma's other knobs; the ring is even (each consumer owns the slots of its
parity).  Its space is empty where the 64-row tiles fill the GPU twice or more: there the consumers
of hgemm_wgmma have tiles of their own to work on.
"""

from __future__ import annotations

import dataclasses

from autosched.space import Constraint, Knob, Space
from autosched.templates.base import Template
from autosched.templates.hgemm_wgmma import SMEM_CAP_SM90, HgemmWgmmaTemplate, smem_bytes as wgmma_smem_bytes

# even, and two slots or more a consumer (the .cuh's static_asserts): a consumer releases a slot after
# issuing its next, so one owning a single slot would wait for its refill while holding it (a ring of
# 2 hung on the H100, 2026-11-24)
STAGES = (4, 6, 8)


def smem_bytes(bn: int, swizzle: int, stages: int) -> int:
    """hgemm_wgmma's at bm = 64, plus consumer 1's FP32 accumulators (64 x BN): HgemmWgmmaKPair::SMEM_BYTES."""
    return wgmma_smem_bytes(64, bn, swizzle, stages) + 64 * bn * 4


class HgemmWgmmaKPairTemplate(HgemmWgmmaTemplate):
    family = "hgemm_wgmma_kpair"
    header = "hgemm_wgmma_kpair.cuh"   # inlines hgemm_wgmma.cuh: an edit to either stales the build id

    def cluster(self) -> bool:
        return False

    def source_hash(self) -> str:
        return Template.source_hash(self)

    def default_on(self, device) -> bool:
        return False

    def _space(self, workload, device) -> Space:
        M, N, sms = workload.M, workload.N, device.sm_count
        cap = min(device.smem_per_block_optin, SMEM_CAP_SM90)
        knobs = [
            Knob("bm", (64,), "rows of C a CTA tile holds: one m64 block, shared by the two consumers"),
            Knob("bn", (64, 128, 192, 256), "columns of C a CTA tile holds: the wgmma N"),
            Knob("consumers", (2,), "consumer warpgroups, each taking every other k-block of the tile"),
            Knob("swizzle", (32, 64, 128), "TMA and wgmma swizzle in bytes; the K slice is swizzle/2"),
            Knob("stages", STAGES, "slots in the TMA ring, even (half of them each consumer's)"),
            Knob("group", (1, 4, 8, 16), "tile rows walked together by the persistent raster (L2 reuse)"),
        ]
        C = Constraint
        tiles = lambda bn: -(-M // 64) * -(-N // bn)  # noqa: E731
        rules = [
            C("BN no larger than the smallest tile width that covers N", ("bn",), lambda bn: bn == 64 or bn // 2 < N),
            C("raster group 1, or fewer than twice the tile rows of M", ("group",),
              lambda g: g == 1 or g // 2 < -(-M // 64)),
            # with two waves of 64-row tiles or more, hgemm_wgmma's consumers have tiles of their own
            C(f"fewer 64-row tiles than 2 x {sms} SMs", ("bn",), lambda bn: tiles(bn) < 2 * sms),
            C(f"shared memory <= {cap} B a block (ring + staging + consumer 1's accumulators + barriers)",
              ("bn", "swizzle", "stages"), lambda bn, sw, st: smem_bytes(bn, sw, st) <= cap),
        ]
        why = self.device_refuses(device)
        if why is not None:
            rules.insert(0, C(why, ("bn",), lambda bn: False))
        return Space(knobs, rules)

    def default_config(self, workload, device) -> dict:
        cfg = {"bm": 64, "bn": 64, "consumers": 2, "swizzle": 128, "stages": 8, "group": 1}
        return self.space(workload, device).nearest(cfg)

    def derived_features(self, config: dict, params: dict, device) -> dict[str, float]:
        out = super().derived_features(config, params, device)
        out["smem_bytes"] = smem_bytes(config["bn"], config["swizzle"], config["stages"])
        return out

    def render(self, workload, config: dict, device):
        spec = super().render(workload, config, device)
        c = dict(spec.config)
        return dataclasses.replace(spec, smem_bytes=smem_bytes(c["bn"], c["swizzle"], c["stages"]))

    def _kernel(self, workload, cfg: dict, device) -> tuple:
        v = self.kernel_values(workload, cfg)
        tiles = -(-workload.M // 64) * -(-workload.N // cfg["bn"])
        args = ", ".join(str(v[a]) for a in ("BF16", "A_MN", "B_MN", "BN", "SWZ", "STAGES", "GROUP"))
        return self.header, f"hgemm_wgmma_kpair<{args}>", min(tiles, device.sm_count), None, ()
