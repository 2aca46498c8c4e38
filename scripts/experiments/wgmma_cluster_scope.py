"""Why the cluster kernel ran 1.5-3x slower than the lone-CTA kernel (timing-cluster-2026-11-23.log:
4096^3 at 62% of cuBLAS against 96%): each consumer warp released a slot to the peer CTA with
mbarrier.arrive.release.cluster once per k-block, and the producer waited with
try_wait.parity.acquire.cluster.  The consumers only read the slot through wgmma, whose reads
wait_group has already retired, so CTA-scope semantics order what needs ordering; the kernel has
released at CTA scope since 2026-11-26.  This times the shipped kernel ("cta") beside the same source
with the cluster-scope release and acquire put back ("cluster", patched in the rendered source only),
the lone kernel and cuBLAS, under the seed protocol, each checked against float64 first.  (The run of
2026-11-26, wgmma-cluster-scope-*.json, was of the kernel before the change: its "shipped" is this
script's "cluster".)  Writes $OUT/wgmma-cluster-scope.json.

    python3 scripts/experiments/wgmma_cluster_scope.py
    CLUSTER_SCOPE_SWEEP=stages python3 scripts/experiments/wgmma_cluster_scope.py
"""
import dataclasses
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from wgmma_stages import deepened  # noqa: E402

# the shipped text -> the cluster-scope text it replaced: the remote release, and the producer's wait
# on its empty barrier (through a helper defined in front of the kernel's struct)
CLUSTER_SCOPE = {
    "mbarrier.arrive.shared::cluster.b64": "mbarrier.arrive.release.cluster.shared::cluster.b64",
    "mbar_wait(empty, phase ^ 1);               // both CTAs'": "mbar_wait_acquire_cluster(empty, phase ^ 1); //",
    "__device__ __forceinline__ unsigned cluster_reg_ctarank() {":
        """__device__ __forceinline__ void mbar_wait_acquire_cluster(unsigned bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile("{\\n.reg .pred p;\\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\\n"
                 "selp.u32 %0, 1, 0, p;\\n}\\n" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (!done);
}
__device__ __forceinline__ unsigned cluster_reg_ctarank() {"""}
CASES = [  # shape, config (cluster 1 is hgemm_wgmma, the lone kernel)
    ("128x4096x4096_bt", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 12, "group": 1}),
    ("128x4096x4096_bt", {"bm": 128, "bn": 64, "consumers": 2, "swizzle": 128, "stages": 8, "group": 1}),
    ("64x4096x4096_bt", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 12, "group": 1}),
    ("4096x4096x4096_bt", {"bm": 128, "bn": 256, "consumers": 2, "swizzle": 128, "stages": 3, "group": 8}),
]
PAIRS = ((1, None), (2, "m"), (2, "n"))
# CLUSTER_SCOPE_SWEEP=stages: the CTA-scope kernel's ring depth on the short GEMMs instead
SWEEP = [(shape, {**cfg, "stages": st})
         for shape, cfg, depths in [
             ("128x4096x4096_bt", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "group": 1}, (6, 8, 10, 13)),
             ("64x4096x4096_bt", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "group": 1}, (8, 13)),
             ("256x4096x4096_bt", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "group": 1}, (8, 13)),
             ("256x4096x4096_bt", {"bm": 128, "bn": 64, "consumers": 2, "swizzle": 128, "group": 1}, (8,)),
             ("128x11008x4096_bt", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "group": 1}, (8, 13)),
             ("128x4096x11008_bt", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "group": 1}, (8, 13))]
         for st in depths]
if os.environ.get("CLUSTER_SCOPE_SWEEP") == "stages":
    CASES = SWEEP


def main() -> int:
    from autosched.templates import HgemmWgmmaTemplate
    from autosched.templates.hgemm_wgmma_cluster import HgemmWgmmaClusterTemplate
    from gemm_bench_kit import Session
    lone, pair = HgemmWgmmaTemplate(), HgemmWgmmaClusterTemplate()
    with Session() as ses:
        for shape, cfg in CASES:
            ops = ses.operands(shape)
            row = {"shape": shape, "config": cfg, "cublas_us": ses.cublas_us(ops)}
            for cluster, dim in PAIRS:
                t = pair if cluster == 2 else lone
                c = {**cfg, "stages": min(cfg["stages"], 8), **({"cluster_dim": dim} if cluster == 2 else {})}
                why = t.space(ops.w, ses.info).violations(c)
                if why:                    # one tile along the pair's dim: no pair to make
                    row[f"cluster{cluster}{dim}"] = {"invalid": why}
                    continue
                spec = t.render(ops.w, c, ses.info)
                spec = deepened(spec, cfg["stages"]) if cfg["stages"] > 8 else spec
                variants = {"shipped" if cluster == 1 else "cta": spec}
                if cluster == 2:
                    variants["cluster"] = dataclasses.replace(spec, source=cluster_scoped(spec.source))
                for name, sp in variants.items():
                    key = f"cluster{cluster}{dim or ''}_{name}"
                    row[key] = ses.time(sp, ops, f"{shape} {key}")
            ses.keep(row)
    name = "wgmma-cluster-scope-stages.json" if CASES is SWEEP else "wgmma-cluster-scope.json"
    ses.write(name)
    return 0


def cluster_scoped(source: str) -> str:
    """The cluster kernel's source with its slot release and the producer's wait at cluster scope, as
    they were before 2026-11-26."""
    for old, new in CLUSTER_SCOPE.items():
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return source


if __name__ == "__main__":
    sys.exit(main())
