"""hgemm_wgmma_sched as a dynamic-M micro-kernel (HgemmWgmmaSchedDynTemplate), on the CPU: the space reads
no M, one binary serves every M, sketches and mutations keep the schedule and the accumulators, probes
hold exactly their grid of tiles, the tuner (synthetic runner: MODELLED times) seeds it with the configs
the H100 measured fastest, the dispatcher serves it (its grid, its maps per M, 168-column tiles' C boxes
too) only with its switch on and only on the wgmma backend, and the .cu export launches it.  Nothing here
needs a GPU."""

import random

import pytest

from autosched.api import AutoschedError
from autosched.build import BuildCache, Builder
from autosched.dynamic import sketch
from autosched.dynamic.cost_model import work_units
from autosched.dynamic.export import export_cu
from autosched.dynamic.front import tune_dynamic as front_tune
from autosched.dynamic.measurer import compile_report, probe_workloads
from autosched.dynamic.synthetic import SyntheticRunner
from autosched.dynamic.tune import tune_dynamic
from autosched.dynamic.workload import DynamicWorkload
from autosched.templates.micro_kernels import micro_kernel
from autosched.ops.hgemm import HgemmDispatch
from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate
from autosched.templates.hgemm_wgmma_sched import (SCHED_SEEDS, HgemmWgmmaSchedDynTemplate, HgemmWgmmaSchedTemplate,
                                                   dyn_sched_enabled)
from autosched.workloads import Hgemm
from autosched.templates import hgemm_wgmma as t_wg
from autosched.templates import hgemm_wgmma_sched as t_sch
from fake_dispatch import load_fakes

SCH = "hgemm_wgmma_sched"


@pytest.fixture(scope="module")
def dw():
    return DynamicWorkload.parse("hgemm", "Mx11008x4096_bt", (1, 4096))


@pytest.fixture(scope="module")
def t():
    return HgemmWgmmaSchedDynTemplate()


@pytest.fixture
def on(monkeypatch):
    monkeypatch.setenv("AUTOSCHED_DYN_SCHED", "1")


@pytest.fixture
def off(monkeypatch):
    monkeypatch.setenv("AUTOSCHED_DYN_SCHED", "0")


def test_switch_is_on_since_its_gpu_test(monkeypatch):
    monkeypatch.delenv("AUTOSCHED_DYN_SCHED", raising=False)
    assert dyn_sched_enabled()
    monkeypatch.setenv("AUTOSCHED_DYN_SCHED", "0")
    assert not dyn_sched_enabled()


def test_the_space_reads_no_m(t, h100):
    few, many = Hgemm.from_shape("16x11008x4096_bt"), Hgemm.from_shape("4096x11008x4096_bt")
    assert t.space(few, h100).enumerate() == t.space(many, h100).enumerate()
    assert len(HgemmWgmmaSchedTemplate().space(few, h100).enumerate()) < len(t.space(few, h100).enumerate())
    assert all(t.space(few, h100).contains(c) for *_, c in SCHED_SEEDS)


def test_one_binary_serves_every_m(t, h100):
    cfg = dict(SCHED_SEEDS[1][2])
    a, b = (t.render(Hgemm.from_shape(s), cfg, h100) for s in ("100x11008x4096_bt", "3000x11008x4096_bt"))
    assert a.name_expression == b.name_expression and a.source == b.source
    assert a.grid == (66, 1, 1) and b.grid == (h100.sm_count, 1, 1)
    assert dict(a.args[2].layout_params)["box"] == (56, 64)          # a 168-column tile's C boxes


def test_sketches_and_mutations_keep_the_schedule_in_the_space(t, h100, dw):
    space = t.space(dw.largest, h100)
    rng = random.Random(0)
    drawn = [t_sch.sample_sched(space, (dw.hi, dw.N), rng) for _ in range(200)]
    assert all(space.contains(c) for c in drawn) and len({tuple(sorted(c.items())) for c in drawn}) > 100
    assert {c["schedule"] for c in drawn} == {"cooperative", "pingpong"}
    for c in drawn[:60]:
        m = t_sch.mutate_sched(space, c, rng, (dw.hi, dw.N))
        if m is not None:
            assert space.contains(m) and m != c and m["schedule"] == c["schedule"]
        mw = c["bm"] // 64 if c["schedule"] == "pingpong" else c["bm"] // 128
        assert sketch.unroll_of(SCH, c) == mw * c["swizzle"] // 32
        assert sketch.threads_of(SCH, c) == 384 and sketch.tile_of(SCH, c) == (c["bm"], c["bn"])
        assert sketch.describe_any(SCH, c).startswith("sched ")
    fam, cfg = sketch.sample_any({SCH: space}, (dw.hi, dw.N), rng)
    assert fam == SCH and space.contains(cfg)


def test_compile_reports_and_probes_hold_their_grid_of_tiles(t, h100, dw, tmp_path):
    rng = random.Random(1)
    space = t.space(dw.largest, h100)
    cfgs = [t_sch.sample_sched(space, (dw.hi, dw.N), rng) for _ in range(2)] + [c for *_, c in SCHED_SEEDS]
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        for c in cfgs:
            est = compile_report(t, c, dw.largest, h100)
            rep = compile_report(t, c, dw.largest, h100, b)
            assert est.source == "estimate" and rep.source == "ptxas" and rep.threads == 384
            assert rep.blocks_per_sm == 1 and rep.spills == 0
            for g, w in probe_workloads(c, rep, dw, h100, SCH).items():
                assert work_units(c, w.M, w.N, SCH) == g
                assert t.render(w, c, h100).grid == (g, 1, 1)


def test_the_synthetic_model_follows_the_measured_order(h100):
    coop = dict(SCHED_SEEDS[2][2])
    wg = {"bm": 128, "bn": 256, "consumers": 2, "swizzle": 128, "stages": 4, "group": 8}
    assert t_sch.modelled_sched_us(coop, 4096, 4096, 4096, h100) < t_wg.modelled_wgmma_us(wg, 4096, 4096, 4096, h100)
    assert t_sch.modelled_sched_us({**coop, "schedule": "pingpong", "bm": 64}, 4096, 4096, 4096, h100) > \
        t_sch.modelled_sched_us(coop, 4096, 4096, 4096, h100)


@pytest.fixture(scope="module")
def mixed(h100, dw):
    return tune_dynamic(dw, [HgemmWgmmaDynTemplate(), HgemmWgmmaSchedDynTemplate()], SyntheticRunner(h100), None,
                        rounds=2, per_round=10, seed=3)


def test_the_tuner_seeds_it_and_verifies_what_it_picks(mixed):
    assert any(h["by_family"].get(SCH, 0) >= len(SCHED_SEEDS) for h in mixed.history)
    assert all(v["status"] == "ok" for v in mixed.verification)


def _with_sched(dw):
    from autosched.dynamic.handmade import handmade_result
    wg = {"bm": 64, "bn": 128, "consumers": 1, "swizzle": 128, "stages": 6, "group": 8}
    return handmade_result(dw, [("hgemm_wgmma", wg), (SCH, dict(SCHED_SEEDS[1][2])), (SCH, dict(SCHED_SEEDS[2][2]))],
                           [128, 1024], "H100|x", runner="gpu")


def test_the_dispatcher_serves_sched_kernels_their_grid_and_maps(h100, dw, monkeypatch, on):
    g = HgemmDispatch(11008, 4096, h100, result=_with_sched(dw), backend="wgmma")
    assert [g.family(M) for M in (64, 129, 1024, 1025, 4096)] == ["hgemm_wgmma", SCH, SCH, SCH, SCH]
    seen = []
    load_fakes(g, monkeypatch, lambda p, a: (seen.append((a, p["dims"], p["box"])) or bytes(128)))
    for M in (200, 1000, 3000):
        g(3, 0x7F0000000000, 0x7F1000000000, 0x7F2000000000, M)
        i = g.index(M)
        c = g.configs[i]
        grid, args = g._kernels[i].calls[-1]
        assert grid == (min(-(-M // c["bm"]) * -(-11008 // c["bn"]), h100.sm_count), 1, 1) == g.grid(M)
        assert [int(a) for a in args[3:]] == [M, 11008, 4096]
    # the 168-column tile's C map: unswizzled 56 x 64 boxes, per M
    assert (0x7F2000000000, (11008, 200), (56, 64)) in seen and (0x7F2000000000, (11008, 3000), (64, 64)) in seen
    assert micro_kernel(SCH).short(g.configs[g.index(200)]) == "sched cooperative 128x168 boxes2 sw128 st4"


def test_switch_off_the_artifact_is_not_served(h100, dw, off):
    g = HgemmDispatch(11008, 4096, h100, result=_with_sched(dw), backend="wgmma")
    assert SCH not in g.families and "AUTOSCHED_DYN_SCHED=1" in g.describe()


def test_the_mma_backend_does_not_serve_it(h100, dw, on):
    g = HgemmDispatch(11008, 4096, h100, result=_with_sched(dw), backend="mma")
    assert SCH not in g.families and "backend mma does not launch" in g.describe()


def test_export_writes_its_launch(h100, dw, tmp_path):
    res = _with_sched(dw)
    text = export_cu(res, tmp_path / "x.cu", h100).read_text()
    for i, k in enumerate(res.kernels):
        if k.family == "hgemm_wgmma_sched":
            expr = HgemmWgmmaSchedDynTemplate().render(dw.largest, k.config, h100).name_expression
            assert f"{expr}<<<" in text and f"case {i}: {{   // hgemm_wgmma_sched" in text


def test_the_front_takes_it_by_name_only_with_the_switch_on(tmp_path, off):
    dw = DynamicWorkload.parse("hgemm", "Mx256x256_bt", (1, 64))
    with pytest.raises(AutoschedError, match="AUTOSCHED_DYN_SCHED=1"):
        front_tune(dw, runner="synthetic", db=str(tmp_path / "a.db"), templates=["hgemm_wgmma_sched"])


def test_the_bench_runs_the_family_only_when_on(monkeypatch, h100):
    from autosched.benchmarks.dynamic import micro_kernel_templates
    monkeypatch.setenv("AUTOSCHED_DYN_SCHED", "0")
    assert SCH not in [t.family for t in micro_kernel_templates(h100)]
    monkeypatch.setenv("AUTOSCHED_DYN_SCHED", "1")
    assert SCH in [t.family for t in micro_kernel_templates(h100)]
