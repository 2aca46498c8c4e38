"""The wgmma GEMM with two consumers splitting the tile by columns, hgemm_wgmma_nsplit
(kernels/hgemm_wgmma_nsplit.cuh), as its own template: its switch puts it in the hgemm family or
leaves it out; hgemm_wgmma's build id is not touched; its knobs, rules, default, render (the name,
384 threads, hgemm_wgmma's tensor-map boxes), build id and features; the static_asserts agree with
the rules; NVRTC builds of its corner configs are clean; the sanitizer's picks."""

import hashlib

import pytest

import autosched.templates.hgemm_wgmma_nsplit as hn
from autosched import knobs
from autosched import registry
from autosched.build import compile_spec
from autosched.templates import HgemmWgmmaNSplitTemplate, HgemmWgmmaTemplate
from autosched.templates.base import kernel_source
from autosched.templates.hgemm_wgmma import smem_bytes
from autosched.workloads import Hgemm

from .wgmma_builds import assert_wgmma_builds_clean

PREFILL = "128x4096x4096_bt"       # 64 x 64 tiles: 128 CTAs, the layout of cuBLAS's kernel for it


@pytest.fixture
def t():
    return HgemmWgmmaNSplitTemplate()


def test_switch_is_off_until_its_gpu_stage_and_puts_the_template_last(monkeypatch):
    names = lambda fams: [x.family for x in fams["hgemm"].templates]  # noqa: E731
    monkeypatch.delenv("AUTOSCHED_WGMMA_NSPLIT", raising=False)
    assert hn.nsplit_enabled() is knobs.WGMMA_NSPLIT.default
    monkeypatch.setenv("AUTOSCHED_WGMMA_NSPLIT", "0")
    assert "hgemm_wgmma_nsplit" not in names(registry._families())
    monkeypatch.setenv("AUTOSCHED_WGMMA_NSPLIT", "1")
    monkeypatch.setenv("AUTOSCHED_WGMMA_SWAP", "0")
    assert names(registry._families())[-1] == "hgemm_wgmma_nsplit"
    assert registry._families()["hgemm"].templates[-1].default_on(None) is False


def test_hgemm_wgmma_build_id_and_space_are_untouched(t, h100):
    base = HgemmWgmmaTemplate()
    assert base.source_hash() == hashlib.sha256(kernel_source("hgemm_wgmma.cuh").encode()).hexdigest()
    assert t.source_hash() == hashlib.sha256(kernel_source("hgemm_wgmma_nsplit.cuh").encode()).hexdigest()
    assert t.source_hash() != base.source_hash()
    assert "consumers" in base.space(Hgemm.from_shape(PREFILL), h100).names


def test_knobs_rules_and_default(t, h100):
    w = Hgemm.from_shape(PREFILL)
    space = t.space(w, h100)
    assert space.names == ["bm", "bn", "swizzle", "stages", "group"]
    d = t.default_config(w, h100)
    assert d == {"bm": 64, "bn": 64, "swizzle": 128, "stages": 8, "group": 1}
    # a consumer thread holds (BM / 64) x BN / 4 accumulators, and the ring's layout BM x BN / 2 of them
    assert not space.contains({**d, "bm": 128, "bn": 256, "stages": 2}) and space.contains({**d, "bm": 64, "bn": 256, "stages": 2})
    assert all(smem_bytes(c["bm"], c["bn"], c["swizzle"], c["stages"]) <= 232448 for c in space)
    # B stored (K, N) (MN-major): a consumer's half of BN is whole K slices (BK = swizzle / 2) wide
    nn = t.space(Hgemm.from_shape("300x264x200"), h100)
    assert not nn.contains({"bm": 64, "bn": 64, "swizzle": 128, "stages": 2, "group": 1})
    assert nn.contains({"bm": 64, "bn": 64, "swizzle": 64, "stages": 2, "group": 1})
    assert nn.contains({"bm": 64, "bn": 128, "swizzle": 128, "stages": 2, "group": 1})


def test_render_of_the_prefill_default(t, h100):
    w = Hgemm.from_shape(PREFILL)
    d = t.default_config(w, h100)
    spec = t.render(w, d, h100)
    assert spec.name_expression == "hgemm_wgmma_nsplit<0, 0, 0, 64, 64, 128, 8, 1>"
    assert spec.block == (384, 1, 1) and spec.grid == (128, 1, 1) and spec.family == "hgemm_wgmma_nsplit"
    assert spec.smem_bytes == smem_bytes(64, 64, 128, 8) and dict(spec.config) == d
    # the same tensor maps as hgemm_wgmma's one-consumer 64 x 64 tile: A (BK, 64), B (BK, 64), C 64 x 64
    same = HgemmWgmmaTemplate().render(w, {**d, "consumers": 1}, h100)
    assert [a.params() for a in spec.args] == [a.params() for a in same.args]


def test_every_config_has_the_same_features(t, h100):
    w = Hgemm.from_shape(PREFILL)
    names = {tuple(sorted(t.derived_features(c, w.params, h100))) for c in t.space(w, h100)}
    assert len(names) == 1


def test_static_assert_agrees_with_the_accumulator_rule(t, h100):
    """BM 128 x BN 256 (the rule's refusal) fails the .cuh's static_asserts; 64 x 256 compiles."""
    w = Hgemm.from_shape(PREFILL)
    ok = t.render(w, {"bm": 64, "bn": 256, "swizzle": 128, "stages": 2, "group": 1}, h100)
    bad = ok.name_expression.replace("64, 256", "128, 256")
    import dataclasses
    assert compile_spec(ok).ok
    assert not compile_spec(dataclasses.replace(ok, name_expression=bad)).ok


def test_corner_configs_compile_for_sm90a_without_spills(t, h100, tmp_path):
    specs = []
    for shape in [PREFILL, "300x264x200", "296x264x200_tn_bf16", "200x392x72_tt"]:
        w = Hgemm.from_shape(shape)
        cfgs = t.sanitizer_picks(w, h100)
        assert len(cfgs) >= 4
        specs += [t.render(w, c, h100) for c in cfgs[:4]]
    assert_wgmma_builds_clean(specs, tmp_path, h100)
