"""The wgmma GEMM with a consumer schedule and an epilogue staging to choose, hgemm_wgmma_sched
(kernels/hgemm_wgmma_sched.cuh), as its own template: its switch puts it in the hgemm family or leaves
it out; hgemm_wgmma's build id is not touched; its knobs, rules (tile heights per schedule, a
consumer's accumulators, hgemm_wgmma's own kernel left out, the stagings in shared memory), default,
render (the name, 384 threads, its own shared memory, hgemm_wgmma's tensor-map boxes), features; the
static_asserts agree with the rules; NVRTC builds of its corner configs are clean."""

import dataclasses
import hashlib

import pytest

import autosched.templates.hgemm_wgmma_sched as hs
from autosched import knobs
from autosched import registry
from autosched.build import compile_spec
from autosched.templates import HgemmWgmmaSchedTemplate, HgemmWgmmaTemplate
from autosched.templates.base import kernel_source
from autosched.templates.hgemm_wgmma import smem_bytes as wgmma_smem
from autosched.workloads import Hgemm

from .wgmma_builds import assert_wgmma_builds_clean

SQUARE = "4096x4096x4096"
DEFAULT = {"bm": 128, "bn": 256, "swizzle": 128, "stages": 4, "group": 8, "schedule": "cooperative", "epi_boxes": 2}


@pytest.fixture
def t():
    return HgemmWgmmaSchedTemplate()


def test_switch_puts_the_template_last_and_never_default(monkeypatch):
    names = lambda fams: [x.family for x in fams["hgemm"].templates]  # noqa: E731
    monkeypatch.delenv("AUTOSCHED_WGMMA_SCHED", raising=False)
    assert hs.sched_enabled() is knobs.WGMMA_SCHED.default
    monkeypatch.setenv("AUTOSCHED_WGMMA_SCHED", "0")
    assert "hgemm_wgmma_sched" not in names(registry._families())
    monkeypatch.setenv("AUTOSCHED_WGMMA_SCHED", "1")
    monkeypatch.setenv("AUTOSCHED_WGMMA_SWAP", "0")
    assert names(registry._families())[-1] == "hgemm_wgmma_sched"
    assert registry._families()["hgemm"].templates[-1].default_on(None) is False


def test_hgemm_wgmma_build_id_is_untouched(t):
    base = HgemmWgmmaTemplate()
    assert base.source_hash() == hashlib.sha256(kernel_source("hgemm_wgmma.cuh").encode()).hexdigest()
    assert t.source_hash() == hashlib.sha256(kernel_source("hgemm_wgmma_sched.cuh").encode()).hexdigest()
    assert t.source_hash() != base.source_hash()
    # the variant inlines hgemm_wgmma.cuh (its raster, descriptors and wgmma wrappers)
    assert kernel_source("hgemm_wgmma.cuh") in kernel_source("hgemm_wgmma_sched.cuh")


def test_knobs_rules_and_default(t, h100):
    w = Hgemm.from_shape(SQUARE)
    space = t.space(w, h100)
    assert space.names == ["bm", "bn", "swizzle", "stages", "group", "schedule", "epi_boxes"]
    assert t.default_config(w, h100) == DEFAULT
    # what the box ring is for: 128 x 256 of 128B swizzle holds 4 slots; a whole-share staging 3
    assert wgmma_smem(128, 256, 128, 4) > 232448 >= hs.smem_bytes(**{k: DEFAULT[k] for k in
                                                                     ("bm", "bn", "swizzle", "stages", "schedule", "epi_boxes")})
    assert not space.contains({**DEFAULT, "stages": 5})
    # cooperative with a whole-share staging is hgemm_wgmma's own kernel
    assert not space.contains({**DEFAULT, "stages": 3, "epi_boxes": 0})
    pp = {**DEFAULT, "bm": 128, "bn": 128, "schedule": "pingpong", "stages": 5}
    assert space.contains(pp) and space.contains({**pp, "epi_boxes": 0}) and not space.contains({**pp, "stages": 6, "epi_boxes": 0})
    # tile heights: a ping-pong consumer's whole tile (64, 128), a cooperative pair's halves (128, 256)
    assert {c["bm"] for c in space if c["schedule"] == "pingpong"} == {64, 128}
    assert {c["bm"] for c in space if c["schedule"] == "cooperative"} == {128, 256}
    # a consumer thread holds (its m64 blocks) x BN / 2 accumulators
    assert not space.contains({**pp, "bn": 256}) and not space.contains({**DEFAULT, "bm": 256})
    assert all(t.smem(c) <= 232448 for c in space)
    # hgemm_wgmma's rules on M carry over: no tile taller than 64 rows needs
    assert {c["bm"] for c in t.space(Hgemm.from_shape("64x4096x4096_bt"), h100)} == {64}


@pytest.mark.parametrize("shape, bn, stages", [
    (SQUARE, 256, 4), ("8192x8192x8192", 256, 4), ("2048x4096x4096_bt", 256, 4),
    # 11008 = 65.5 x 168: 512 rows make 264 tiles, two full waves (128 x 256: 172 tiles, 1.3 waves)
    ("512x11008x4096_bt", 168, 4), ("2048x11008x4096_bt", 168, 4),
    # 168 only for a K-major B; 4096 columns at 512 rows fill one wave with 128 x 128 (128 tiles)
    ("512x11008x4096", 192, 4), ("512x4096x11008_bt", 128, 6)])
def test_default_width_follows_the_wave_model(t, h100, shape, bn, stages):
    d = t.default_config(Hgemm.from_shape(shape), h100)
    assert (d["schedule"], d["bm"], d["bn"], d["stages"], d["epi_boxes"]) == ("cooperative", 128, bn, stages, 2)


def test_render_of_the_default(t, h100):
    w = Hgemm.from_shape(SQUARE)
    spec = t.render(w, DEFAULT, h100)
    assert spec.name_expression == "hgemm_wgmma_sched<0, 0, 1, 128, 256, 128, 4, 8, 0, 2>"
    assert spec.block == (384, 1, 1) and spec.grid == (132, 1, 1) and spec.family == "hgemm_wgmma_sched"
    assert spec.smem_bytes == 4 * 384 * 128 + 2 * 2 * 8192 + 10 * 8 + 1024
    f = t.derived_features(DEFAULT, w.params, h100)
    assert f["smem_bytes"] == spec.smem_bytes and f["pingpong"] == 0 and f["epi_boxes"] == 2
    # the tensor maps of hgemm_wgmma's tile of the same size
    same = HgemmWgmmaTemplate().render(w, {**{k: DEFAULT[k] for k in ("bm", "bn", "swizzle", "group")},
                                           "stages": 3, "consumers": 2}, h100)
    assert [a.params() for a in spec.args] == [a.params() for a in same.args]
    pp = t.render(w, {**DEFAULT, "bm": 128, "bn": 128, "schedule": "pingpong", "stages": 5, "epi_boxes": 0}, h100)
    assert pp.name_expression == "hgemm_wgmma_sched<0, 0, 1, 128, 128, 128, 5, 8, 1, 0>"
    assert pp.smem_bytes == 5 * 256 * 128 + 2 * 128 * 128 * 2 + 12 * 8 + 1024


def test_static_asserts_agree_with_the_rules(t, h100):
    """Refusals of the rules (a ping-pong 128 x 256: accumulators; a cooperative 64-row tile; 5 slots
    of 128 x 256: shared memory) fail the .cuh's static_asserts; the default compiles."""
    ok = t.render(Hgemm.from_shape(SQUARE), DEFAULT, h100)
    assert compile_spec(ok).ok
    for bad in ("hgemm_wgmma_sched<0, 0, 1, 128, 256, 128, 2, 8, 1, 2>",
                "hgemm_wgmma_sched<0, 0, 1, 64, 128, 128, 2, 8, 0, 2>",
                "hgemm_wgmma_sched<0, 0, 1, 128, 256, 128, 5, 8, 0, 2>"):
        assert not compile_spec(dataclasses.replace(ok, name_expression=bad)).ok, bad


def test_corner_configs_compile_for_sm90a_without_spills(t, h100, tmp_path):
    specs = []
    for shape in [SQUARE, "300x264x200", "296x264x200_tn_bf16", "200x392x72_tt", "128x4096x4096_bt"]:
        w = Hgemm.from_shape(shape)
        cfgs = t.sanitizer_picks(w, h100)
        assert len(cfgs) >= 4
        assert {c["schedule"] for c in cfgs} == set(hs.SCHEDULES), shape
        specs += [t.render(w, c, h100) for c in cfgs[:8]]
    assert_wgmma_builds_clean(specs, tmp_path, h100)


def test_bn_168_for_a_k_major_b_with_unswizzled_56_column_output_boxes(t, h100):
    """BN = 168 (two waves of 128 x 168 tiles over 512 x 11008) only where B is stored (N, K); its
    C map boxes 56 x 64 unswizzled, its staging counted in those boxes; the build is clean."""
    w = Hgemm.from_shape("512x11008x4096_bt")
    cfg = {"bm": 128, "bn": 168, "swizzle": 128, "stages": 5, "group": 4, "schedule": "cooperative", "epi_boxes": 2}
    assert t.space(w, h100).contains(cfg)
    assert not any(c["bn"] == 168 for c in t.space(Hgemm.from_shape("512x11008x4096"), h100))
    spec = t.render(w, cfg, h100)
    assert spec.name_expression == "hgemm_wgmma_sched<0, 0, 0, 128, 168, 128, 5, 4, 0, 2>"
    c = dict(spec.args[2].layout_params)
    assert c["box"] == (56, 64) and c["swizzle"] == 0 and c["dims"] == (11008, 512)
    assert spec.smem_bytes == hs.smem_bytes(128, 168, 128, 5, "cooperative", 2) == 5 * 296 * 128 + 2 * 2 * 64 * 56 * 2 + 12 * 8 + 1024
    # a whole share: three 56-column boxes a consumer
    assert hs.smem_bytes(64, 168, 128, 2, "pingpong", 0) == 2 * 232 * 128 + 2 * 3 * 64 * 56 * 2 + 6 * 8 + 1024
    assert compile_spec(spec).ok
