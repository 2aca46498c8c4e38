"""hgemm_wgmma_swap as a dynamic-M micro-kernel (HgemmWgmmaSwapDynTemplate), on the CPU: the space reads
no M, one binary serves every M, sketches and mutations stay in the space with BW x BT within the
accumulators, probes hold exactly their grid of tiles, the tuner (synthetic runner: MODELLED times)
seeds it, the dispatcher serves it (its grid, its own tensor maps per M) only with its switch on and
only on the wgmma backend, and the .cu export launches it.  Nothing here needs a GPU."""

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
from autosched.dynamic.handmade import handmade_result
from autosched.templates.micro_kernels import micro_kernel
from autosched.ops.hgemm import HgemmDispatch
from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate
from autosched.templates.hgemm_wgmma_swap import (SWAP_SEEDS, THREADS, HgemmWgmmaSwapDynTemplate,
                                                  HgemmWgmmaSwapTemplate, swap_enabled)
from autosched.workloads import Hgemm
from autosched.templates import hgemm_wgmma as t_wg
from autosched.templates import hgemm_wgmma_swap as t_swp
from fake_dispatch import load_fakes

SWP = "hgemm_wgmma_swap"


@pytest.fixture(scope="module")
def dw():
    return DynamicWorkload.parse("hgemm", "Mx768x768_bt", (16, 2048), step=16)


@pytest.fixture(scope="module")
def t():
    return HgemmWgmmaSwapDynTemplate()


@pytest.fixture
def on(monkeypatch):
    monkeypatch.setenv("AUTOSCHED_WGMMA_SWAP", "1")


@pytest.fixture
def off(monkeypatch):
    monkeypatch.setenv("AUTOSCHED_WGMMA_SWAP", "0")


def test_switch_is_on_since_its_gpu_stage(monkeypatch):
    monkeypatch.delenv("AUTOSCHED_WGMMA_SWAP", raising=False)
    assert swap_enabled()
    monkeypatch.setenv("AUTOSCHED_WGMMA_SWAP", "0")
    assert not swap_enabled()


def test_the_space_reads_no_m(t, h100):
    few, many = Hgemm.from_shape("16x768x768_bt"), Hgemm.from_shape("2048x768x768_bt")
    assert t.space(few, h100).enumerate() == t.space(many, h100).enumerate()
    # the static template keeps no token tile wider than M needs
    assert len(HgemmWgmmaSwapTemplate().space(few, h100).enumerate()) < len(t.space(few, h100).enumerate())


def test_one_binary_serves_every_m(t, h100):
    cfg = dict(SWAP_SEEDS[1][2])
    a, b = (t.render(Hgemm.from_shape(s), cfg, h100) for s in ("7x768x768_bt", "2000x768x768_bt"))
    assert a.name_expression == b.name_expression and a.source == b.source
    assert a.grid == (12, 1, 1) and b.grid == (h100.sm_count, 1, 1)     # persistent: a CTA an SM at most
    assert dict(a.args[0].layout_params)["dims"] == (768, 7) and dict(b.args[2].layout_params)["dims"] == (768, 2000)


def test_sketches_and_mutations_stay_in_the_space(t, h100, dw):
    space = t.space(dw.largest, h100)
    rng = random.Random(0)
    drawn = [t_swp.sample_swap(space, (dw.hi, dw.N), rng) for _ in range(200)]
    assert all(space.contains(c) for c in drawn) and len({tuple(sorted(c.items())) for c in drawn}) > 80
    assert all((c["bw"] // 64) * c["bt"] // 2 <= 128 for c in drawn)
    # a range of few rows draws no token tile wider than its largest M
    assert all(c["bt"] <= 32 for c in (t_swp.sample_swap(space, (30, dw.N), rng) for _ in range(50)))
    for c in drawn[:60]:
        m = t_swp.mutate_swap(space, c, rng, (dw.hi, dw.N))
        if m is not None:
            assert space.contains(m) and m != c
        assert sketch.unroll_of(SWP, c) == (c["bw"] // 64) * c["swizzle"] // 32
        assert sketch.threads_of(SWP, c) == THREADS
        assert sketch.tile_of(SWP, c) == (c["bt"], c["bw"])
        assert sketch.describe_any(SWP, c).startswith("swap ")
    # K split, the slices meet in either place; unsplit, in the workspace only (one config, not two)
    assert {c["reduce"] for c in drawn if c["split_k"] > 1} == {"workspace", "cluster"}
    assert all(c["reduce"] == "workspace" for c in drawn if c["split_k"] == 1)
    moved = [t_swp.mutate_swap(space, c, rng, (dw.hi, dw.N)) for c in drawn]
    assert any(m is not None and m["reduce"] != c["reduce"] for c, m in zip(drawn, moved))
    fam, cfg = sketch.sample_any({SWP: space}, (dw.hi, dw.N), rng)
    assert fam == SWP and space.contains(cfg)


def test_compile_reports_and_probes_hold_their_grid_of_tiles(t, h100, dw, tmp_path):
    rng = random.Random(1)
    space = t.space(dw.largest, h100)
    cfgs = [t_swp.sample_swap(space, (dw.hi, dw.N), rng) for _ in range(3)] + [c for *_, c in SWAP_SEEDS]
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        for c in cfgs:
            est = compile_report(t, c, dw.largest, h100)
            rep = compile_report(t, c, dw.largest, h100, b)
            assert est.source == "estimate" and rep.source == "ptxas" and rep.threads == THREADS
            assert rep.blocks_per_sm == 1 and rep.spills == 0
            for g, w in probe_workloads(c, rep, dw, h100, SWP).items():
                assert work_units(c, w.M, w.N, SWP) == g
                assert t.render(w, c, h100).grid == (g, 1, 1)


def test_the_synthetic_model_favours_it_at_few_rows_only(h100):
    swap = {"bw": 64, "bt": 24, "swizzle": 128, "stages": 12, "split_k": 1, "reduce": "workspace"}
    wg = {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 12, "group": 1}
    assert t_swp.modelled_swap_us(swap, 112, 768, 3072, h100) < t_wg.modelled_wgmma_us(wg, 112, 768, 3072, h100)
    big = {"bm": 128, "bn": 256, "consumers": 2, "swizzle": 128, "stages": 3, "group": 8}
    assert t_swp.modelled_swap_us(swap, 4096, 4096, 4096, h100) > 2 * t_wg.modelled_wgmma_us(big, 4096, 4096, 4096, h100)


@pytest.fixture(scope="module")
def mixed(h100, dw):
    return tune_dynamic(dw, [HgemmWgmmaDynTemplate(), HgemmWgmmaSwapDynTemplate()], SyntheticRunner(h100), None,
                        rounds=2, per_round=10, seed=3)


def test_the_tuner_seeds_it_and_verifies_what_it_picks(mixed, dw):
    seeds = [s for s in SWAP_SEEDS if s[0] <= dw.hi and s[1] >= dw.lo]
    assert any(h["by_family"].get(SWP, 0) >= len(seeds) for h in mixed.history)
    assert all(v["status"] == "ok" for v in mixed.verification)
    assert {mixed.dispatcher.family(M) for M in range(16, 2049, 16)} <= {SWP, "hgemm_wgmma"}


def _with_swap(dw):
    wg = {"bm": 128, "bn": 128, "consumers": 2, "swizzle": 128, "stages": 5, "group": 8}
    return handmade_result(dw, [(SWP, dict(SWAP_SEEDS[0][2])), (SWP, dict(SWAP_SEEDS[1][2])),
                                ("hgemm_wgmma", wg)], [48, 192], "H100|x", runner="gpu")


def test_the_dispatcher_serves_swap_kernels_their_grid_and_maps(h100, dw, monkeypatch, on):
    g = HgemmDispatch(768, 768, h100, result=_with_swap(dw), backend="wgmma")
    assert [g.family(M) for M in (16, 48, 64, 192, 208)] == [SWP, SWP, SWP, SWP, "hgemm_wgmma"]
    seen = []
    load_fakes(g, monkeypatch, lambda p, a: (seen.append((a, p["dims"], p["box"])) or bytes(128)))
    for M in (16, 48, 112, 192):
        g(3, 0x7F0000000000, 0x7F1000000000, 0x7F2000000000, M)
        i = g.index(M)
        c = g.configs[i]
        grid, args = g._kernels[i].calls[-1]
        assert grid == (min(-(-M // c["bt"]) * (768 // c["bw"]), h100.sm_count), 1, 1) == g.grid(M)
        assert [int(a) for a in args[3:6]] == [M, 768, 768] and len(args) == 7     # the workspace last
    # X in (BK, BT) boxes over (K, M), W in (BK, BW) over (K, N), Y in (64, BT) over (N, M): the swap's own
    c = g.configs[g.index(112)]
    assert (0x7F0000000000, (768, 112), (64, c["bt"])) in seen
    assert (0x7F1000000000, (768, 768), (64, c["bw"])) in seen
    assert (0x7F2000000000, (768, 112), (64, c["bt"])) in seen
    assert micro_kernel(g.families[0]).short(g.configs[0]) == "swap 8x64 sw128 st12 split1"


def test_a_split_swap_kernel_gets_its_workspace_an_unsplit_one_none(h100, monkeypatch, on):
    from autosched.ops.hgemm import WorkspaceCache
    from autosched.templates.hgemm_wgmma_splitk import counter_bytes

    class Stream:
        handle = 3
    split = {"bw": 64, "bt": 48, "swizzle": 128, "stages": 8, "split_k": 3, "reduce": "workspace"}
    long_k = DynamicWorkload.parse("hgemm", "Mx768x3072_bt", (16, 2048), step=16)
    res = handmade_result(long_k, [(SWP, dict(SWAP_SEEDS[0][2])), (SWP, split)], [48], "H100|x", runner="gpu")
    g = HgemmDispatch(768, 3072, h100, result=res, backend="wgmma")
    load_fakes(g, monkeypatch, lambda p, a: bytes(128))
    allocs = []
    g.workspaces = WorkspaceCache(lambda n, s: (allocs.append(n) or 0x10000000, "buf"), lambda a, n, s: None,
                                  lambda h, s: None)
    # the counters' place: room for the most tiles the split kernel makes at the largest M served
    assert g.counter_region == counter_bytes(-(-max(g.m_max, 2048) // 48) * (768 // 64))
    g(Stream(), 0x7F0000000000, 0x7F1000000000, 0x7F2000000000, 16)        # unsplit: a null workspace
    assert int(g._kernels[g.index(16)].calls[-1][1][6]) == 0 and not allocs
    for M in (100, 160):
        g(Stream(), 0x7F0000000000, 0x7F1000000000, 0x7F2000000000, M)
        i = g.index(M)
        grid, args = g._kernels[i].calls[-1]
        tiles = -(-M // 48) * (768 // 64)
        assert grid == (min(tiles * 3, h100.sm_count), 1, 1) == g.grid(M)
        off, need = g.workspace(i, M)
        assert int(args[6]) == 0x10000000 + off and off + counter_bytes(tiles) == g.counter_region
        assert need == g.counter_region + 3 * tiles * 64 * 48 * 4                # three slices' FP32 partials
    assert micro_kernel(SWP).short(split) == "swap 48x64 sw128 st8 split3"


def test_a_cluster_summed_swap_kernel_launches_every_unit_without_a_workspace(h100, monkeypatch, on):
    # its slices meet in one cluster's shared memory: a CTA a work unit (past the SM count too), no workspace
    cl = {"bw": 64, "bt": 40, "swizzle": 128, "stages": 16, "split_k": 2, "reduce": "cluster"}
    long_k = DynamicWorkload.parse("hgemm", "Mx768x3072_bt", (16, 2048), step=16)
    res = handmade_result(long_k, [(SWP, dict(SWAP_SEEDS[0][2])), (SWP, cl)], [48], "H100|x", runner="gpu")
    g = HgemmDispatch(768, 3072, h100, result=res, backend="wgmma")
    load_fakes(g, monkeypatch, lambda p, a: bytes(128))
    g.workspaces = None                       # never asked for: nothing here reads a workspace
    assert g.counter_region == 0
    for M in (100, 1000):
        g(3, 0x7F0000000000, 0x7F1000000000, 0x7F2000000000, M)
        grid, args = g._kernels[g.index(M)].calls[-1]
        assert grid == (-(-M // 40) * 12 * 2, 1, 1) == g.grid(M) and int(args[6]) == 0
    assert grid[0] > h100.sm_count
    assert g.specs()[g.index(100)].name_expression.startswith("hgemm_wgmma_swap_cluster<")
    assert micro_kernel(SWP).short(cl) == "swap 40x64 sw128 st16 split2 cluster"


def test_switch_off_the_artifact_is_not_served(h100, dw, off):
    g = HgemmDispatch(768, 768, h100, result=_with_swap(dw), backend="wgmma")
    assert SWP not in g.families and all(g.source(m) == "default" for m in (16, 64, 2048))
    assert "AUTOSCHED_WGMMA_SWAP=1" in g.describe()


def test_the_mma_backend_does_not_serve_it(h100, dw, on):
    g = HgemmDispatch(768, 768, h100, result=_with_swap(dw), backend="mma")
    assert SWP not in g.families and "backend mma does not launch" in g.describe()


def test_export_writes_its_launch(h100, dw, tmp_path):
    res = _with_swap(dw)
    text = export_cu(res, tmp_path / "x.cu", h100).read_text()
    for i, k in enumerate(res.kernels):
        if k.family == SWP:        # unsplit: a null workspace, never read
            expr = HgemmWgmmaSwapDynTemplate().render(dw.largest, k.config, h100).name_expression
            case = text[text.index(f"case {i}: {{   // {SWP}"):]
            case = case[:case.index("break;")]
            assert f"{expr}<<<" in case and "(ma, mb, mc, M, 768, 768, ws)" in case and "ws = nullptr" in case


def test_the_front_takes_it_by_name_only_with_the_switch_on(tmp_path, off):
    dw = DynamicWorkload.parse("hgemm", "Mx256x256_bt", (1, 64))
    with pytest.raises(AutoschedError, match="AUTOSCHED_WGMMA_SWAP=1"):
        front_tune(dw, runner="synthetic", db=str(tmp_path / "a.db"), templates=["hgemm_wgmma_swap"])


def test_the_bench_runs_the_family_only_when_on(monkeypatch, h100):
    from autosched.benchmarks.dynamic import micro_kernel_templates
    monkeypatch.setenv("AUTOSCHED_WGMMA_SWAP", "0")
    assert SWP not in [t.family for t in micro_kernel_templates(h100)]
    monkeypatch.setenv("AUTOSCHED_WGMMA_SWAP", "1")
    assert SWP in [t.family for t in micro_kernel_templates(h100)]
    assert SWP not in [t.family for t in micro_kernel_templates(h100, wgmma=False)]
