"""The wgmma GEMM with ping-pong consumers, hgemm_wgmma_pingpong (kernels/hgemm_wgmma_pingpong.cuh),
as its own template: its switch puts it in the hgemm family or leaves it out; hgemm_wgmma's build id
is not touched; its knobs, rules (a tile's accumulators a consumer thread, two tiles' staging in
shared memory), default, render (the name, 384 threads, its own shared memory, hgemm_wgmma's
tensor-map boxes), features; the static_asserts agree with the rules; NVRTC builds of its corner
configs are clean; the sanitizer's picks."""

import dataclasses
import hashlib

import pytest

import autosched.templates.hgemm_wgmma_pingpong as hp
from autosched import registry
from autosched.build import compile_spec
from autosched.templates import HgemmWgmmaPingpongTemplate, HgemmWgmmaTemplate
from autosched.templates.base import kernel_source
from autosched.workloads import Hgemm

from .wgmma_builds import assert_wgmma_builds_clean

SQUARE = "4096x4096x4096"


@pytest.fixture
def t():
    return HgemmWgmmaPingpongTemplate()


def test_switch_puts_the_template_last_and_never_default(monkeypatch):
    names = lambda fams: [x.family for x in fams["hgemm"].templates]  # noqa: E731
    monkeypatch.delenv("AUTOSCHED_WGMMA_PINGPONG", raising=False)
    assert hp.pingpong_enabled() is hp.PINGPONG_VERIFIED
    monkeypatch.setenv("AUTOSCHED_WGMMA_PINGPONG", "0")
    assert "hgemm_wgmma_pingpong" not in names(registry._families())
    monkeypatch.setenv("AUTOSCHED_WGMMA_PINGPONG", "1")
    assert names(registry._families())[-1] == "hgemm_wgmma_pingpong"
    assert registry._families()["hgemm"].templates[-1].default_on(None) is False


def test_hgemm_wgmma_build_id_is_untouched(t):
    base = HgemmWgmmaTemplate()
    assert base.source_hash() == hashlib.sha256(kernel_source("hgemm_wgmma.cuh").encode()).hexdigest()
    assert t.source_hash() == hashlib.sha256(kernel_source("hgemm_wgmma_pingpong.cuh").encode()).hexdigest()
    assert t.source_hash() != base.source_hash()
    # the variant inlines hgemm_wgmma.cuh (its producer, raster and wgmma wrappers)
    assert kernel_source("hgemm_wgmma.cuh") in kernel_source("hgemm_wgmma_pingpong.cuh")


def test_knobs_rules_and_default(t, h100):
    w = Hgemm.from_shape(SQUARE)
    space = t.space(w, h100)
    assert space.names == ["bm", "bn", "swizzle", "stages", "group"]
    d = t.default_config(w, h100)
    assert d == {"bm": 128, "bn": 128, "swizzle": 128, "stages": 5, "group": 8}
    # a consumer thread holds (BM / 64) x BN / 2 accumulators: 128 x 256 is two tiles' worth of a thread
    assert not space.contains({**d, "bn": 256, "stages": 2}) and space.contains({**d, "bm": 64, "bn": 256, "stages": 4})
    # two BM x BN stagings: 128 x 128 of 128B swizzle fits 5 slots, not 6 (hgemm_wgmma's one staging fits 6)
    assert not space.contains({**d, "stages": 6})
    assert HgemmWgmmaTemplate().space(w, h100).contains({**d, "consumers": 1, "stages": 6})
    assert all(hp.smem_bytes(c["bm"], c["bn"], c["swizzle"], c["stages"]) <= 232448 for c in space)
    # hgemm_wgmma's rules on M carry over: no 128-row tile for 64 rows
    assert {c["bm"] for c in t.space(Hgemm.from_shape("64x4096x4096_bt"), h100)} == {64}


def test_render_of_the_default(t, h100):
    w = Hgemm.from_shape(SQUARE)
    d = t.default_config(w, h100)
    spec = t.render(w, d, h100)
    assert spec.name_expression == "hgemm_wgmma_pingpong<0, 0, 1, 128, 128, 128, 5, 8>"
    assert spec.block == (384, 1, 1) and spec.grid == (132, 1, 1) and spec.family == "hgemm_wgmma_pingpong"
    assert spec.smem_bytes == hp.smem_bytes(128, 128, 128, 5) == 5 * 32768 + 65536 + 12 * 8 + 1024
    assert t.derived_features(d, w.params, h100)["smem_bytes"] == spec.smem_bytes
    # the tensor maps of hgemm_wgmma's one-consumer tile of the same size
    same = HgemmWgmmaTemplate().render(w, {**d, "consumers": 1}, h100)
    assert [a.params() for a in spec.args] == [a.params() for a in same.args]
    # fewer tiles than SMs: a CTA per tile (consumer 1 of each has none)
    ws = Hgemm.from_shape("256x1024x512")
    small = t.render(ws, t.default_config(ws, h100), h100)
    assert small.name_expression.startswith("hgemm_wgmma_pingpong<0, 0, 1, 128, 128,") and small.grid == (16, 1, 1)


def test_static_asserts_agree_with_the_rules(t, h100):
    """128 x 256 (the accumulator rule's refusal) and 6 slots of 128 x 128 (the shared-memory rule's)
    fail the .cuh's static_asserts; the configs beside them compile."""
    w = Hgemm.from_shape(SQUARE)
    ok = t.render(w, {"bm": 128, "bn": 128, "swizzle": 128, "stages": 5, "group": 8}, h100)
    assert compile_spec(ok).ok
    for bad in ("hgemm_wgmma_pingpong<0, 0, 1, 128, 256, 128, 2, 8>", "hgemm_wgmma_pingpong<0, 0, 1, 128, 128, 128, 6, 8>"):
        assert not compile_spec(dataclasses.replace(ok, name_expression=bad)).ok, bad


def test_corner_configs_compile_for_sm90a_without_spills(t, h100, tmp_path):
    specs = []
    for shape in [SQUARE, "300x264x200", "296x264x200_tn_bf16", "200x392x72_tt", "128x4096x4096_bt"]:
        w = Hgemm.from_shape(shape)
        cfgs = registry._hgemm_picks(t, w, h100)
        assert len(cfgs) >= 4
        specs += [t.render(w, c, h100) for c in cfgs[:4]]
    assert_wgmma_builds_clean(specs, tmp_path, h100)
