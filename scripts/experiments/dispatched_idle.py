"""Why the DietCode bench's dispatched kernel measures 0.5-0.7 us slower than the same kernel in the
dynamic run's verification (H100, 2026-11-26: 4096 x 4096 64x64 s12 at M = 32..65, 22.0-22.2 us in
verification, 22.6 at M = 29 and 33 as dispatched; 768 x 768 64x64 s5, 8.1-8.2 against 8.8).

The bench times the dispatched kernel right after compiling it, a GPU idle for about a second; the
verification measures back to back.  Here the same kernels are timed through the GpuRunner the bench
uses, in each way: after an idle pause (as the bench), back to back in one stream, and alternating
with cuBLAS (torch, this process) round by round.  Rows to $OUT/dispatched-idle.json."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

CASES = [
    ("Mx4096x4096_bt", 33, "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 12, "group": 8}),
    ("Mx4096x4096_bt", 10, "hgemm_stream", {"rw": 1, "wn": 2, "wk": 4, "mt": 16, "kw": 64, "stages": 6, "split_k": 1}),
    ("Mx768x768_bt", 160, "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 5, "group": 1}),
    ("Mx768x768_bt", 160, "hgemm_wgmma", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 8, "group": 4}),
    ("Mx768x3072_bt", 192, "hgemm_wgmma_splitk",
     {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 12, "group": 1, "split_k": 4}),
]


def main():
    import numpy as np

    from autosched.benchmarks.dynamic import micro_kernel_templates
    from autosched.benchmarks.gemv_q4f16 import _floor
    from autosched.dynamic.workload import DynamicWorkload
    from gemm_bench_kit import RunnerKit

    class _Bytes:
        def __init__(self, n):
            self.n = n

        def bytes_moved(self):
            return self.n
    rows = []
    with RunnerKit() as kit:
        runner = kit.runner
        temps = {t.family: t for t in micro_kernel_templates(kit.info)}
        for shape, M, fam, cfg in CASES:
            w = DynamicWorkload.parse("hgemm", shape, (1, 4096)).at(M)
            spec = temps[fam].render(w, cfg, kit.info)
            binary = kit.builder.build(spec)
            ops = kit.operands(w.M, w.N, w.K)
            row = {"shape": shape, "M": M, "family": fam, "config": cfg}
            kit.measure_us(spec, binary)                 # inputs prepared, off the record
            time.sleep(2.0)
            row["after_idle"] = [kit.measure_us(spec, binary) for _ in range(2)]
            row["stream_back_to_back"] = [m.median_us for _, m in runner.measure_stream((i, spec, binary) for i in range(4))]
            time.sleep(2.0)
            row["cublas_after_idle"] = [kit.cublas_us(*ops) for _ in range(2)]
            alt, cb = [], []
            for _ in range(4):
                alt.append(kit.measure_us(spec, binary))
                cb.append(kit.cublas_us(*ops))
            row["alternating"], row["cublas_alternating"] = alt, cb
            row["summary"] = {k: float(np.min(row[k])) for k in
                              ("after_idle", "stream_back_to_back", "cublas_after_idle", "alternating", "cublas_alternating")}
            print(json.dumps(row), flush=True)
            rows.append(row)
        # the same-bytes floor of each Llama / BERT weight (what one pass over W costs in this protocol)
        floors = {}
        for nk in ("4096x4096", "12288x4096", "22016x4096", "4096x11008", "768x768", "3072x768", "768x3072"):
            n, k = map(int, nk.split("x"))
            floors[nk] = _floor(_Bytes(2 * n * k), kit.timer, kit.timer.stream, kit.builder, kit.info.arch)
            print(nk, json.dumps(floors[nk]), flush=True)
        kit.write("dispatched-idle.json", {"rows": rows, "w_floors": floors})


if __name__ == "__main__":
    main()
