"""Split-K across the CTAs of a thread-block cluster (kernels/hgemm_wgmma_splitk_cluster.cuh): the
split-K kernel's work units, but the K slices of a tile are the 2 to 4 CTAs of one cluster and the
partial sums cross distributed shared memory into rank 0, which adds them and stores C.  No
workspace, no counters, no round trips to L2 between the last k-block and the store: what the
global reduction costs a short GEMM with few output tiles (prefill rows, BERT's narrow layers).

A template of its own beside hgemm_wgmma_splitk (a knob there would change its build id and config
keys).  Knobs: hgemm_wgmma's and split_k, the cluster's size (2, 3 or 4; the .cuh's static_assert).
Its rules: split-K's (fewer tiles than two waves, no empty K slice) and the shared memory the peers'
partials take beside the ring (split_k - 1 FP32 tiles in rank 0).

Gated by SPLIT_K_CLUSTER_VERIFIED (`bash scripts/gpu_check.sh splitk-cluster`: GPU tests vs float64
in every layout, memcheck, racecheck).
"""

from __future__ import annotations

from autosched.space import Constraint, Knob, Space
from autosched.switches import env_switch
from autosched.templates.hgemm_wgmma import HgemmWgmmaTemplate, SMEM_CAP_SM90, bk_of, smem_bytes, template_args
from autosched.templates.hgemm_wgmma_splitk import HgemmWgmmaSplitKTemplate, k_slices_rule

# THE switch: off until `bash scripts/gpu_check.sh splitk-cluster` passes on an H100.
# AUTOSCHED_WGMMA_SPLIT_K_CLUSTER=1 (or 0) in the environment overrides it for one process.
SPLIT_K_CLUSTER_VERIFIED = False
CLUSTER_SPLITS = (2, 3, 4)                  # CTAs of a cluster, one K slice each: the .cuh's static_assert


def split_k_cluster_enabled() -> bool:
    return env_switch("AUTOSCHED_WGMMA_SPLIT_K_CLUSTER", SPLIT_K_CLUSTER_VERIFIED)


def cluster_smem_bytes(bm: int, bn: int, swizzle: int, stages: int, split_k: int) -> int:
    """HgemmWgmmaSplitKCluster::SMEM_BYTES: hgemm_wgmma's ring, staging and barriers, two more
    barriers (received, taken), aligned to 128 bytes, then split_k - 1 FP32 tiles of the peers'
    partials (every rank allocates them: one kernel, one layout)."""
    barriers_end = smem_bytes(bm, bn, swizzle, stages) - 1024 + 16
    return -(-barriers_end // 128) * 128 + (split_k - 1) * bm * bn * 4 + 1024


class HgemmWgmmaSplitKClusterTemplate(HgemmWgmmaSplitKTemplate):
    family = "hgemm_wgmma_splitk_cluster"
    header = "hgemm_wgmma_splitk_cluster.cuh"   # inlines the split-K, cluster and hgemm_wgmma headers

    def _space(self, workload, device) -> Space:
        base = HgemmWgmmaTemplate._space(self, workload, device)
        M, N, K, sms = workload.M, workload.N, workload.K, device.sm_count
        tiles = lambda bm, bn: -(-M // bm) * -(-N // bn)  # noqa: E731
        cap = min(device.smem_per_block_optin, SMEM_CAP_SM90)
        C = Constraint
        rules = [
            # as split-K's: two waves of tiles fill the persistent grid without slices
            C(f"fewer output tiles than 2 x {sms} SMs", ("bm", "bn"), lambda bm, bn: tiles(bm, bn) < 2 * sms),
            k_slices_rule(K),
            C(f"shared memory <= {cap} B a block with the peers' FP32 partials (split_k - 1 tiles)",
              ("bm", "bn", "swizzle", "stages", "split_k"),
              lambda bm, bn, sw, st, sk: cluster_smem_bytes(bm, bn, sw, st, sk) <= cap),
        ]
        knob = Knob("split_k", CLUSTER_SPLITS, "K slices of a tile: the CTAs of one cluster, summed in rank 0's "
                                               "shared memory")
        return Space([*base.knobs, knob], [*base.constraints, *rules])

    def smem(self, cfg: dict) -> int:
        return cluster_smem_bytes(cfg["bm"], cfg["bn"], cfg["swizzle"], cfg["stages"], cfg["split_k"])

    def derived_features(self, config: dict, params: dict, device) -> dict[str, float]:
        """hgemm_wgmma's, the waves counted in clusters, and the split's: no workspace here."""
        c = config
        out = HgemmWgmmaTemplate.derived_features(self, c, params, device)
        sk = c["split_k"]
        k_blocks = -(-params["K"] // bk_of(c["swizzle"]))
        out.update({"split_k": sk, "work_units": out["tiles"] * sk,
                    "waves": out["tiles"] * sk / (device.sm_count - device.sm_count % sk),
                    "k_blocks_per_unit": k_blocks / sk})
        return out

    def _kernel(self, workload, cfg: dict, device) -> tuple:
        split = cfg["split_k"]
        tiles = -(-workload.M // cfg["bm"]) * -(-workload.N // cfg["bn"])
        expr = f"hgemm_wgmma_splitk_cluster<{template_args(self.kernel_values(workload, cfg))}, {split}>"
        # persistent: a cluster per split_k SMs at most
        return self.header, expr, split * min(tiles, device.sm_count // split), (split, 1, 1), ()
