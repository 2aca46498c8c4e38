"""hgemm_stream as a dynamic-M micro-kernel (HgemmStreamDynTemplate), on the CPU: the space reads no M
and refuses none, sketches and mutations keep the warps and stay in the space, probes hold exactly
their grid of CTAs, the cost model counts its (tile, K slice) CTAs, the tuner (synthetic runner:
MODELLED times) seeds it and never picks it at large M, the dispatcher serves it (grid, workspace)
only with its switch on, and the .cu export launches it through the workspace.  Nothing here needs a GPU."""

import random

import pytest

from autosched.api import AutoschedError
from autosched.build import BuildCache, Builder
from autosched.dynamic import sketch
from autosched.dynamic.cost_model import features, work_units
from autosched.dynamic.export import export_cu
from autosched.dynamic.front import tune_dynamic as front_tune
from autosched.dynamic.measurer import compile_report, probe_workloads
from autosched.dynamic.synthetic import SyntheticRunner
from autosched.dynamic.tune import DynamicResult, tune_dynamic
from autosched.dynamic.workload import DynamicWorkload
from autosched.templates.micro_kernels import micro_kernel
from autosched.ops.hgemm import HgemmDispatch, WorkspaceCache
from autosched.templates.hgemm_stream import (MAX_M, STREAM_SEEDS, HgemmStreamDynTemplate, bn_of, dyn_stream_enabled,
                                              threads)
from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate
from autosched.templates.hgemm_wgmma_splitk import counter_bytes
from autosched.workloads import Hgemm
from autosched.templates import hgemm_stream as t_str
from autosched.templates import hgemm_wgmma as t_wg
from fake_dispatch import load_fakes
from source_literals import literal

STR = "hgemm_stream"


@pytest.fixture(scope="module")
def dw():
    return DynamicWorkload.parse("hgemm", "Mx4096x4096_bt", (1, 4096))


@pytest.fixture(scope="module")
def t():
    return HgemmStreamDynTemplate()


@pytest.fixture
def on(monkeypatch):
    monkeypatch.setenv("AUTOSCHED_DYN_STREAM", "1")


@pytest.fixture
def off(monkeypatch):
    monkeypatch.setenv("AUTOSCHED_DYN_STREAM", "0")


def test_switch_is_on_since_its_gpu_stage_passed_and_the_environment_overrides_it(monkeypatch):
    monkeypatch.delenv("AUTOSCHED_DYN_STREAM", raising=False)
    assert dyn_stream_enabled()
    monkeypatch.setenv("AUTOSCHED_DYN_STREAM", "0")
    assert not dyn_stream_enabled()


def test_the_space_reads_no_m_and_refuses_none_of_the_layout_it_serves(t, h100):
    few, many = Hgemm.from_shape("1x4096x4096_bt"), Hgemm.from_shape("4096x4096x4096_bt")
    assert t.refuses(many) is None and t.refuses(Hgemm.from_shape("4096x4096x4096")) is not None
    assert t.space(few, h100).enumerate() == t.space(many, h100).enumerate()
    # the static template prunes by M: tiles taller than M needs, splits past 8 waves
    from autosched.templates.hgemm_stream import HgemmStreamTemplate
    assert len(HgemmStreamTemplate().space(few, h100).enumerate()) < len(t.space(few, h100).enumerate())


def test_one_binary_serves_every_m(t, h100):
    cfg = dict(STREAM_SEEDS[0][1])
    a, b = (t.render(Hgemm.from_shape(s), cfg, h100) for s in ("7x4096x4096_bt", "3000x4096x4096_bt"))
    assert a.name_expression == b.name_expression and a.source == b.source
    assert a.grid == (4096 // 32, 1, 1) and b.grid == (4096 // 32, 1, -(-3000 // 16))


def test_sketches_and_mutations_keep_the_warps_in_the_space(t, h100, dw):
    space = t.space(dw.largest, h100)
    rng = random.Random(0)
    drawn = [t_str.sample_stream(space, (dw.hi, dw.N), rng) for _ in range(200)]
    assert all(space.contains(c) for c in drawn) and len({tuple(sorted(c.items())) for c in drawn}) > 100
    for c in drawn[:60]:
        m = t_str.mutate_stream(space, c, rng, (dw.hi, dw.N))
        if m is not None:
            assert space.contains(m) and m != c and (m["wn"], m["wk"]) == (c["wn"], c["wk"])
        assert sketch.unroll_of(STR, c) == c["rw"] * c["mt"] // 8 * c["kw"] // 16
        assert sketch.threads_of(STR, c) == threads(c["wn"], c["wk"])
        assert sketch.tile_of(STR, c) == (c["mt"], bn_of(c["rw"], c["wn"]))
        assert sketch.describe_any(STR, c).startswith("stream ")
    fam, cfg = sketch.sample_any({STR: space}, (dw.hi, dw.N), rng)
    assert fam == STR and space.contains(cfg)


def test_compile_reports_and_probes_hold_their_grid_of_ctas(t, h100, dw, tmp_path):
    rng = random.Random(1)
    space = t.space(dw.largest, h100)
    cfgs = [t_str.sample_stream(space, (dw.hi, dw.N), rng) for _ in range(3)] + [c for _, c in STREAM_SEEDS]
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        for c in cfgs:
            est = compile_report(t, c, dw.largest, h100)
            rep = compile_report(t, c, dw.largest, h100, b)
            assert est.source == "estimate" and rep.source == "ptxas" and rep.threads == threads(c["wn"], c["wk"])
            assert rep.blocks_per_sm >= 1
            for g, w in probe_workloads(c, rep, dw, h100, STR).items():
                spec = t.render(w, c, h100)
                sk = c["split_k"]
                assert spec.grid[0] * spec.grid[1] * spec.grid[2] == max(1, g // sk) * sk, (g, spec.grid)
                assert w.K == dw.K and w.N <= -(-dw.N // bn_of(c["rw"], c["wn"])) * bn_of(c["rw"], c["wn"])


def test_features_and_work_units_count_its_ctas(h100):
    from autosched.dynamic.measurer import CompileReport, MicroKernel
    c = {"rw": 1, "wn": 4, "wk": 2, "mt": 32, "kw": 64, "stages": 4, "split_k": 3}
    mk = MicroKernel(c, CompileReport(256, 96, 40000, 0, 2, "estimate"), {132: 10.0, 264: 18.0}, family=STR)
    assert work_units(c, 100, 4096, STR) == 4 * 64 * 3
    f = features(mk, 100, 4096, h100.sm_count)
    assert f[-1] == 2.0 and f[2] == pytest.approx(1 - 100 / 128) and len(f) == 13


def test_the_synthetic_model_streams_at_small_m_only(h100):
    s = dict(STREAM_SEEDS[0][1])
    wg = {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 6, "group": 8}
    assert t_str.modelled_stream_us(s, 8, 4096, 4096, h100) < 1.5 * t_wg.modelled_wgmma_us(wg, 8, 4096, 4096, h100)
    assert t_str.modelled_stream_us(s, 1024, 4096, 4096, h100) > 3 * t_wg.modelled_wgmma_us(wg, 1024, 4096, 4096, h100)


@pytest.fixture(scope="module")
def mixed(h100, dw):
    return tune_dynamic(dw, [HgemmWgmmaDynTemplate(), HgemmStreamDynTemplate()], SyntheticRunner(h100), None,
                        rounds=2, per_round=10, seed=3)


def test_the_tuner_seeds_the_stream_and_never_picks_it_at_large_m(mixed, dw):
    assert mixed.seeds >= len(STREAM_SEEDS)
    assert any(h["by_family"].get(STR, 0) >= len(STREAM_SEEDS) for h in mixed.history)
    assert all(mixed.dispatcher.family(M) != STR for M in (1024, 2048, 4096))
    assert all(v["status"] == "ok" for v in mixed.verification)


def _measured(res):
    """The synthetic run as if measured: HgemmDispatch serves no synthetic run."""
    return DynamicResult.from_json({**res.to_json(), "runner": "gpu"})


def _with_stream(h100, dw):
    from autosched.dynamic.handmade import handmade_result
    wg = {"bm": 128, "bn": 256, "consumers": 2, "swizzle": 128, "stages": 3, "group": 8}
    return handmade_result(dw, [(STR, dict(STREAM_SEEDS[0][1])), (STR, dict(STREAM_SEEDS[1][1])),
                                ("hgemm_wgmma", wg)], [32, 128], "H100|x", runner="gpu")


class _Stream:
    def __init__(self, handle):
        self.handle = handle


def test_the_dispatcher_serves_stream_kernels_their_grid_and_workspace(h100, dw, monkeypatch, on):
    res = _with_stream(h100, dw)
    g = HgemmDispatch(4096, 4096, h100, result=res, backend="wgmma")
    assert [g.family(M) for M in (1, 32, 33, 128, 129)] == [STR, STR, STR, STR, "hgemm_wgmma"]
    load_fakes(g, monkeypatch, lambda p, a: bytes(128))
    allocs = []
    g.workspaces = WorkspaceCache(lambda n, s: (allocs.append(n) or 0x10000000, "buf"), lambda a, n, s: None,
                                  lambda h, s: None)
    region = max(counter_bytes(-(-4096 // c["mt"]) * -(-4096 // bn_of(c["rw"], c["wn"]))) for _, c in STREAM_SEEDS)
    assert g.counter_region == region
    for M in (1, 17, 32, 100, 128):
        g(_Stream(3), 0x7F0000000000, 0x7F1000000000, 0x7F2000000000, M)
        i = g.index(M)
        c = g.configs[i]
        grid, args = g._kernels[i].calls[-1]
        bn = bn_of(c["rw"], c["wn"])
        assert grid == (4096 // bn, c["split_k"], -(-M // c["mt"])) == g.grid(M)
        off, need = g.workspace(i, M)
        tiles = -(-M // c["mt"]) * (4096 // bn)
        assert off + counter_bytes(tiles) == region and need >= region        # counters end where partials begin
        assert [int(a) for a in args[:3]] == [0x7F0000000000, 0x7F1000000000, 0x7F2000000000]
        assert int(args[3]) == 0x10000000 + off and [int(a) for a in args[4:]] == [M, 4096, 4096]
    assert micro_kernel(g.families[0]).short(g.configs[0]).startswith("stream 16x32 ")


def test_switch_off_the_artifact_is_not_served(h100, dw, off):
    g = HgemmDispatch(4096, 4096, h100, result=_with_stream(h100, dw), backend="wgmma")
    assert STR not in g.families and all(g.source(m) == "default" for m in (1, 64, 4096))
    assert "AUTOSCHED_DYN_STREAM=1" in g.describe()


def test_the_mma_backend_serves_stream_kernels_too(h100, dw, on):
    from autosched.dynamic.handmade import handmade_result
    dyn = {"bm": 128, "bn": 128, "wm": 64, "wn": 64, "bk": 32, "stages": 3, "pad": 8, "local_pad": 1}
    res = handmade_result(dw, [(STR, dict(STREAM_SEEDS[0][1])), ("hgemm_dyn", dyn)], [32], "H100|x", runner="gpu")
    g = HgemmDispatch(4096, 4096, h100, result=res, backend="mma")
    assert g.family(8) == STR and g.family(500) == "hgemm_dyn" and g.source(8) == "dispatched"


def test_the_load_check_lets_stream_kernels_take_their_workspace(h100, dw, on):
    g = HgemmDispatch(4096, 4096, h100, result=_with_stream(h100, dw), backend="wgmma")

    class _NoBuild:
        def build_many(self, specs):
            raise AssertionError("past the check")
    with pytest.raises(AssertionError, match="past the check"):
        g.load(_NoBuild())


def test_export_writes_its_launch_through_the_workspace(h100, dw, tmp_path):
    res = _with_stream(h100, dw)
    text = export_cu(res, tmp_path / "x.cu", h100).read_text()
    for i, k in enumerate(res.kernels):
        if k.family == STR:
            case = text[text.index(f"case {i}: {{   // {STR}"):]
            assert "(A, B, C, ws, M, 4096, 4096)" in case[:case.index("break;")]


def test_the_front_takes_it_by_name_only_with_the_switch_on(tmp_path, off):
    dw = DynamicWorkload.parse("hgemm", "Mx256x256_bt", (1, 64))
    with pytest.raises(AutoschedError, match="AUTOSCHED_DYN_STREAM=1"):
        front_tune(dw, runner="synthetic", db=str(tmp_path / "a.db"), templates=["hgemm_stream"])


def test_the_front_samples_it_with_the_switch_on(tmp_path, on):
    dw = DynamicWorkload.parse("hgemm", "Mx256x256_bt", (1, 64))
    res = front_tune(dw, runner="synthetic", db=str(tmp_path / "a.db"), rounds=1, per_round=6)
    assert "hgemm_stream" in res.template


def test_the_bench_runs_the_family_only_when_on(monkeypatch, h100):
    from autosched.benchmarks.dynamic import micro_kernel_templates
    monkeypatch.setenv("AUTOSCHED_DYN_STREAM", "0")
    assert STR not in [t.family for t in micro_kernel_templates(h100)]
    monkeypatch.setenv("AUTOSCHED_DYN_STREAM", "1")
    assert STR in [t.family for t in micro_kernel_templates(h100)]


def test_a_max_m_workspace_cap_keeps_render_sane(t, h100):
    for c in t.space(Hgemm.from_shape(f"{MAX_M}x4096x4096_bt"), h100).enumerate()[:50]:
        spec = t.render(Hgemm.from_shape("1x4096x4096_bt"), c, h100)
        assert spec.grid[2] == 1


@pytest.mark.parametrize("shape", ["Mx4096x4096_bt", "Mx264x4104_bt", "Mx1032x520_bt", "Mx264x520_bt",
                                   "Mx1032x520_bt_bf16"])
def test_the_gpu_stage_s_configs_are_in_the_dynamic_spaces(t, h100, shape):
    configs = literal("tests/gpu/test_dynamic_stream_gpu.py", "STREAMS") + literal(
        "scripts/sanitize.py", "STREAM_KERNELS")
    w = DynamicWorkload.parse("hgemm", shape, (1, 2048)).largest
    space = t.space(w, h100)
    for c in configs:
        assert space.contains(c), (shape, c, space.violations(c))
