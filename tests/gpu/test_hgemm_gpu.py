"""On a GPU: mma.sync tensor-core GEMM configs at the corners of the space are correct on shapes that
fit no tile, in the four row layouts (A and B each row-major or stored transposed), FP16 and BF16."""

import random

import pytest

from autosched.build import BuildCache, Builder
from autosched.measure.gpu import GpuRunner
from autosched.measure.protocol import Protocol
from autosched.templates import HgemmMmaTemplate
from autosched.workloads import Hgemm

pytestmark = pytest.mark.gpu


def corners(configs):
    keys = [lambda c: c["bm"] * c["bn"], lambda c: -c["bm"] * c["bn"], lambda c: c["wm"] * c["wn"],
            lambda c: -c["wm"] * c["wn"], lambda c: (c["bk"], c["stages"]), lambda c: (-c["bk"], -c["stages"]),
            lambda c: (c["pad"], c["bn"] // c["wn"])]
    out = []
    for k in keys:
        c = max(configs, key=k)
        if c not in out:
            out.append(c)
    return out + random.Random(0).sample(configs, 6)


@pytest.mark.parametrize("shape", ["100x72x40", "100x70x40_bt", "257x136x1000", "1x4096x512_bt", "3x9x24_bt",
                                   # A stored (K, M) (M a multiple of 8, K free in tn), and BF16
                                   "296x264x203_tn", "296x262x200_tt", "8x5x16_tt", "1000x1032x500_tn",
                                   "300x264x200_bf16", "300x262x200_bt_bf16", "296x264x203_tn_bf16",
                                   "1000x1030x504_tt_bf16"])
def test_corner_configs_are_correct_on_ragged_shapes(tmp_path, shape):
    t = HgemmMmaTemplate()
    w = Hgemm.from_shape(shape)
    with GpuRunner(protocol=Protocol(flush_bytes=1 << 24, warmup=1, repeat=3), timeout_s=30) as runner, \
            Builder(cache=BuildCache(tmp_path)) as builder:
        cfgs = corners(t.space(w, runner.device_info).enumerate()) + [t.default_config(w, runner.device_info)]
        specs = [t.render(w, c, runner.device_info) for c in cfgs]
        results = dict(runner.measure_stream((i, s, builder.submit(s)) for i, s in enumerate(specs)))
    bad = [(cfgs[i], m.status.value, m.error[:200]) for i, m in results.items() if not m.ok]
    assert len(results) == len(cfgs) and not bad, bad[:3]


def test_bench_hgemm_times_ours_and_cublas_on_the_same_buffers(tmp_path):
    """`autosched bench hgemm` end to end on a ragged shape in each B layout: the tuned kernel and
    cuBLAS pass their checks in the pool's memory and in torch's."""
    import json

    pytest.importorskip("torch")
    from autosched.benchmarks.gemm import run_benchmark
    path = run_benchmark(["100x72x40", "96x70x64_bt"], trials=6, strategy="random", out_dir=tmp_path,
                         db_path=tmp_path / "db", rerank=3, op="hgemm")
    assert path.name.startswith("hgemm-")
    doc = json.loads(path.read_text())
    assert [r["shape"] for r in doc["rows"]] == ["100x72x40", "96x70x64_bt"]
    for r in doc["rows"]:
        assert r["errors"] == {}, r["errors"]
        assert r["cublas_check"] and r["torch_memory"]["cublas_check"]
        assert r["tuned_us"] > 0 and r["cublas_us"] > 0
