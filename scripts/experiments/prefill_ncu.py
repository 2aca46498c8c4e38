"""The 128-row prefill GEMM (128x4096x4096, B stored (N, K)) under Nsight Compute: cuBLAS's kernel
beside hgemm_wgmma_cluster and hgemm_wgmma on 64 x 64 tiles with a 12-slot ring, and split-K's
served config, each launched twice after a float64 check, so that

    ncu --kernel-name regex:'nvjet|hgemm' --section SpeedOfLight --section MemoryWorkloadAnalysis \\
        --section WarpStateStats --csv python3 scripts/experiments/prefill_ncu.py

compares where their time goes.  Prints nothing but its checks."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

CASES = [
    ("hgemm_wgmma_cluster", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 12, "group": 1,
                             "cluster_dim": "m"}),
    ("hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 12, "group": 1}),
    ("hgemm_wgmma_splitk", {"bm": 128, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 8, "group": 1, "split_k": 2}),
]


def main() -> int:
    import torch

    from autosched.registry import template_named
    from gemm_bench_kit import Session
    with Session() as ses:
        ops = ses.operands("128x4096x4096_bt")
        for _ in range(2):
            torch.matmul(ops.a, ops.bt)
        torch.cuda.synchronize()
        for family, cfg in CASES:
            spec = template_named(family).render(ops.w, cfg, ses.info)
            k = ses.launchable(spec, ops, spec.name_expression)
            if isinstance(k, str):
                raise SystemExit(f"{spec.name_expression} did not build: {k}")
            k.launch(ses.stream)
            ses.stream.sync()
    return 0


if __name__ == "__main__":
    sys.exit(main())
