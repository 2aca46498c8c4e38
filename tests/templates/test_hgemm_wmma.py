"""The wmma tensor-core GEMM template (the seed's design): its space and rules, default, render, and
NVRTC builds of sampled and corner configs in every layout and both dtypes (no spills)."""

import random

import pytest

from autosched.build import BuildCache, Builder
from autosched.registry import FAMILIES, templates_for
from autosched.templates import HgemmWmmaTemplate
from autosched.templates.hgemm_wmma import registers_needed, smem_bytes, threads
from autosched.workloads import Hgemm

SHAPES = ("300x264x200", "300x260x200_bt", "304x264x200_tn", "304x260x200_tt", "304x272x208_bb")


@pytest.fixture(scope="module")
def t():
    return HgemmWmmaTemplate()


def _smem(c, w):
    return smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"], w.a_col, w.b_col, w.blocked, c["wm"], c["wn"])


@pytest.mark.parametrize("shape", ["4096x4096x4096", "4096x4096x4096_tn_bf16", "4096x4096x4096_bb"])
def test_space_rules(t, h100, shape):
    w = Hgemm.from_shape(shape)
    assert t.refuses(w) is None and "hgemm_wmma" in [x.family for x in templates_for(w)]
    cfgs = t.space(w, h100).enumerate()
    assert len(cfgs) > 1000
    for c in cfgs:
        n = threads(c["bm"], c["bn"], c["wm"], c["wn"])
        assert 32 <= n <= 1024 and c["bm"] % c["wm"] == 0 and c["bn"] % c["wn"] == 0
        assert c["wm"] * c["wn"] // 32 <= 128
        assert registers_needed(c["wm"], c["wn"]) <= min(255, 65536 // n)
        assert _smem(c, w) <= h100.smem_per_block_optin
    # the blocked layout's tiles are staged whole: no padding
    assert {c["pad"] for c in cfgs} == ({0} if w.blocked else {0, 8, 16})
    assert {c["stages"] for c in cfgs} == {1, 2, 3}


def test_default_and_render(t, h100):
    w = Hgemm.from_shape("4096x4096x4096")
    spec = t.render(w, t.default_config(w, h100), h100)
    assert spec.name_expression == "hgemm_wmma<0, 0, 0, 0, 128, 128, 32, 64, 64, 2, 8>"
    assert spec.grid == (32, 32, 1) and spec.block == (128, 1, 1)
    assert spec.smem_bytes == 2 * 2 * (128 * 40 + 32 * 136)
    assert [a.ctype for a in spec.args[:3]] == ["const half*", "const half*", "half*"]
    # every layout flag and the dtype reach the kernel's arguments; the staging follows the layout
    w = Hgemm.from_shape("304x260x200_tt_bf16")
    spec = t.render(w, t.default_config(w, h100), h100)
    assert spec.name_expression == "hgemm_wmma<1, 1, 1, 0, 128, 128, 32, 64, 64, 2, 8>"
    assert spec.grid == (3, 3, 1) and spec.smem_bytes == 2 * 2 * (32 * 136 + 128 * 40)
    assert [a.ctype for a in spec.args[:3]] == ["const __nv_bfloat16*", "const __nv_bfloat16*", "__nv_bfloat16*"]
    w = Hgemm.from_shape("304x272x208_bb")
    spec = t.render(w, t.default_config(w, h100), h100)
    assert spec.name_expression == "hgemm_wmma<0, 0, 0, 1, 128, 128, 32, 64, 64, 2, 0>"
    assert spec.smem_bytes == 2 * 2 * (128 * 32 + 32 * 128)
    # the epilogue's per-warp scratch outgrows a small ring: 16 warps x 1 KB
    w = Hgemm.from_shape("4096x4096x4096")
    c = {"bm": 64, "bn": 64, "wm": 16, "wn": 16, "bk": 16, "stages": 1, "pad": 0}
    assert t.render(w, c, h100).smem_bytes == 16 * 1024 > 2 * (64 * 16 + 16 * 64)
    # a skinny M keeps only the smallest block height
    assert {c["bm"] for c in t.space(Hgemm.from_shape("1x4096x4096_bt"), h100).enumerate()} == {32}


def test_refuses_other_workloads(t, h100):
    from autosched.workloads import Sgemm, WorkloadError
    w = Sgemm(64, 64, 64)
    assert "serves hgemm, not sgemm" in t.refuses(w)
    with pytest.raises(WorkloadError, match="hgemm_wmma cannot serve"):
        t.space(w, h100)


def test_sanitizer_picks_are_corners_without_repeats(h100):
    fam = FAMILIES["hgemm"]
    for shape in ("300x264x200", "304x272x208_bb_bf16"):
        w = fam.parse(shape)
        t = next(x for x in fam.templates_for(w) if x.family == "hgemm_wmma")
        picks = fam.sanitize_picks(t, w, h100)
        assert len(picks) >= 5 and all(t.space(w, h100).contains(c) for c in picks)
        assert all(c not in picks[:i] for i, c in enumerate(picks))
        cfgs = t.space(w, h100).enumerate()
        assert picks[0]["bm"] * picks[0]["bn"] == min(c["bm"] * c["bn"] for c in cfgs)
        assert _smem(picks[1], w) == max(_smem(c, w) for c in cfgs)


def test_sampled_and_corner_configs_compile_without_spills(t, h100, tmp_path):
    """Every layout x dtype: the default, the corners (deepest ring, largest warp tile, smallest
    block, single buffer) and two random configs build for sm_90 with no spills."""
    rng = random.Random(7)
    specs = []
    for shape in SHAPES:
        for dtype in ("fp16", "bf16"):
            w = Hgemm.from_shape(shape, dtype=dtype)
            cfgs = t.space(w, h100).enumerate()
            corners = [max(cfgs, key=lambda c: _smem(c, w)), max(cfgs, key=lambda c: (c["wm"] * c["wn"], c["wm"])),
                       min(cfgs, key=lambda c: c["bm"] * c["bn"]),
                       max((c for c in cfgs if c["stages"] == 1), key=lambda c: c["bm"] * c["bn"])]
            specs += [t.render(w, c, h100) for c in corners + rng.sample(cfgs, 2) + [t.default_config(w, h100)]]
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        for spec, binary in zip(specs, b.build_many(specs)):
            assert binary.ok, (spec.name_expression, binary.error)
            assert binary.cubin[:4] == b"\x7fELF"
            assert binary.resources.spill_stores == 0, (spec.name_expression, binary.resources)
            assert binary.resources.registers <= 255
