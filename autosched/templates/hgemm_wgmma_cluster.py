"""Thread-block clusters of two for the wgmma GEMM (kernels/hgemm_wgmma_cluster.cuh): the two CTAs
of a cluster compute two tiles adjacent along M (sharing B) or N (sharing A), and each loads half of
the shared slot with TMA multicast into both CTAs' shared memory, so that operand crosses from L2 to
the SMs once for two tiles.  For prefill GEMMs of few rows: 128 x 4096 x 4096 on 64 x 64 tiles pairs
the two tile rows over each B slice, the layout of cuBLAS's own kernel for that shape (H100,
2026-11-26: nvjet 64x64, 13 slots, clusters of 2).

A template of its own beside hgemm_wgmma, as split-K is: knobs of hgemm_wgmma would change its
build id and config keys, so none of its recordings would count any more.  Knobs: hgemm_wgmma's and
cluster_dim (m: pairs along M multicast B; n: along N multicast A); the cluster is always 2 CTAs
(the .cuh's static_assert; one CTA is hgemm_wgmma itself).  Never in the dynamic-M template: the
grid follows M at the call and the pairing rule reads M.

Gated by knobs.WGMMA_CLUSTER (`python3 scripts/gpu_check.py cluster`: GPU tests vs float64, memcheck,
racecheck, a timing), on since 2026-11-26.
"""

from __future__ import annotations

from autosched import knobs
from autosched.space import Constraint, Knob, Space
from autosched.templates.hgemm_wgmma import HgemmWgmmaVariant, bk_of, template_args

CLUSTER = 2                                 # CTAs of a cluster: the .cuh's static_assert
CLUSTER_DIMS = ("m", "n")                   # pairs along M share B (multicast B); along N share A
SHARED = {"m": "B", "n": "A"}


def cluster_enabled() -> bool:
    return knobs.WGMMA_CLUSTER.enabled()


def cluster_pairs(M: int, N: int, bm: int, bn: int, dim: str) -> tuple[int, int]:
    """(pair units, pairs whose both tiles lie inside C) of HgemmWgmmaCluster: tiles paired along
    `dim`, an odd last tile paired with one outside C."""
    tm, tn = -(-M // bm), -(-N // bn)
    along, across = (tm, tn) if dim == "m" else (tn, tm)
    return -(-along // 2) * across, along // 2 * across


def cluster_l2_bytes_saved(M: int, N: int, K: int, bm: int, bn: int, swizzle: int, dim: str) -> int:
    """Bytes of the shared operand's slots (zero-filled edges included) that a complete pair loads
    once instead of twice: B's BN x K' per pair along M, A's BM x K' along N (K' = K in whole
    k-blocks).  A lone pair saves nothing (its outside tile skips its own operand instead)."""
    _, full = cluster_pairs(M, N, bm, bn, dim)
    k_padded = -(-K // bk_of(swizzle)) * bk_of(swizzle)
    return full * (bn if dim == "m" else bm) * k_padded * 2


class HgemmWgmmaClusterTemplate(HgemmWgmmaVariant):
    family = "hgemm_wgmma_cluster"
    header = "hgemm_wgmma_cluster.cuh"   # inlines hgemm_wgmma.cuh: an edit to either stales the build id

    def _space(self, workload, device) -> Space:
        base = super()._space(workload, device)
        M, N = workload.M, workload.N
        along = lambda bm, bn, d: -(-M // bm) if d == "m" else -(-N // bn)  # noqa: E731
        # both tiles of at least one pair exist: a grid of 2 or more
        rule = Constraint("at least 2 tiles along the cluster dim (one whole pair)", ("bm", "bn", "cluster_dim"),
                          lambda bm, bn, d: along(bm, bn, d) >= 2)
        knob = Knob("cluster_dim", CLUSTER_DIMS, "the pair's tiles lie along M (sharing B) or N (sharing A)")
        return Space([*base.knobs, knob], [*base.constraints, rule])

    def default_config(self, workload, device) -> dict:
        """hgemm_wgmma's default, paired along M (the shape's nearest config where that is refused)."""
        return self.space(workload, device).nearest({**super().default_config(workload, device), "cluster_dim": "m"})

    def a_box_rows(self, M: int, cfg: dict) -> int:
        """Whole BM-row boxes: the pair kernel loads its A slots itself (hgemm_wgmma_cluster.cuh) and
        expects every slot's whole bytes."""
        return cfg["bm"]

    def shared_operand(self, cfg: dict) -> str:
        return SHARED[cfg["cluster_dim"]]

    def _kernel(self, workload, cfg: dict, device) -> tuple:
        dim = cfg["cluster_dim"]
        targs = template_args(self.kernel_values(workload, cfg))
        units, _ = cluster_pairs(workload.M, workload.N, cfg["bm"], cfg["bn"], dim)
        # persistent: a cluster per 2 SMs at most
        return (self.header, f"hgemm_wgmma_cluster<{targs}, {CLUSTER}, {CLUSTER_DIMS.index(dim)}>",
                CLUSTER * min(units, device.sm_count // CLUSTER), (CLUSTER, 1, 1), ())

    def derived_features(self, config: dict, params: dict, device) -> dict[str, float]:
        """hgemm_wgmma's, the waves counted in pairs, the pair's direction and the L2 traffic it saves."""
        c, M, N = config, params["M"], params["N"]
        out = super().derived_features(config, params, device)
        units, _ = cluster_pairs(M, N, c["bm"], c["bn"], c["cluster_dim"])
        out["waves"] = CLUSTER * units / (device.sm_count - device.sm_count % CLUSTER)
        out["cluster_n"] = int(c["cluster_dim"] == "n")
        out["l2_bytes_saved"] = cluster_l2_bytes_saved(M, N, params["K"], c["bm"], c["bn"], c["swizzle"],
                                                       c["cluster_dim"])
        return out
