"""ops.HgemmDispatch on the CPU: which micro-kernel serves an M (the DietCode dispatcher where a
measured artifact covers M, else the rule-based ladder), finding the artifact beside the database,
describe's text, and every micro-kernel it may launch compiling for sm_90 without spills."""

import dataclasses
import json
import time

import pytest

from autosched.build import BuildCache, Builder
from autosched.dynamic.export import save_result
from autosched.dynamic.synthetic import SyntheticRunner
from autosched.dynamic.tune import tune_dynamic
from autosched.dynamic.workload import DynamicWorkload
from autosched.ops.hgemm import HgemmDispatch, find_dynamic_result
from autosched.templates.hgemm_ladder import DEFAULT_LADDER
from autosched.templates.hgemm_dyn import HgemmDynTemplate


def _tuned(h100, shape, m_range, step=1):
    dw = DynamicWorkload.parse("hgemm", shape, m_range, step=step)
    res = tune_dynamic(dw, HgemmDynTemplate(), SyntheticRunner(h100), None, rounds=1, per_round=6, seed=2)
    return dataclasses.replace(res, runner="gpu")      # served as if measured (the synthetic one never is)


@pytest.fixture(scope="module")
def full(h100):
    return _tuned(h100, "Mx4096x4096_bt", (1, 4096))


def test_the_ladder_serves_every_m_without_an_artifact(h100, monkeypatch):
    monkeypatch.setenv("AUTOSCHED_WGMMA_IN_AUTO", "0")      # the mma ladder (wgmma's: test_hgemm_wgmma_dispatch)
    g = HgemmDispatch(4096, 4096, h100)
    assert len(g.configs) == 3 and g.result is None
    for M, rung in ((1, 0), (64, 0), (65, 1), (256, 1), (257, 2), (4096, 2)):
        assert g.index(M) == rung and g.source(M) == "default"
        assert g.config(M) == {**DEFAULT_LADDER[rung][1]}
    assert g.grid(100) == (32, 2, 1) and g.grid(4096) == (32, 32, 1)
    assert len(HgemmDispatch(4096, 4096, h100, m_max=64).configs) == 1      # a short context: one rung
    text = g.describe()
    assert "default hgemm_dyn (mma) configs by M (M<=64 mma 64x64" in text, text
    assert "(no dynamic tuning artifact for 4096x4096" in text
    small = HgemmDispatch(96, 288, h100)                        # a narrow N: the nearest valid tiles
    assert all(c["bn"] <= 96 for c in small.configs)
    with pytest.raises(ValueError, match="multiple of 8"):
        HgemmDispatch(4096, 100, h100)


def test_a_result_covering_the_range_dispatches_every_m(h100, full):
    g = HgemmDispatch(4096, 4096, h100, result=full)
    assert len(g.configs) == len(full.kernels)                  # no ladder rung is needed
    for M in (1, 7, 100, 300, 2048, 4096):
        assert g.index(M) == full.dispatcher(M) and g.source(M) == "dispatched"
    assert g.describe().startswith(f"4096x4096 fp16 GEMM: DietCode dispatch over M in 1..4096, {len(full.kernels)} "
                                   "micro-kernels")
    with pytest.raises(ValueError, match="cannot serve"):
        HgemmDispatch(4096, 11008, h100, result=full)
    # the host cost of choosing: a bisect, well under the microseconds of a launch (the best of five
    # batches: a loaded CPU inflates a batch, not the bisect)
    def batch():
        t0 = time.perf_counter()
        for i in range(4000):
            g.index(1 + i % 4096)
        return (time.perf_counter() - t0) / 4000
    assert min(batch() for _ in range(5)) < 20e-6


def test_m_outside_the_artifacts_range_falls_back_to_the_ladder(h100, monkeypatch):
    monkeypatch.setenv("AUTOSCHED_WGMMA_IN_AUTO", "0")      # the mma ladder (wgmma's: test_hgemm_wgmma_dispatch)
    part = _tuned(h100, "Mx768x768_bt", (16, 2048), step=16)
    g = HgemmDispatch(768, 768, h100, result=part, m_max=4096)
    n = len(part.kernels)
    assert g.source(8) == "default" and g.index(8) == n                 # rung 0 (M <= 64)
    assert g.source(16) == g.source(2048) == g.source(100) == "dispatched"
    assert g.source(3000) == "default" and g.config(3000) == g.configs[-1]
    assert "; M outside it: default hgemm_dyn (mma) configs by M" in g.describe()


def test_the_artifact_beside_the_database_is_found(h100, full, tmp_path):
    db = tmp_path / "a.db"
    assert find_dynamic_result(db, 4096, 4096, h100.key) is None
    synthetic = dataclasses.replace(full, runner="synthetic")
    save_result(synthetic, db)
    assert find_dynamic_result(db, 4096, 4096, h100.key) is None        # modelled, never served
    p = save_result(full, db)
    (p.parent / "junk.json").write_text("{not json")
    (p.parent / "other.json").write_text(json.dumps({"workload": {"op": "sgemm"}}))
    found = find_dynamic_result(db, 4096, 4096, h100.key)
    assert found is not None and found.artifact == p and found.dispatcher.labels == full.dispatcher.labels
    assert find_dynamic_result(db, 4096, 11008, h100.key) is None
    assert find_dynamic_result(db, 4096, 4096, "another GPU") is None
    g = HgemmDispatch(4096, 4096, h100, db_path=db)
    assert g.source(100) == "dispatched" and p.name in g.describe()


def test_every_micro_kernel_compiles_without_spills(h100, full, tmp_path):
    specs = HgemmDispatch(4096, 4096, h100).specs() + HgemmDispatch(288, 768, h100).specs() \
        + HgemmDispatch(4096, 4096, h100, result=full).specs()
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        for spec, binary in zip(specs, b.build_many(specs)):
            assert binary.ok, (spec.name_expression, binary.error)
            assert binary.resources.spills == 0, (spec.name_expression, binary.resources)
