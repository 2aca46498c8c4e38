"""On a GPU: SGEMM configs at the corners of the space are correct on shapes that fit no tile
(predicated edges), with A plain and transposed, with one and two stages and with split-K."""

import random

import pytest

from autosched.build import BuildCache, Builder
from autosched.measure.gpu import GpuRunner
from autosched.measure.protocol import Protocol
from autosched.templates import SgemmTemplate
from autosched.workloads import Sgemm

pytestmark = pytest.mark.gpu


def corners(configs):
    keys = [lambda c: c["bm"] * c["bn"], lambda c: -c["bm"] * c["bn"], lambda c: c["wm"] * c["wn"],
            lambda c: (c["bk"], c["stages"]), lambda c: (c["splitk"], c["pad"]), lambda c: c["tm"] * c["tn"],
            lambda c: (-c["stages"], c["wniter"])]
    out = []
    for k in keys:
        c = max(configs, key=k)
        if c not in out:
            out.append(c)
    return out + random.Random(0).sample(configs, 6)


@pytest.mark.parametrize("shape, trans_a", [("100x70x33", 0), ("257x130x1000", 1), ("1x4096x512", 0)])
def test_corner_configs_are_correct_on_ragged_shapes(tmp_path, shape, trans_a):
    t = SgemmTemplate()
    w = Sgemm.from_shape(shape, trans_a=trans_a)
    with GpuRunner(protocol=Protocol(flush_bytes=1 << 24, warmup=1, repeat=3), timeout_s=30) as runner, \
            Builder(cache=BuildCache(tmp_path)) as builder:
        cfgs = corners(t.space(w, runner.device_info).enumerate()) + [t.default_config(w, runner.device_info)]
        specs = [t.render(w, c, runner.device_info) for c in cfgs]
        results = dict(runner.measure_stream((i, s, builder.submit(s)) for i, s in enumerate(specs)))
    bad = [(cfgs[i], m.status.value, m.error[:200]) for i, m in results.items() if not m.ok]
    assert len(results) == len(cfgs) and not bad, bad[:3]


def test_screening_times_a_slow_config_from_a_few_runs(tmp_path):
    """With a best already far below it, a config is checked, timed for SCREEN_RUNS runs and
    recorded from those; without screening it gets the protocol's repeat."""
    from autosched.measure.result import Measurement, Status
    from autosched.measure.worker import SCREEN_RUNS
    t = SgemmTemplate()
    w = Sgemm.from_shape("512x512x512")
    proto = Protocol(flush_bytes=1 << 24, warmup=2, repeat=20)
    with Builder(cache=BuildCache(tmp_path)) as builder:
        with GpuRunner(protocol=proto, screen=2.0) as runner:
            spec = t.render(w, t.default_config(w, runner.device_info), runner.device_info)
            binary = builder.build(spec)
            runner.observe(w.key, Measurement(Status.OK, 0.01, 0.01, 0.0, 0.0, runs=20))
            screened = runner.measure(spec, binary)
        with GpuRunner(protocol=proto) as runner:
            full = runner.measure(spec, binary)
    assert screened.ok and screened.runs == SCREEN_RUNS and screened.median_us > 0.02
    assert full.ok and full.runs == 20
    # the screened figures are the same kernel's time: same order as the full protocol's
    assert 0.5 < screened.median_us / full.median_us < 2.0


@pytest.mark.parametrize("shape", ["300x260x200", "1024x1024x1024"])
def test_configs_over_48kb_of_shared_memory_run_and_are_correct(tmp_path, shape):
    """The dynamic shared-memory path (over the 48 KB a launch gets without opting in): the worker
    opts the kernel in, and the result passes the float64 check."""
    t = SgemmTemplate()
    w = Sgemm.from_shape(shape)
    with GpuRunner(protocol=Protocol(flush_bytes=1 << 24, warmup=1, repeat=3), timeout_s=30) as runner, \
            Builder(cache=BuildCache(tmp_path)) as builder:
        info = runner.device_info
        big = [c for c in t.space(w, info).enumerate()
               if t.render(w, c, info).smem_bytes > info.smem_per_block]
        assert big
        cfgs = sorted(big, key=lambda c: -t.render(w, c, info).smem_bytes)[:3] + random.Random(1).sample(big, 5)
        specs = [t.render(w, c, info) for c in cfgs]
        results = dict(runner.measure_stream((i, s, builder.submit(s)) for i, s in enumerate(specs)))
    bad = [(cfgs[i], m.status.value, m.error[:200]) for i, m in results.items() if not m.ok]
    assert len(results) == len(cfgs) and not bad, bad[:3]


def test_bench_sgemm_times_ours_and_cublas_on_the_same_pool_buffers_and_on_torch_memory(tmp_path):
    """`autosched bench sgemm` end to end on two small shapes: every row's tuned kernel and cuBLAS
    pass their checks, in the pool's memory and in torch's, and the re-rank timed its candidates."""
    import json

    pytest.importorskip("torch")
    from autosched.benchmarks.gemm import run_benchmark
    path = run_benchmark(["100x70x33", "96x128x64"], trials=6, strategy="random", out_dir=tmp_path,
                         db_path=tmp_path / "db", rerank=3)
    doc = json.loads(path.read_text())
    assert [(r["M"], r["N"], r["K"]) for r in doc["rows"]] == [(100, 70, 33), (96, 128, 64)]
    for r in doc["rows"]:
        assert r["errors"] == {}, r["errors"]
        assert r["cublas_check"] and r["torch_memory"]["cublas_check"]
        assert r["tuned_us"] > 0 and r["cublas_us"] > 0 and r["torch_memory"]["tuned_us"] > 0
        assert r["pct_of_cublas"] == pytest.approx(100 * r["cublas_us"] / r["tuned_us"])
        assert 1 <= len(r["rerank"]) <= 3 and all("bench_us" in e for e in r["rerank"])
        assert r["tuned_config"] in [e["config"] for e in r["rerank"]]
