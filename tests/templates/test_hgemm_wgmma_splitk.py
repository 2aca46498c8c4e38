"""Split-K of the wgmma GEMM as its own template, hgemm_wgmma_splitk (kernels/hgemm_wgmma_splitk.cuh):
hgemm_wgmma (its build id, space, default, rendered kernels, shipped recordings) is what it was
whatever the switch says; the switch puts the template in the hgemm family or leaves it out; the
template's knobs, rules, default, features, render and workspace argument, its build id, its empty
space where the tiles fill the GPU and how tuning passes over that, the static_asserts agreeing
with the Python rules, NVRTC builds without spills; and the "workspace" ArgSpec role where launches
are assembled."""

import dataclasses
import hashlib
import random
import re
import types

import numpy as np
import pytest

import autosched.templates.hgemm_wgmma_splitk as hs
from autosched import knobs
from autosched import registry
from autosched.build import compile_spec
from autosched.identity import build_id, same_program, source_id
from autosched.measure.recording import Recording, shipped_recordings
from autosched.registry import family
from autosched.space import ConfigError
from autosched.templates import HgemmWgmmaSplitKTemplate, HgemmWgmmaTemplate
from autosched.templates.base import ArgSpec, kernel_source
from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate, m_blocks, smem_bytes
from autosched.templates.hgemm_wgmma_splitk import workspace_bytes
from autosched.workloads import Hgemm

from .wgmma_builds import assert_wgmma_builds_clean

SMALL = "128x4096x4096_bt"      # 64 tiles of 128 x 64: the prefill shape split-K is for
BASE_KNOBS = ["bm", "bn", "consumers", "swizzle", "stages", "group"]
SWITCH = [None, "0", "1"]       # the environment variable unset, off, on


@pytest.fixture
def t():
    return HgemmWgmmaSplitKTemplate()


def setenv(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("AUTOSCHED_WGMMA_SPLIT_K", raising=False)
    else:
        monkeypatch.setenv("AUTOSCHED_WGMMA_SPLIT_K", value)


def key(c):
    return tuple(sorted(c.items()))


# -- the switch and the registry ----------------------------------------------------------------

def test_switch_reads_the_constant_and_the_environment(monkeypatch):
    monkeypatch.delenv("AUTOSCHED_WGMMA_SPLIT_K", raising=False)
    assert hs.split_k_enabled() is knobs.WGMMA_SPLIT_K.default is True      # the GPU check passed
    for value, want in [("1", True), ("0", False), ("", False), ("no", False), ("yes", True)]:
        monkeypatch.setenv("AUTOSCHED_WGMMA_SPLIT_K", value)
        assert hs.split_k_enabled() is want


def test_the_switch_puts_the_template_in_the_family_or_leaves_it_out(monkeypatch, h100):
    from autosched.selection import default_candidate
    names = lambda fams: [x.family for x in fams["hgemm"].templates]  # noqa: E731
    assert names(registry.FAMILIES) == ["hgemm_mma", "hgemm_wmma", "hgemm_wgmma", "hgemm_wgmma_splitk", "hgemm_stream",
                                        "hgemm_wgmma_cluster", "hgemm_wgmma_sched", "hgemm_wgmma_swap"]
    monkeypatch.setenv("AUTOSCHED_WGMMA_SPLIT_K", "0")
    assert names(registry._families()) == ["hgemm_mma", "hgemm_wmma", "hgemm_wgmma", "hgemm_stream", "hgemm_wgmma_cluster",
                                           "hgemm_wgmma_sched", "hgemm_wgmma_swap"]
    monkeypatch.setattr(knobs, "WGMMA_SPLIT_K", dataclasses.replace(knobs.WGMMA_SPLIT_K, default=False))
    monkeypatch.delenv("AUTOSCHED_WGMMA_SPLIT_K")
    assert "hgemm_wgmma_splitk" not in names(registry._families())
    monkeypatch.setenv("AUTOSCHED_WGMMA_SPLIT_K", "1")
    assert names(registry._families())[3] == "hgemm_wgmma_splitk"
    # a candidate, never the default: on sm_90 the family's default stays hgemm_wgmma's
    assert registry.template_named("hgemm_wgmma_splitk").default_on(h100) is False
    assert default_candidate(Hgemm.from_shape(SMALL), h100).template == "hgemm_wgmma"


# -- hgemm_wgmma is what it was ------------------------------------------------------------------

@pytest.mark.parametrize("switch", SWITCH)
def test_hgemm_wgmma_is_the_same_whatever_the_switch(monkeypatch, h100, switch):
    """Its build is still the one every shipped recording names,
    and its space, default and kernels have no split-K in them."""
    setenv(monkeypatch, switch)
    t = HgemmWgmmaTemplate()
    assert t.source_hash() == hashlib.sha256(kernel_source("hgemm_wgmma.cuh").encode()).hexdigest()
    recs = [Recording.load(p) for p in shipped_recordings() if p.name.startswith("hgemm_wgmma-")]
    assert len(recs) == 18 and {r.template for r in recs} == {"hgemm_wgmma"}
    # their source ids name the current program: the source they were measured with compiles to the code
    # the current one does (identity's ledger), so they serve as before
    assert all(same_program(r.build, t) for r in recs)
    for shape in [SMALL, "4096x4096x4096", "296x264x200_tn_bf16"]:
        w = Hgemm.from_shape(shape)
        space = t.space(w, h100)
        assert space.names == BASE_KNOBS
        d = t.default_config(w, h100)
        spec = t.render(w, d, h100)
        assert spec.source == kernel_source("hgemm_wgmma.cuh") and spec.name_expression.startswith("hgemm_wgmma<")
        assert [a.role for a in spec.args] == ["tensormap"] * 3 + ["scalar"] * 3
        with pytest.raises(ConfigError, match="unknown knobs"):
            t.render(w, {**d, "split_k": 2}, h100)


def test_hgemm_wgmma_space_and_features_do_not_follow_the_switch(monkeypatch, h100):
    seen = []
    for switch in SWITCH:
        setenv(monkeypatch, switch)
        t, w = HgemmWgmmaTemplate(), Hgemm.from_shape(SMALL)
        cfgs = t.space(w, h100).enumerate()
        seen.append((cfgs, t.default_config(w, h100), [t.derived_features(c, w.params, h100) for c in cfgs[:20]]))
    assert seen[0] == seen[1] == seen[2]
    assert "split_k" not in seen[0][2][0]


@pytest.mark.parametrize("switch", SWITCH)
def test_a_shipped_hgemm_wgmma_recording_replays_whatever_the_switch(monkeypatch, tmp_path, switch):
    """`autosched tune hgemm --shape 4096x4096x4096 --template hgemm_wgmma --runner replay`: the
    recording covers configs of the space, so the run measures; and the run over every template
    passes over split-K (no config at 4096^3) and measures the others."""
    from autosched import api
    setenv(monkeypatch, switch)
    one = api.tune(("hgemm", "4096x4096x4096"), runner="replay", template="hgemm_wgmma", trials=24,
                   db=tmp_path / "one.db")
    assert one.result.measured_now == 24 and one.result.statuses == {"ok": 24}
    assert one.result.best_template == "hgemm_wgmma"
    plans = []
    every = api.tune(("hgemm", "4096x4096x4096"), runner="replay", trials=24, db=tmp_path / "all.db",
                     on_start=plans.append)
    assert every.result.measured_now == 24 and every.result.best is not None
    assert "hgemm_wgmma_splitk" in plans[0].templates
    assert [n.split(" ")[0] for n in plans[0].empty] == ["hgemm_wgmma_splitk"]
    assert "fewer output tiles than 2 x 132 SMs" in plans[0].empty[0]
    assert not any("hgemm_wgmma_splitk" in n for n in plans[0].coverage)


def test_the_dynamic_m_template_never_splits(h100):
    dyn = HgemmWgmmaDynTemplate()
    assert dyn.source_hash() == HgemmWgmmaTemplate().source_hash()
    assert dyn.space(Hgemm.from_shape(SMALL), h100).names == BASE_KNOBS


# -- the template's space ----------------------------------------------------------------------

def test_knobs_are_wgmma_s_and_split_k_2_to_8(t, h100):
    space = t.space(Hgemm.from_shape(SMALL), h100)
    assert space.names == BASE_KNOBS + ["split_k"] and space.knob("split_k").values == (2, 3, 4, 6, 8)
    ok = {"bm": 128, "bn": 64, "consumers": 2, "swizzle": 128, "stages": 6, "group": 1, "split_k": 2}
    assert space.contains(ok)
    for bad in (1, 5, 7, 9):    # 1 is hgemm_wgmma itself
        assert any("not one of" in v for v in space.violations({**ok, "split_k": bad}))


@pytest.mark.parametrize("shape", [SMALL, "136x264x4104_bt", "512x11008x4096_bt", "296x264x200_tn_bf16"])
def test_the_space_is_wgmma_s_times_the_splits_that_pass_the_rules(t, h100, shape):
    w = Hgemm.from_shape(shape)
    wg = HgemmWgmmaTemplate().space(w, h100).enumerate()
    got = t.space(w, h100).enumerate()
    want = [{**c, "split_k": sk} for c in wg for sk in (2, 3, 4, 6, 8)
            if -(-w.M // c["bm"]) * -(-w.N // c["bn"]) < 2 * h100.sm_count
            and (sk <= 4 or -(-w.M // c["bm"]) * -(-w.N // c["bn"]) * sk <= 2 * h100.sm_count)
            and -(-w.K // (c["swizzle"] // 2)) >= sk
            and workspace_bytes(w.M, w.N, c["bm"], c["bn"], sk) <= hs.WORKSPACE_CAP]
    assert got and sorted(map(key, got)) == sorted(map(key, want))


@pytest.mark.parametrize("shape", ["4096x4096x4096", "8192x8192x4096_bt", "2048x11008x4096_bt", "4096x4096x4096_tt"])
def test_the_space_is_empty_where_the_tiles_fill_the_gpu(t, h100, shape):
    """Every tile leaves two waves or more (2048 x 4096 is empty too: its 256 largest tiles would ask
    for more than the workspace cap), an ordinary empty space: no default, no sanitizer picks."""
    w = Hgemm.from_shape(shape)
    space = t.space(w, h100)
    assert space.size() == 0 and any("fewer output tiles" in rule for rule, _ in space.prune_report())
    with pytest.raises(ConfigError, match="the space is empty"):
        t.default_config(w, h100)
    assert family("hgemm").sanitize_picks(t, w, h100) == []


def test_rules_name_what_they_refuse(t, h100):
    # 4096 x 4096 in 64 x 64 tiles is 4096 tiles: the grid is full without split-K
    big = t.space(Hgemm.from_shape("4096x4096x4096_bt"), h100)
    tiny = {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 4, "group": 8, "split_k": 2}
    assert any("fewer output tiles than 2 x 132" in v for v in big.violations(tiny))
    # K = 96: three k-blocks of 32 (64B swizzle) cannot make four slices; two of 64 not three
    short = t.space(Hgemm.from_shape("128x512x96_bt"), h100)
    c = {"bm": 128, "bn": 64, "consumers": 2, "swizzle": 64, "stages": 4, "group": 1}
    assert short.contains({**c, "split_k": 3})
    assert any("at least one k-block" in v for v in short.violations({**c, "split_k": 4}))
    assert any("at least one k-block" in v for v in short.violations({**c, "swizzle": 128, "split_k": 3}))
    # 200 tiles of 256 x 128 split four ways: 100 MiB of partials
    wide = t.space(Hgemm.from_shape("2048x3200x4096_bt"), h100)
    c = {"bm": 256, "bn": 128, "consumers": 2, "swizzle": 64, "stages": 2, "group": 1, "split_k": 4}
    assert workspace_bytes(2048, 3200, 256, 128, 4) > hs.WORKSPACE_CAP
    assert [v for v in wide.violations(c)] == ["rule broken: split-K workspace (FP32 partials + counters) <= 64 MiB"]
    assert wide.contains({**c, "split_k": 2})


def test_it_refuses_what_wgmma_refuses(t, h100):
    for shape in ["128x4100x4096_bt", "304x272x208_bb"]:       # N % 8 (the TMA store), the blocked layout
        w = Hgemm.from_shape(shape)
        assert t.refuses(w) == HgemmWgmmaTemplate().refuses(w) is not None
        assert "hgemm_wgmma_splitk" not in [x.family for x in family("hgemm").templates_for(w)]
    a100 = dataclasses.replace(h100, cc=(8, 0), name="NVIDIA A100")
    w = Hgemm.from_shape(SMALL)
    assert t.space(w, a100).size() == 0 and t.device_refuses(a100) == HgemmWgmmaTemplate().device_refuses(a100)
    with pytest.raises(Exception, match="sm_90"):
        t.default_config(w, a100)


def test_default_is_wgmma_s_with_two_slices(t, h100):
    for shape in [SMALL, "512x4096x4096_bt", "1024x1024x1024"]:
        w = Hgemm.from_shape(shape)
        assert t.default_config(w, h100) == {**HgemmWgmmaTemplate().default_config(w, h100), "split_k": 2}
    # K = 96 in 64-wide k-blocks holds two slices at most: the nearest config keeps what it can
    w = Hgemm.from_shape("128x512x96_bt")
    d = t.default_config(w, h100)
    assert t.space(w, h100).contains(d) and d["split_k"] == 2 and d["swizzle"] == 128


def test_every_accepted_config_respects_the_rules(t, h100):
    for shape in [SMALL, "136x264x4104_bt", "128x4096x11008_tn_bf16"]:
        w = Hgemm.from_shape(shape)
        for c in t.space(w, h100):
            tiles = -(-w.M // c["bm"]) * -(-w.N // c["bn"])
            assert c["split_k"] in (2, 3, 4, 6, 8) and tiles < 2 * h100.sm_count
            assert c["split_k"] <= 4 or tiles * c["split_k"] <= 2 * h100.sm_count
            assert -(-w.K // (c["swizzle"] // 2)) >= c["split_k"]
            assert workspace_bytes(w.M, w.N, c["bm"], c["bn"], c["split_k"]) <= hs.WORKSPACE_CAP


# -- render, features, build id -------------------------------------------------------------------

def test_render_of_a_split_config(t, h100):
    w = Hgemm.from_shape(SMALL)
    c = {"bm": 128, "bn": 64, "consumers": 2, "swizzle": 128, "stages": 6, "group": 1, "split_k": 3}
    spec = t.render(w, c, h100)
    assert spec.family == "hgemm_wgmma_splitk" and spec.arch == "sm_90a" and spec.cluster is None
    assert spec.name_expression == "hgemm_wgmma_splitk<0, 0, 0, 128, 64, 128, 6, 2, 1, 3>"
    assert spec.source == kernel_source("hgemm_wgmma_splitk.cuh")
    assert spec.source.count(kernel_source("hgemm_wgmma.cuh")) == 1          # the base inlined, once
    assert spec.grid == (132, 1, 1)                                   # 64 tiles x 3 slices, capped
    assert [a.role for a in spec.args] == ["tensormap"] * 3 + ["scalar"] * 3 + ["workspace"]
    ws = spec.args[-1]
    assert ws.ctype == "unsigned char*" and ws.value == 256 + 3 * 64 * 128 * 64 * 4
    assert spec.output_init == "nan"                                  # the last slice stores C whole
    # the same tile of hgemm_wgmma: the same block, shared memory and operands
    wg = HgemmWgmmaTemplate().render(w, {k: v for k, v in c.items() if k != "split_k"}, h100)
    assert (wg.block, wg.smem_bytes, wg.args) == (spec.block, spec.smem_bytes, spec.args[:-1])
    two = t.render(w, {**c, "split_k": 2, "bm": 64, "consumers": 1, "bn": 256, "stages": 3}, h100)
    assert two.grid == (2 * 16 * 2, 1, 1)                             # 2 x 16 tiles x 2 slices: one CTA a unit


def test_workspace_layout_matches_the_kernel():
    """counters padded to 256 bytes, then (SPLIT_K, tiles, BM x BN) floats: SplitKReduce::partial, whose
    tile is the consumers' NV float4s each (MW x ACC / 4 of 128 x CONSUMERS threads: BM x BN / 4)."""
    src = kernel_source("hgemm_wgmma_splitk.cuh")
    assert "((size_t)tiles * 4 + 255) / 256 * 256" in src
    assert "((size_t)slice * tiles + tile) * TILE_VEC" in src and "TILE_VEC = NV * CT" in src
    assert "using Reduce = SplitKReduce<SPLIT_K, 128 * CONSUMERS, MW * ACC / 4, 3>;" in src
    assert workspace_bytes(136, 264, 64, 64, 4) == 256 + 4 * 15 * 64 * 64 * 4
    assert workspace_bytes(128, 4096, 128, 64, 2) == 256 + 2 * 64 * 128 * 64 * 4


def test_the_split_k_kernel_exits_once_its_stores_have_read_the_staging():
    """Its consumers' last wait is on the TMA stores' reads of shared memory (wait_group.read), not
    their global writes, which the grid's completion orders (0.5-0.7 us a short split-K GEMM on the
    H100); the producer's slot bytes follow hgemm_wgmma's A rows (a_rows(M))."""
    src = kernel_source("hgemm_wgmma_splitk.cuh")      # HgemmWgmma's SPLIT_K policy
    assert "if constexpr (SPLIT_K == 1) bulk_wait_all();\n      else bulk_wait_read_all();" in src
    assert "return B_SLOT + a_rows(M) * SWZ;" in src


def test_features_carry_split_k_and_its_waves(t, h100):
    p = Hgemm.from_shape(SMALL).params
    c = {"bm": 128, "bn": 64, "consumers": 2, "swizzle": 128, "stages": 6, "group": 1}
    plain = HgemmWgmmaTemplate().derived_features(c, p, h100)
    assert "split_k" not in plain and plain["waves"] == 64 / 132
    f = t.derived_features({**c, "split_k": 4}, p, h100)
    assert f["split_k"] == 4 and f["work_units"] == 256 and f["waves"] == 256 / 132
    assert f["k_blocks_per_unit"] == 64 / 4 and f["workspace_bytes"] == workspace_bytes(128, 4096, 128, 64, 4)
    assert {k: v for k, v in f.items() if k in plain} == {**plain, "waves": 256 / 132}


def test_every_config_has_the_same_features(t, h100):
    """One set of feature names over every config and shape: the cost model's rows of this template
    are all of one length."""
    names = set()
    for shape in [SMALL, "512x4096x11008_bt", "136x264x4104_bt", "1024x1024x1024_bf16"]:
        w = Hgemm.from_shape(shape)
        names |= {tuple(sorted(t.derived_features(c, w.params, h100))) for c in t.space(w, h100)}
    assert len(names) == 1 and {"split_k", "work_units", "k_blocks_per_unit", "workspace_bytes"} <= set(*names)


@pytest.mark.parametrize("switch", SWITCH)
def test_build_id_is_the_split_k_header_s(t, monkeypatch, switch):
    setenv(monkeypatch, switch)
    s = HgemmWgmmaSplitKTemplate()
    assert s.source_hash() == hashlib.sha256(kernel_source("hgemm_wgmma_splitk.cuh").encode()).hexdigest()
    assert source_id(s).split("/")[0] == s.source_hash()[:12] != source_id(HgemmWgmmaTemplate()).split("/")[0]
    assert build_id(s) != build_id(HgemmWgmmaTemplate())


def test_build_id_follows_both_headers(monkeypatch):
    """The split-K header inlines hgemm_wgmma.cuh (kernel_source), so an edit to either stales it."""
    import autosched.templates.base as base
    real = base.resources.files("autosched.kernels")

    class Edited:
        def __init__(self, name):
            self.name = name

        def joinpath(self, f):
            text = real.joinpath(f).read_text()
            return types.SimpleNamespace(read_text=lambda: text + ("\n// an edit\n" if f == self.name else ""))
    before = HgemmWgmmaSplitKTemplate().source_hash()
    for name in ("hgemm_wgmma.cuh", "hgemm_wgmma_splitk.cuh"):
        monkeypatch.setattr(base.resources, "files", lambda pkg, name=name: Edited(name))
        assert HgemmWgmmaSplitKTemplate().source_hash() != before, name
    monkeypatch.undo()
    assert HgemmWgmmaSplitKTemplate().source_hash() == before


def test_sanitizer_picks_put_the_deepest_split_first(t, h100):
    w = Hgemm.from_shape("300x264x200")
    picks = family("hgemm").sanitize_picks(t, w, h100)
    space = t.space(w, h100)
    assert all(space.contains(c) for c in picks)
    assert [c["split_k"] for c in picks[:2]] == [8, 8] and picks[0] != picks[1]
    smem = lambda c: smem_bytes(c["bm"], c["bn"], c["swizzle"], c["stages"])  # noqa: E731
    fours = [c for c in space if c["split_k"] == 8]
    assert picks[0]["bm"] * picks[0]["bn"] == min(c["bm"] * c["bn"] for c in fours)
    assert smem(picks[1]) == max(map(smem, fours))
    assert len({key(c) for c in picks}) == len(picks)


# -- tuning and the cost model over templates, an empty space among them ---------------------------

def _fake_samples(t, shape, device, n, seed):
    """(config, params, us) of n configs of `t` on `shape`: times from a smooth made-up function."""
    w = Hgemm.from_shape(shape)
    cfgs = random.Random(seed).sample(t.space(w, device).enumerate(), n)
    return [(c, w.params, 10.0 + c["bm"] / c.get("split_k", 1) + c["stages"]) for c in cfgs]


@pytest.mark.parametrize("shape", [SMALL, "4096x4096x4096"])
def test_cost_model_fits_recordings_and_split_k_configs_together(h100, shape):
    """The model-guided tuner's featurizer over the hgemm templates: rows of the shipped hgemm_wgmma
    recordings (several shapes) and of split-K configs of other shapes are all of one length, and a
    fit and a prediction go through, also where split-K has no config (4096^3)."""
    from autosched.search.cost_model import CostModel, Featurizer
    from autosched.search.transfer import recorded_samples, recordings_of
    from autosched.tuner import SearchSpace
    w = Hgemm.from_shape(shape)
    wg, sk = HgemmWgmmaTemplate(), HgemmWgmmaSplitKTemplate()
    search = SearchSpace(w, [wg, sk], h100)
    assert search.empty == ([] if shape == SMALL else ["hgemm_wgmma_splitk"])
    recs = recordings_of(h100.key, "hgemm_wgmma")
    assert len(recs) == 18
    samples = [(search.join(wg, c), p, us) for c, p, us in recorded_samples(recs[:6])]
    split = _fake_samples(sk, "512x4096x4096_bt", h100, 40, 1) + _fake_samples(sk, "136x264x4104_bt", h100, 40, 2)
    samples += [({"template": "hgemm_wgmma_splitk", **c}, p, us) for c, p, us in split
                if "hgemm_wgmma_splitk" not in search.empty]
    f = Featurizer(search.space, w.params, search.derived_features)
    rows = f.matrix([c for c, _, _ in samples[:50]] + [c for c, _, _ in samples[-50:]])
    assert rows.ndim == 2 and np.isfinite(rows).all()
    model = CostModel(f, seed=0)
    assert model.fit(samples)
    pred = model.predict(search.space.enumerate())
    assert len(pred) == search.size() and np.isfinite(pred).all()


def test_split_k_alone_fits_across_shapes(t, h100):
    from autosched.search.cost_model import CostModel, Featurizer
    w = Hgemm.from_shape(SMALL)
    f = Featurizer(t.space(w, h100), w.params, lambda c, p: t.derived_features(c, p, h100))
    samples = _fake_samples(t, "512x4096x4096_bt", h100, 40, 1) + _fake_samples(t, "1024x1024x1024", h100, 40, 3)
    model = CostModel(f)
    assert model.fit(samples)
    assert np.isfinite(model.predict(t.space(w, h100).enumerate())).all()


def test_a_gpu_tuning_of_every_template_passes_over_the_empty_split_k_space(h100, tmp_path):
    """On a (stub) GPU runner at 4096^3: split-K has no config, so the union searches the others and
    nothing of split-K is rendered or measured."""
    from autosched.database import Database
    from autosched.measure.result import Measurement, Status
    from autosched.measure.runner import Runner
    from autosched.tuner import tune

    class Stub(Runner):
        name, partial, needs_binary, device_info = "stub", False, False, h100

        def __init__(self):
            self.seen = []

        def build_id(self, template):
            return build_id(template)

        def observe(self, *a):
            pass

        def measure_stream(self, items):
            for i, spec, _ in items:
                self.seen.append(spec.family)
                yield i, Measurement(Status.OK, min_us=99.0, median_us=100.0 + len(self.seen), source="stub")
    w = Hgemm.from_shape("4096x4096x4096")
    runner = Stub()
    with Database(tmp_path / "db") as db:
        res = tune(w, registry.templates_for(w), runner, db, strategy="model", trials=12, seed=1)
    assert res.measured_now == 12 and "hgemm_wgmma_splitk" in res.template.split("+")
    assert runner.seen and "hgemm_wgmma_splitk" not in runner.seen


# -- NVRTC -----------------------------------------------------------------------------------

def _static_assert_fails(spec, expr):
    b = compile_spec(dataclasses.replace(spec, name_expression=expr))
    return (not b.ok) and "static assertion failed" in b.log


def test_static_assert_agrees_with_the_knob(t, h100):
    """The knob's values (2, 3, 4, 6, 8) compile; 1 (hgemm_wgmma's), 0 and 9 fail the static_assert.  5 and 7
    compile but are left out of the knob (a smaller space; 6 and 8 cover deep splits)."""
    w = Hgemm.from_shape(SMALL)
    # 16 tiles of 128 x 256: the deep splits fill the GPU without passing two waves
    c = {"bm": 128, "bn": 256, "consumers": 2, "swizzle": 128, "stages": 3, "group": 1, "split_k": 2}
    spec = t.render(w, c, h100)
    stem = spec.name_expression.rsplit(",", 1)[0]
    space = t.space(w, h100)
    for k in (0, 1, 2, 3, 4, 6, 8, 9):
        accepted = space.contains({**c, "split_k": k})
        fails = _static_assert_fails(spec, f"{stem}, {k}>")
        assert accepted != fails, (k, accepted, fails)


def test_extreme_configs_compile_for_sm90a_without_spills(t, h100, tmp_path):
    """Per shape: the most shared memory, the most accumulators a thread, the deepest split on the
    smallest tile, and one at random."""
    rng = random.Random(11)
    specs = []
    for shape in ["136x264x4104_bt", SMALL, "128x4096x11008_tn_bf16", "296x264x200_tt", "128x1032x504_nn_bf16"]:
        w = Hgemm.from_shape(shape)
        cfgs = t.space(w, h100).enumerate()
        smem = lambda c: smem_bytes(c["bm"], c["bn"], c["swizzle"], c["stages"])  # noqa: E731
        picks = [max(cfgs, key=smem), max(cfgs, key=lambda c: (m_blocks(c["bm"], c["consumers"]) * c["bn"],
                                                               c["consumers"] == 1)),
                 min((c for c in cfgs if c["split_k"] == max(x["split_k"] for x in cfgs)),
                     key=lambda c: (c["bm"] * c["bn"], c["stages"]))]
        picks += rng.sample(cfgs, 1)
        specs += [t.render(w, c, h100) for c in picks]
    splits = {dict(s.config)["split_k"] for s in specs}
    assert 8 in splits and splits <= {2, 3, 4, 6, 8}
    assert_wgmma_builds_clean(specs, tmp_path, h100)


# -- the "workspace" role --------------------------------------------------------------------

def test_worker_zeroes_one_workspace_per_argument_once():
    from autosched.measure.worker import kernel_arg, zeroed_workspaces
    made, zeroed = [], []

    def allocate(n):
        made.append(n)
        return types.SimpleNamespace(handle=0x1000 * len(made), n=n)
    args = (ArgSpec("A", "tensormap"), ArgSpec("M", "scalar", value=3), ArgSpec("workspace", "workspace", value=4352))
    ws = zeroed_workspaces(args, allocate, lambda buf, n: zeroed.append((buf.handle, n)))
    assert made == [4352] and zeroed == [(0x1000, 4352)] and list(ws) == ["workspace"]
    assert kernel_arg(args[2], None, ws) == np.uint64(0x1000)
    assert zeroed_workspaces(args[:2], allocate, None) == {}
    with pytest.raises(ValueError, match="0 bytes"):
        zeroed_workspaces((ArgSpec("w", "workspace", value=0),), allocate, lambda b, n: None)


def test_export_refuses_a_workspace(h100, tmp_path):
    from autosched.cuda_export import export_cuda
    from autosched.templates import HgemmMmaTemplate
    t = HgemmMmaTemplate()
    w = Hgemm.from_shape("256x256x256")
    spec = t.render(w, t.default_config(w, h100), h100)
    fake = types.SimpleNamespace(family="fake", render=lambda *a: dataclasses.replace(
        spec, args=spec.args + (ArgSpec("workspace", "workspace", value=1024, ctype="unsigned char*"),)))
    with pytest.raises(ValueError, match=re.escape("takes a device workspace (workspace)")):
        export_cuda(w, fake, {}, h100, tmp_path / "k.cu")


def test_the_dynamic_dispatcher_refuses_a_workspace(t, h100):
    """ops.HgemmDispatch launches maps and sizes only: a split-K kernel (never in its dynamic-M
    space) is refused by load() before any build, not launched without its workspace."""
    from autosched.ops.hgemm import HgemmDispatch
    g = HgemmDispatch(4096, 4096, h100, m_max=128, backend="wgmma")
    w = Hgemm.from_shape(SMALL)
    g.specs = lambda: [t.render(w, t.default_config(w, h100), h100)]
    with pytest.raises(ValueError, match="cannot launch kernels that take a workspace"):
        g.load(builder=None)
