"""On a GPU: the DietCode bench's comparison with cuBLAS (gpu_harness's cublas_pair), the dispatched
micro-kernel and cuBLAS checked against float64 and timed in alternation on the same buffers, after a
short dynamic run of BERT's 768 x 768; its time of ours agrees with the runner's time of the same
kernel, as both time it under the same protocol."""

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


def test_cublas_pair_times_the_dispatched_kernel_beside_cublas(tmp_path, wgmma_gpu):
    from autosched.benchmarks import dynamic as bench
    from autosched.dynamic.workload import DynamicWorkload
    h, closers = bench.gpu_harness(db_path=tmp_path / "dynamic.db", rounds=1, per_round=4)
    try:
        dw = DynamicWorkload.parse("hgemm", "Mx768x768_bt", (16, 256), step=16)
        res = h.tune_dynamic(dw)
        for M in (48, 112, 240):
            p = h.cublas_pair(dw, res, M)
            assert set(p) == {"vs_cublas", "vs_cublas_range", "cublas_us", "ours_us", "rounds", "series",
                              "host_late", "late_rounds_redone", "cublas_kernels"}
            assert p["host_late"] and all(n >= 0 for r in p["host_late"] for n in r)
            # a round the host fell behind in is timed again (paired_ratio), three times at most
            assert len(p["late_rounds_redone"]) <= 3 and all(max(r) > 5 for r in p["late_rounds_redone"])
            assert set(p["series"]) == {"ours_us", "cublas_us"} and min(p["series"].values()) > 0
            assert p["cublas_kernels"] and all(isinstance(k, str) for k in p["cublas_kernels"])
            lo, hi = p["vs_cublas_range"]
            assert 0 < lo <= p["vs_cublas"] <= hi and p["rounds"] == 3
            assert 2.0 < p["cublas_us"] < 100.0
            disp = h.time_dispatched(dw, res, M)
            assert 0.7 < p["ours_us"] / disp < 1.4, (M, p, disp)
    finally:
        for c in reversed(closers):
            c.close()
