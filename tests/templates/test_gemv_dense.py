"""The dense fp16 GEMV as a tunable family (templates/gemv_dense.py): its space and rules, the
default that is the engine's fixed choice of before, NVRTC builds for sm_90a, the engine's selection
and tune-model's plan over it."""

import math

import pytest

from autosched.build import BuildCache, Builder
from autosched.engine.matmul import Matmul, blocks_pair_rows
from autosched.engine.plan import step_kernels, step_plan
from autosched.models.llama2c import SEED_CONFIGS
from autosched.registry import family, templates_for
from autosched.selection import rank
from autosched.templates import decode as dk
from autosched.templates.gemv_dense import DEFAULT, GemvDenseTemplate, engine_spec
from autosched.workloads import GemvDense, workload_from_key
from autosched.workloads.base import WorkloadError

T = GemvDenseTemplate()


def test_the_family_is_registered_and_its_key_round_trips():
    w = family("gemv-dense").parse("2048x8192")
    assert w == GemvDense(2048, 8192) and workload_from_key(w.key) == w
    assert [t.family for t in templates_for(w)] == ["gemv_dense"]
    with pytest.raises(WorkloadError, match="multiple of 8"):
        GemvDense(16, 12)


def test_the_space_and_its_rules(h100):
    w = GemvDense(2048, 8192)
    cfgs = T.space(w, h100).enumerate()
    assert {c["warps"] for c in cfgs} == {1, 2, 4, 8, 16} and {c["unroll"] for c in cfgs} == {1, 2, 4, 8}
    assert len(cfgs) == 20
    small = type(h100)(**{**h100.__dict__, "max_threads_per_block": 256})
    assert max(c["warps"] for c in T.space(w, small).enumerate()) == 8
    assert not T.space(w, h100).contains({"warps": 3, "unroll": 4})
    # the row-pairing epilogue's rule: even warps (and N)
    assert not blocks_pair_rows(w, {"warps": 1, "unroll": 4}) and blocks_pair_rows(w, {"warps": 2, "unroll": 4})
    assert not blocks_pair_rows(GemvDense(7, 64), {"warps": 2, "unroll": 4})


def test_the_default_is_the_engines_choice_of_before(h100):
    for n, k in ((3072, 2048), (2048, 8192), (32, 64), (128256, 2048)):
        w = GemvDense(n, k)
        assert T.default_config(w, h100) == DEFAULT == {"warps": 4, "unroll": 4}
        before = dk.gemv_dense_spec(n, k, "fp16", "half", "half", h100.arch)
        spec = T.render(w, DEFAULT, h100)
        assert (spec.name_expression, spec.grid, spec.block) == (before.name_expression, before.grid, before.block)
        for epi in ("norm", "residual", "norm_swiglu"):
            old = dk.gemv_dense_spec(n, k, "fp16", "half", "half", h100.arch, epilogue=epi)
            new = engine_spec(n, k, DEFAULT, h100.arch, epilogue=epi)
            assert (new.name_expression, new.grid, new.block) == (old.name_expression, old.grid, old.block)
    spec = T.render(GemvDense(2048, 8192), {"warps": 16, "unroll": 2}, h100)
    assert spec.name_expression == "gemv_dense<__half, __half, __half, 16, 2, 0>"
    assert spec.grid == (128, 1, 1) and spec.block == (512, 1, 1)
    assert [a.name for a in spec.args] == ["C", "W", "scale", "V", "N", "K", "res", "ss_in", "ss_out", "dim", "eps"]


def test_sample_configs_compile_without_spills_and_odd_warps_cannot_pair_rows(tmp_path, h100):
    w = GemvDense(2048, 8192)
    cfgs = [{"warps": 1, "unroll": 8}, {"warps": 16, "unroll": 8}, {"warps": 2, "unroll": 1}, DEFAULT]
    specs = [T.render(w, c, h100) for c in cfgs]
    specs += [engine_spec(2048, 8192, c, h100.arch, epilogue="norm_swiglu") for c in cfgs[1:]]
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        for spec, binary in zip(specs, b.build_many(specs)):
            assert binary.ok, (spec.name_expression, binary.error)
            assert binary.resources.spills == 0
        # the Python rule refuses warps=1 for norm_swiglu; the kernel's static_assert agrees
        with pytest.raises(ValueError, match="pairs rows"):
            engine_spec(2048, 8192, {"warps": 1, "unroll": 4}, h100.arch, epilogue="norm_swiglu")
        bad = dk._spec("x", "gemv_dense<__half, __half, __half, 1, 4, 3>", h100.arch, (2048, 1, 1), (32, 1, 1))
        [binary] = list(b.build_many([bad]))
        assert not binary.ok and "gate/up row pairs" in binary.error


def test_the_engine_with_an_empty_database_serves_todays_kernel(tmp_path, h100):
    from autosched.database import Database
    with Database(tmp_path / "db") as db:
        for name, epi in (("qkv", "norm"), ("gate_up", "norm_swiglu"), ("o", "residual"), ("x", "store")):
            m = Matmul(name, "fp16", 3072, 2048, "half", "half", h100, db, epilogue=epi)
            before = dk.gemv_dense_spec(3072, 2048, "fp16", "half", "half", h100.arch, epilogue=epi)
            assert (m.spec.name_expression, m.spec.grid, m.spec.block) == (
                before.name_expression, before.grid, before.block)
            assert m.choice.config == DEFAULT and m.choice.source.startswith(("default", "predicted"))
            assert "fp16 GEMV (warps 4, unroll 4)" in m.describe() and "config from" in m.describe()
    # fp32 and int8 keep the fixed kernel, with no selection
    assert Matmul("o", "int8", 64, 64, "half", "half", h100).choice is None


def test_a_stored_config_serves_the_engine(tmp_path, h100):
    from autosched.selection import Candidate
    m = Matmul("gate_up", "fp16", 4096, 2048, "half", "half", h100,
               choice=Candidate("gemv_dense", {"warps": 8, "unroll": 2}, "database"), epilogue="norm_swiglu")
    assert m.spec.name_expression == "gemv_dense<__half, __half, __half, 8, 2, 3>" and m.spec.block == (256, 1, 1)
    assert "config from database" in m.describe()


def test_rank_falls_back_to_the_default_with_nothing_known(h100):
    [c] = rank(GemvDense(3072, 2048), h100, None, recordings=[])
    assert c.config == DEFAULT and c.source == "default"


def test_the_plan_tunes_fp16_matmuls_with_budgets():
    cfg = SEED_CONFIGS["llama3.2-1b"]
    ks = step_kernels(cfg, "fp16")
    assert all(k.tunable for k in ks if k.shape) and all(k.workload.name == "gemv_dense" for k in ks if k.shape)
    plan = step_plan(cfg, ["fp16"], 300)
    assert {s.workload.key for s in plan.shapes} == {
        "gemv_dense:N=3072,K=2048", "gemv_dense:N=2048,K=2048", "gemv_dense:N=16384,K=2048",
        "gemv_dense:N=2048,K=8192", "gemv_dense:N=128256,K=2048"}
    assert math.isclose(sum(s.budget_s for s in plan.shapes), 300) and all(s.budget_s > 0 for s in plan.shapes)
    assert not any(k.tunable for k in step_kernels(cfg, "int8"))


def test_tune_model_covers_fp16_in_replay(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOSCHED_CACHE", str(tmp_path / "cache"))
    from autosched import model_tuning
    run = model_tuning.tune_model("random:stories15M", formats=["fp16"], budget_min=0.02, db=tmp_path / "db",
                         runner="replay")
    assert len(run.rows) == len(run.plan.shapes) >= 4
    assert all(r.shape.workload.name == "gemv_dense" for r in run.rows)
    # no recording of the dense GEMV ships: each shape says so and what serves it meanwhile
    assert all(r.status == "not recorded" and r.source.startswith("served") for r in run.rows)
