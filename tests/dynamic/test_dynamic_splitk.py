"""Split-K micro-kernels for a dynamic M (HgemmWgmmaSplitKDynTemplate), on the CPU: the space reads
no M, NVRTC builds its extremes for sm_90a, the workspace layout that launches of every M share keeps
the counters apart from every partial, the dispatcher's workspace cache grows only when it must, the
tuner (synthetic runner: MODELLED times) picks split-K at small M and not at large M with the switch
on and never with it off, and the JSON artifact keeps the family.  Nothing here needs a GPU
(tests/gpu/test_dynamic_splitk_gpu.py is the GPU side)."""

import dataclasses
import json
import random

import pytest

from autosched import knobs
from autosched.api import AutoschedError
from autosched.build import BuildCache, Builder
from autosched.dynamic import sketch
from autosched.dynamic.cost_model import ProbeModel, features
from autosched.dynamic.export import export_cu
from autosched.dynamic.front import tune_dynamic as front_tune
from autosched.dynamic.measurer import compile_report, probe_workloads
from autosched.dynamic.synthetic import SyntheticRunner
from autosched.dynamic.tune import DynamicResult, tune_dynamic
from autosched.dynamic.workload import DynamicWorkload
from autosched.ops import hgemm as H
from autosched.ops.hgemm import HgemmDispatch, WorkspaceCache, workspace_grant
from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate, m_blocks, smem_bytes
from autosched.templates.hgemm_wgmma_splitk import (HgemmWgmmaSplitKDynTemplate, HgemmWgmmaSplitKTemplate,
                                                    counter_bytes, dyn_split_k_enabled, dynamic_workspace,
                                                    workspace_bytes)
from autosched.workloads import Hgemm
from autosched.templates import hgemm_wgmma as t_wg
from autosched.templates import hgemm_wgmma_splitk as t_wgs
from fake_dispatch import load_fakes
from source_literals import literal

WGS = "hgemm_wgmma_splitk"
BASE_KNOBS = ["bm", "bn", "consumers", "swizzle", "stages", "group"]
TINY = {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 4, "group": 8, "split_k": 2}


@pytest.fixture(scope="module")
def dw():
    return DynamicWorkload.parse("hgemm", "Mx4096x4096_bt", (1, 4096))


@pytest.fixture
def on(monkeypatch):
    monkeypatch.setenv("AUTOSCHED_DYN_SPLIT_K", "1")


@pytest.fixture
def off(monkeypatch):
    monkeypatch.setenv("AUTOSCHED_DYN_SPLIT_K", "0")


# -- the switch ---------------------------------------------------------------------------------

def test_switch_is_on_by_default_and_the_environment_overrides_it(monkeypatch):
    import autosched.templates.hgemm_wgmma_splitk as hs
    monkeypatch.delenv("AUTOSCHED_DYN_SPLIT_K", raising=False)
    # flipped after `gpu_check.py dyn-splitk` passed on an H100 (2026-11-23)
    assert knobs.DYN_SPLIT_K.default is True and dyn_split_k_enabled()
    for v, want in (("1", True), ("0", False), ("", False), ("no", False)):
        monkeypatch.setenv("AUTOSCHED_DYN_SPLIT_K", v)
        assert dyn_split_k_enabled() is want
    monkeypatch.delenv("AUTOSCHED_DYN_SPLIT_K")
    monkeypatch.setattr(knobs, "DYN_SPLIT_K", dataclasses.replace(knobs.DYN_SPLIT_K, default=False))
    assert not dyn_split_k_enabled()


# -- the template -------------------------------------------------------------------------------

def test_the_space_reads_no_m(h100):
    t = HgemmWgmmaSplitKDynTemplate()
    assert t.family == WGS and t.dynamic_m and t.source_hash() == HgemmWgmmaSplitKTemplate().source_hash()
    spaces = [t.space(Hgemm.from_shape(f"{m}x4096x4096_bt"), h100) for m in (1, 100, 4096, 16384)]
    assert spaces[0].names == BASE_KNOBS + ["split_k"] and spaces[0].knob("split_k").values == (2, 3, 4, 6, 8)
    sets = [sorted(map(json.dumps, s.enumerate())) for s in spaces]
    assert sets[0] and all(x == sets[0] for x in sets)
    # 4096 x 4096 in 64 x 64 tiles fills the GPU many times over: the static template refuses it, not this one
    big = Hgemm.from_shape("4096x4096x4096_bt")
    assert spaces[2].contains(TINY) and not HgemmWgmmaSplitKTemplate().space(big, h100).contains(TINY)


def test_the_k_slice_rule_stays(h100):
    t = HgemmWgmmaSplitKDynTemplate()
    short = t.space(Hgemm.from_shape("64x512x96_bt"), h100)      # K = 96: two k-blocks of 64 (128B swizzle)
    assert short.contains({**TINY, "split_k": 2})
    assert any("ceil(K / BK) >= split_k" in v for v in short.violations({**TINY, "split_k": 3}))
    assert short.contains({**TINY, "swizzle": 64, "split_k": 3})    # three of 32


def test_one_binary_serves_every_m_and_the_workspace_follows_the_m_rendered(h100):
    t = HgemmWgmmaSplitKDynTemplate()
    c = {**TINY, "split_k": 3}
    specs = {m: t.render(Hgemm.from_shape(f"{m}x4096x4096_bt"), c, h100) for m in (1, 200, 4096)}
    assert len({(s.source, s.name_expression) for s in specs.values()}) == 1
    assert specs[1].name_expression.endswith(", 3>")
    for m, s in specs.items():
        ws = [a for a in s.args if a.role == "workspace"]
        assert len(ws) == 1 and ws[0].value == workspace_bytes(m, 4096, 64, 64, 3)
        assert s.grid[0] == min(-(-m // 64) * 64 * 3, h100.sm_count)


def test_extreme_configs_compile_for_sm90a_without_spills(h100, tmp_path):
    """split_k 4 on the smallest tile, the most shared memory with split_k 2, the most accumulators a
    thread of one consumer with split_k 3: one binary each, whatever M."""
    t = HgemmWgmmaSplitKDynTemplate()
    w = Hgemm.from_shape("4096x4096x4096_bt")
    cfgs = t.space(w, h100).enumerate()
    picks = [min((c for c in cfgs if c["split_k"] == 4), key=lambda c: (c["bm"] * c["bn"], c["stages"])),
             max((c for c in cfgs if c["split_k"] == 2), key=lambda c: smem_bytes(c["bm"], c["bn"], c["swizzle"],
                                                                                  c["stages"])),
             max((c for c in cfgs if c["split_k"] == 3 and c["consumers"] == 1),
                 key=lambda c: (m_blocks(c["bm"], 1) * c["bn"], c["stages"]))]
    specs = [t.render(w, c, h100) for c in picks]
    with Builder(workers=3, cache=BuildCache(tmp_path)) as b:
        for spec, binary in zip(specs, b.build_many(specs)):
            assert binary.ok, (spec.name_expression, binary.error)
            r = binary.resources
            assert r.spills == 0 and r.stack_bytes == 0, (spec.name_expression, r)
            assert "sm_90a" in binary.log


# -- the shared workspace layout ----------------------------------------------------------------

def test_every_launch_keeps_its_counters_before_every_partial():
    N, top = 4096, 4096
    cfgs = [(64, 64, 2), (64, 128, 4), (128, 256, 3), (256, 64, 2)]
    region = max(counter_bytes(-(-top // bm) * -(-N // bn)) for bm, bn, _ in cfgs)
    assert region == counter_bytes(64 * 64)
    for bm, bn, sk in cfgs:
        for M in (1, 63, 64, 65, 300, 2047, 4096):
            off, need = dynamic_workspace(M, N, bm, bn, sk, region)
            tiles = -(-M // bm) * -(-N // bn)
            # the kernel's view at off: counters [off, off + 4 tiles), partials from off + counter_bytes(tiles)
            assert off % 256 == 0 and off + tiles * 4 <= region
            assert off + counter_bytes(tiles) == region             # every launch's partials start at region
            assert need == region + sk * tiles * bm * bn * 4
            assert need - off == workspace_bytes(M, N, bm, bn, sk)  # the kernel's own layout, moved


def test_a_launch_with_more_tiles_than_the_layout_refuses():
    region = counter_bytes(-(-1024 // 64) * 64)
    dynamic_workspace(1024, 4096, 64, 64, 2, region)
    with pytest.raises(ValueError, match="over the"):
        dynamic_workspace(1025 + 64, 4096, 64, 64, 2, region)


def test_workspace_grant_reuses_or_rounds_up():
    assert workspace_grant(0, 1) == 1 << 20
    assert workspace_grant(1 << 20, 1 << 20) == 0 and workspace_grant(5 << 20, 3 << 20) == 0
    assert workspace_grant(1 << 20, (1 << 20) + 1) == 2 << 20


class _Stream:
    def __init__(self, handle):
        self.handle = handle


def _fake_cache():
    log = []
    addr = [0x10000000]

    def allocate(n, stream):
        addr[0] += 1 << 28
        log.append(("alloc", n, stream))
        return addr[0], ("buf", addr[0])

    cache = WorkspaceCache(allocate, lambda a, n, s: log.append(("zero", a, n, s)),
                           lambda h, s: log.append(("free", h, s)))
    return cache, log


def test_the_cache_grows_only_when_it_must_and_zeroes_what_it_allocates():
    cache, log = _fake_cache()
    s = _Stream(7)
    a = cache.address(s, 3 << 20)
    assert [e[0] for e in log] == ["alloc", "zero"] and log[1][1:3] == (a, 3 << 20)
    assert cache.address(s, 1 << 20) == a and cache.address(s, 3 << 20) == a and len(log) == 2   # reused
    b = cache.address(s, (3 << 20) + 1)                           # larger: a new zeroed buffer, the old freed
    assert b != a and [e[0] for e in log[2:]] == ["alloc", "zero", "free"]
    assert log[4] == ("free", ("buf", a), s)                       # in the stream's order
    assert cache.address(s, 1) == b and cache.allocations == 2
    other = cache.address(_Stream(8), 1)                          # another stream: its own buffer
    assert other not in (a, b) and cache.allocations == 3
    assert cache.address(_Stream(7), 2) == b                      # keyed by the stream's handle, not the object


# -- the dispatcher ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mixed(h100, dw):
    return tune_dynamic(dw, [HgemmWgmmaDynTemplate(), HgemmWgmmaSplitKDynTemplate()], SyntheticRunner(h100), None,
                        rounds=2, per_round=10, seed=3)


def _measured(res):
    """The synthetic run as if measured: HgemmDispatch serves no synthetic run."""
    return DynamicResult.from_json({**res.to_json(), "runner": "gpu"})


def _loaded(g, monkeypatch):
    load_fakes(g, monkeypatch, lambda p, a: bytes(128))
    cache, log = _fake_cache()
    g.workspaces = cache
    return log


def test_the_tuned_range_has_split_k_at_small_m(mixed):
    fams = {M: mixed.dispatcher.family(M) for M in (1, 16, 64, 2048, 4096)}
    assert fams[1] == fams[16] == WGS and fams[2048] != WGS and fams[4096] != WGS, fams


def test_a_call_passes_the_workspace_of_its_m_and_reuses_it(h100, mixed, monkeypatch, on):
    g = HgemmDispatch(4096, 4096, h100, result=_measured(mixed), backend="wgmma")
    log = _loaded(g, monkeypatch)
    ms = [m for m in (1, 7, 16, 33, 64, 100, 200, 256) if g.family(m) == WGS]
    assert ms and g.counter_region == max(counter_bytes(-(-4096 // c["bm"]) * -(-4096 // c["bn"]))
                                         for c, f in zip(g.configs, g.families) if f == WGS)
    first = ms[len(ms) // 2]
    cap, grows = 0, 0
    for M in [first] + ms + [first]:        # smaller and larger than the first call's, in a row
        need = g.workspace(g.index(M), M)[1]
        if workspace_grant(cap, need):
            cap, grows = workspace_grant(cap, need), grows + 1
        g(_Stream(3), 0x7F0000000000, 0x7F1000000000, 0x7F2000000000, M)
        i = g.index(M)
        c = g.configs[i]
        grid, args = g._kernels[i].calls[-1]
        tiles = -(-M // c["bm"]) * -(-4096 // c["bn"])
        assert grid == (min(tiles * c["split_k"], h100.sm_count), 1, 1) == g.grid(M)
        assert [int(a) for a in args[3:6]] == [M, 4096, 4096] and len(args) == 7
        base, cap, _ = g.workspaces.buffers[3]
        off, need = g.workspace(i, M)
        assert int(args[6]) == base + off and need <= cap
    allocs = [e for e in log if e[0] == "alloc"]
    assert len(allocs) == grows and grows < len(ms) + 2   # only where an M needed more than any before
    assert [e[0] for e in log].count("free") == grows - 1
    n = len(log)
    for M in ms:                                      # warm: no allocation on the hot path
        g(_Stream(3), 0x7F0000000000, 0x7F1000000000, 0x7F2000000000, M)
    assert len(log) == n


def test_host_overhead_with_split_k_is_small(h100, mixed, monkeypatch, on):
    g = HgemmDispatch(4096, 4096, h100, result=_measured(mixed), backend="wgmma")
    _loaded(g, monkeypatch)
    assert any(g.family(m) == WGS for m in (1, 16, 64))
    # the best of five batches (a loaded CPU inflates a batch, not the dispatcher's own cost)
    us = min(H.host_overhead_us(g, _Stream(3), 0x7F0000000000, 0x7F1000000000, 0x7F2000000000,
                                [1, 16, 64, 300, 2048], reps=400) for _ in range(5))
    assert us < 30, us


def test_switch_off_the_artifact_is_not_served(h100, mixed, off):
    g = HgemmDispatch(4096, 4096, h100, result=_measured(mixed), backend="wgmma")
    assert WGS not in g.families and all(g.source(m) == "default" for m in (1, 64, 4096))
    assert "switch is off" in g.describe() and "AUTOSCHED_DYN_SPLIT_K=1" in g.describe()


def test_the_load_refusal_spares_split_k_only(h100, mixed, on):
    g = HgemmDispatch(4096, 4096, h100, result=_measured(mixed), backend="wgmma")
    specs = g.specs()
    assert any(f == WGS for f in g.families)
    assert all(any(a.role == "workspace" for a in s.args) == (f == WGS) for s, f in zip(specs, g.families))

    class _NoBuild:
        def build_many(self, specs):
            raise AssertionError("refused or not, load() got past its check")

    with pytest.raises(AssertionError, match="got past its check"):
        g.load(_NoBuild())


# -- the tuner ------------------------------------------------------------------------------------

def test_sketches_and_mutations_of_split_k(h100, dw):
    space = HgemmWgmmaSplitKDynTemplate().space(dw.largest, h100)
    rng = random.Random(2)
    splits, moved = set(), False
    for _ in range(150):
        c = t_wg.sample_wgmma(space, (dw.hi, dw.N), rng)
        assert space.contains(c) and c["split_k"] in (2, 3, 4, 6, 8)
        splits.add(c["split_k"])
        m = t_wg.mutate_wgmma(space, c, rng, (dw.hi, dw.N))
        if m is not None:
            assert m["consumers"] == c["consumers"] and space.contains(m) and m != c
            moved |= m["split_k"] != c["split_k"]
    assert splits == {2, 3, 4, 6, 8} and moved
    assert "split" in sketch.describe_any(WGS, c) and sketch.threads_of(WGS, c) == 128 * (c["consumers"] + 1)


def test_probes_and_features_count_work_units(h100, dw):
    t = HgemmWgmmaSplitKDynTemplate()
    c = {**TINY, "split_k": 4}
    rep = compile_report(t, c, dw.largest, h100)
    assert rep.blocks_per_sm == 1 and rep.threads == 256
    probes = probe_workloads(c, rep, dw, h100)
    assert list(probes) == [h100.sm_count]
    w = probes[h100.sm_count]
    assert -(-w.M // 64) * -(-w.N // 64) == h100.sm_count // 4     # one wave of work units
    mk = ProbeModel(dw, h100, [HgemmWgmmaDynTemplate(), t]).guess(c, WGS)
    assert mk.family == WGS and mk.ok
    f = features(mk, 64, dw.N, h100.sm_count)
    plain = features(ProbeModel(dw, h100, [HgemmWgmmaDynTemplate()]).guess(
        {k: v for k, v in c.items() if k != "split_k"}, "hgemm_wgmma"), 64, dw.N, h100.sm_count)
    assert len(f) == len(plain) and f[-1] == plain[-1] == 1.0 and f[-2] == 2.0 and plain[-2] == 0.0
    assert abs(f[0] - plain[0] - 2.0) < 1e-6              # log2 waves: 4x the units of the unsplit kernel


def test_the_synthetic_model_splits_at_small_m_only(h100):
    unsplit = {k: v for k, v in TINY.items() if k != "split_k"}
    assert t_wgs.modelled_wgmma_splitk_us(TINY, 64, 4096, 4096, h100) < t_wg.modelled_wgmma_us(unsplit, 64, 4096, 4096, h100)
    big = {"bm": 128, "bn": 256, "consumers": 2, "swizzle": 128, "stages": 3, "group": 8}
    assert t_wgs.modelled_wgmma_splitk_us({**big, "split_k": 2}, 4096, 4096, 4096, h100) > \
        t_wg.modelled_wgmma_us(big, 4096, 4096, 4096, h100)


def test_the_front_adds_split_k_with_the_switch_on(tmp_path, on, monkeypatch):
    # the families that would compete with it for few rows have switches of their own (their tests)
    monkeypatch.setenv("AUTOSCHED_WGMMA_SWAP", "0")
    monkeypatch.setenv("AUTOSCHED_DYN_SCHED", "0")
    res = front_tune(DynamicWorkload.parse("hgemm", "Mx4096x4096_bt", (1, 4096)), runner="synthetic",
                     db=str(tmp_path / "t.db"), rounds=2, per_round=10, seed=1)
    assert WGS in res.template.split("+")
    assert res.dispatcher.family(1) == WGS and res.dispatcher.family(16) == WGS
    assert res.dispatcher.family(4096) != WGS and res.dispatcher.family(2048) != WGS
    back = json.loads(res.artifact.read_text())
    assert WGS in back["dispatcher"]["families"]


def test_the_front_never_samples_split_k_with_the_switch_off(tmp_path, off):
    dw = DynamicWorkload.parse("hgemm", "Mx4096x4096_bt", (1, 4096))
    res = front_tune(dw, runner="synthetic", db=str(tmp_path / "t.db"), rounds=2, per_round=10, seed=1)
    assert WGS not in res.template and all(k.family != WGS for k in res.kernels)
    assert all(WGS not in h["by_family"] for h in res.history)
    with pytest.raises(AutoschedError, match="AUTOSCHED_DYN_SPLIT_K"):
        front_tune(dw, runner="synthetic", db=str(tmp_path / "t.db"), templates=["hgemm_wgmma", WGS])


# -- the artifact ---------------------------------------------------------------------------------

def test_json_round_trip_keeps_the_family_and_the_tree(mixed):
    back = DynamicResult.from_json(json.loads(json.dumps(mixed.to_json())))
    assert [k.family for k in back.kernels] == [k.family for k in mixed.kernels] and WGS in back.dispatcher.families
    assert [k.config for k in back.kernels] == [k.config for k in mixed.kernels]
    assert all(back.dispatcher(M) == mixed.dispatcher(M) and back.dispatcher.family(M) == mixed.dispatcher.family(M)
               for M in range(1, 4097, 37))


def test_export_writes_its_launch_through_the_workspace(mixed, h100, tmp_path):
    text = export_cu(mixed, tmp_path / "x.cu", h100).read_text()
    split = [i for i, k in enumerate(mixed.kernels) if k.family == WGS]
    assert split and "_workspace_bytes(void) { return 0; }" not in text
    for i in split:
        case = text[text.index(f"case {i}: {{   // {WGS}"):]
        assert "(ma, mb, mc, M, 4096, 4096, ws)" in case[:case.index("break;")]


def test_the_bench_runs_the_family_only_when_on(monkeypatch, h100):
    """The dynamic bench's micro-kernel templates: split-K beside wgmma's only with its switch on,
    neither where the GPU has no wgmma (the bench's settings record the list)."""
    from autosched.benchmarks.dynamic import micro_kernel_templates
    from autosched.device import DeviceInfo
    fams = lambda dev, **kw: [t.family for t in micro_kernel_templates(dev, **kw)]  # noqa: E731
    for other in ("AUTOSCHED_DYN_STREAM", "AUTOSCHED_WGMMA_SWAP", "AUTOSCHED_DYN_SCHED"):
        monkeypatch.setenv(other, "0")                   # their own switches: their own tests
    monkeypatch.setenv("AUTOSCHED_DYN_SPLIT_K", "1")
    assert fams(h100) == ["hgemm_dyn", "hgemm_wgmma", WGS]
    assert fams(h100, wgmma=False) == ["hgemm_dyn"]
    a100 = DeviceInfo(**{**h100.__dict__, "name": "A100", "cc": (8, 0)})
    assert fams(a100) == ["hgemm_dyn"]
    monkeypatch.setenv("AUTOSCHED_DYN_SPLIT_K", "0")
    assert fams(h100) == ["hgemm_dyn", "hgemm_wgmma"]


# -- what the GPU stage will launch ---------------------------------------------------------------

def _load(path):
    import importlib.util
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    # its own folder too (tests/gpu's modules import gemm_checks beside them, which pytest puts on the
    # path only once it has collected that folder)
    dirs = [str(root / "scripts"), str((root / path).parent)]
    sys.path[:0] = dirs
    try:
        spec = importlib.util.spec_from_file_location(Path(path).stem, root / path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        for d in dirs:
            sys.path.remove(d)


def test_handmade_results_serve_each_kernel_its_range(h100):
    from autosched.dynamic.handmade import chain_nodes, handmade_result
    from autosched.dynamic.dispatch import walk
    nodes = chain_nodes([10, 100])
    assert [walk(nodes, m) for m in (1, 10, 11, 100, 101, 5000)] == [0, 0, 1, 1, 2, 2]
    dw = DynamicWorkload.parse("hgemm", "Mx264x520_bt", (1, 512))
    res = handmade_result(dw, [(WGS, TINY), ("hgemm_wgmma", {k: v for k, v in TINY.items() if k != "split_k"})],
                          [40], h100.key)
    assert res.dispatcher.family(40) == WGS and res.dispatcher.family(41) == "hgemm_wgmma"
    with pytest.raises(ValueError, match="ascending tops"):
        handmade_result(dw, [(WGS, TINY)], [40], h100.key)


def test_the_gpu_stage_s_configs_are_in_the_dynamic_spaces(h100, on):
    """The configs tests/gpu and scripts/ pin, on the shapes they pin them to: a typo here would
    cost a GPU session."""
    # the GPU module's literals read without importing it: its import skips without torch, which
    # would skip this CPU check wherever torch is missing (CI)
    gpu = {name: literal("tests/gpu/test_dynamic_splitk_gpu.py", name) for name in ("WGS", "WG", "SPLITS", "PLAIN")}
    common = _load("scripts/dyn_splitk_common.py")
    pinned = [(gpu["WGS"], c) for c in gpu["SPLITS"]] + [(gpu["WG"], gpu["PLAIN"])]
    pinned += [(common.WGS, common.config(*t, split_k=sk)) for t in common.TILES for sk in (2, 3, 4)]
    pinned += [(common.WG, common.config(*t)) for t in common.TILES]
    from autosched.dynamic.handmade import handmade_result
    for n, k in [(4096, 4096), (264, 4104), (1032, 520), (264, 520)]:
        dw = DynamicWorkload.parse("hgemm", f"Mx{n}x{k}_bt", (1, 2048))
        g = HgemmDispatch(n, k, h100, result=handmade_result(dw, pinned, list(range(1, len(pinned))), h100.key),
                          backend="wgmma", m_max=2048)
        assert g.families[:len(pinned)] == [f for f, _ in pinned]       # validated by each template's space
