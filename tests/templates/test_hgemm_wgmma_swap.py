"""The wgmma GEMM with the operands' roles swapped for few rows, hgemm_wgmma_swap
(kernels/hgemm_wgmma_swap.cuh), as its own template: its switch (off until its GPU stage) puts it
last in the hgemm family, never the default; hgemm_wgmma's build id is not touched; it serves the nt
layout only; its knobs, rules (accumulators, tile sizes against M and N, shared memory with the
staging's 1024-byte alignment), default (the narrowest token tile that fills one wave), render (the
name, 256 threads, the tensor maps' boxes), features; the static_asserts agree with the rules; NVRTC
builds of its corner configs are clean."""

import dataclasses
import hashlib

import pytest

import autosched.templates.hgemm_wgmma_swap as hw
from autosched import knobs
from autosched import registry
from autosched.build import compile_spec
from autosched.templates import HgemmWgmmaSwapTemplate, HgemmWgmmaTemplate
from autosched.templates.base import kernel_source
from autosched.workloads import Hgemm

from .wgmma_builds import assert_wgmma_builds_clean

BERT = "112x768x768_bt"


@pytest.fixture
def t():
    return HgemmWgmmaSwapTemplate()


def test_switch_is_on_since_its_gpu_stage_and_puts_the_template_last(monkeypatch):
    names = lambda fams: [x.family for x in fams["hgemm"].templates]  # noqa: E731
    monkeypatch.delenv("AUTOSCHED_WGMMA_SWAP", raising=False)
    assert hw.swap_enabled() is knobs.WGMMA_SWAP.default is True
    assert names(registry._families())[-1] == "hgemm_wgmma_swap"
    monkeypatch.setenv("AUTOSCHED_WGMMA_SWAP", "0")
    assert "hgemm_wgmma_swap" not in names(registry._families())
    monkeypatch.setenv("AUTOSCHED_WGMMA_SWAP", "1")
    assert names(registry._families())[-1] == "hgemm_wgmma_swap"
    assert registry._families()["hgemm"].templates[-1].default_on(None) is False


def test_hgemm_wgmma_build_id_is_untouched(t):
    base = HgemmWgmmaTemplate()
    assert base.source_hash() == hashlib.sha256(kernel_source("hgemm_wgmma.cuh").encode()).hexdigest()
    assert t.source_hash() == hashlib.sha256(kernel_source("hgemm_wgmma_swap.cuh").encode()).hexdigest()
    assert kernel_source("hgemm_wgmma.cuh") in kernel_source("hgemm_wgmma_swap.cuh")
    assert kernel_source("hgemm_wgmma_swap.cuh").count("struct HgemmWgmma {") == 1


@pytest.mark.parametrize("shape", ["112x768x768", "112x768x768_tn", "112x768x768_tt", "112x768x768_nn_bf16"])
def test_it_serves_the_linear_layers_layout_only(t, shape):
    why = t.refuses(Hgemm.from_shape(shape))
    assert why is not None and "K-major" in why
    assert t.refuses(Hgemm.from_shape("112x768x768_bt_bf16")) is None


def test_knobs_rules_and_default(t, h100):
    w = Hgemm.from_shape(BERT)
    space = t.space(w, h100)
    assert space.names == ["bw", "bt", "swizzle", "stages", "split_k", "reduce"]
    # 768 / 64 = 12 weight tiles; 16 tokens a tile make 7 of 112: 84 CTAs, one wave (8: 168, two)
    assert t.default_config(w, h100) == {"bw": 64, "bt": 16, "swizzle": 128, "stages": 12, "split_k": 1, "reduce": "workspace"}
    # no token tile wider than M rounded up to 8 needs; 5 rows take the narrowest only
    assert max(c["bt"] for c in space) == 96                 # 128 would hold 16 rows past 112
    assert {c["bt"] for c in t.space(Hgemm.from_shape("5x264x200_bt"), h100)} == {8}
    # accumulators: two m64 blocks x BT / 2 <= 128
    assert space.contains({"bw": 128, "bt": 96, "swizzle": 128, "stages": 2, "split_k": 1, "reduce": "workspace"})
    big = t.space(Hgemm.from_shape("4096x4096x4096_bt"), h100)
    assert big.contains({"bw": 128, "bt": 128, "swizzle": 32, "stages": 2, "split_k": 1, "reduce": "workspace"})        # 2 x 64: the limit
    assert all(t.smem(c) <= 232448 for c in space)
    # no default needs a second wave where one fits; a large M takes the widest token tile
    assert t.default_config(Hgemm.from_shape("4096x4096x4096_bt"), h100)["bt"] == 128


def test_staging_starts_on_a_1024_byte_boundary():
    # 64B swizzle, BW + BT = 88 rows: a 5-slot ring is 28160 bytes, the staging starts at 28672
    assert hw.smem_bytes(64, 24, 64, 5) == 28672 + 24 * 64 * 2 + 10 * 8 + 1024
    assert hw.smem_bytes(64, 16, 128, 12) == 12 * 80 * 128 + 16 * 128 + 24 * 8 + 1024


def test_render_of_the_default(t, h100):
    w = Hgemm.from_shape(BERT)
    cfg = t.default_config(w, h100)
    spec = t.render(w, cfg, h100)
    assert spec.name_expression == "hgemm_wgmma_swap<0, 64, 16, 128, 12, 1>"
    assert spec.block == (256, 1, 1) and spec.grid == (84, 1, 1) and spec.smem_bytes == t.smem(cfg)
    x, wt, c = (dict(a.layout_params) for a in spec.args[:3])
    assert x["dims"] == (768, 112) and x["box"] == (64, 16) and x["of"] == "input"
    assert wt["dims"] == (768, 768) and wt["box"] == (64, 64)
    assert c["dims"] == (768, 112) and c["box"] == (64, 16) and c["swizzle"] == 128 and c["of"] == "output"
    f = t.derived_features(cfg, w.params, h100)
    assert f["tiles"] == 84 and f["m_used"] == 112 / 112 and f["smem_bytes"] == spec.smem_bytes
    assert f["work_units"] == 84 and f["workspace_bytes"] == 512                # 84 counters, no partials
    # split in 3: 3 x 84 work units over 132 SMs, a third of K's 12 k-blocks each, 3 x 84 partial tiles
    sk = t.derived_features({**cfg, "split_k": 3}, w.params, h100)
    assert (sk["work_units"], sk["waves"], sk["k_blocks_per_unit"]) == (252, 252 / 132, 4.0)
    assert sk["workspace_bytes"] == 512 + 3 * 84 * 64 * 16 * 4
    split = t.render(w, {**cfg, "split_k": 2}, h100)      # 84 tiles leave SMs idle: a split is in the space
    assert split.name_expression == "hgemm_wgmma_swap<0, 64, 16, 128, 12, 2>" and split.grid == (132, 1, 1)
    assert [a.value for a in split.args if a.role == "workspace"] == [512 + 2 * 84 * 64 * 16 * 4]
    # the slices as one cluster: hgemm_wgmma_swap_cluster (cluster dims compiled in), every work unit a CTA
    # (168 > 132 SMs: no persistent loop), counters only in the workspace (never read)
    cl = t.render(w, {**cfg, "split_k": 2, "reduce": "cluster"}, h100)
    assert cl.name_expression == "hgemm_wgmma_swap_cluster<0, 64, 16, 128, 12, 2>" and cl.grid == (168, 1, 1)
    assert [a.value for a in cl.args if a.role == "workspace"] == [512] and cl.cluster is None
    assert t.derived_features({**cfg, "split_k": 2, "reduce": "cluster"}, w.params, h100)["cluster_reduce"] == 1.0
    assert not t.space(w, h100).contains({**cfg, "reduce": "cluster"})   # unsplit: one config, not two
    bf = t.render(Hgemm.from_shape(BERT + "_bf16"), cfg, h100)
    assert bf.name_expression == "hgemm_wgmma_swap<1, 64, 16, 128, 12, 1>"


def test_static_asserts_agree_with_the_rules(t, h100):
    ok = t.render(Hgemm.from_shape(BERT), {"bw": 64, "bt": 16, "swizzle": 128, "stages": 12, "split_k": 1, "reduce": "workspace"}, h100)
    assert compile_spec(ok).ok
    for bad in ("hgemm_wgmma_swap<0, 64, 12, 128, 4, 1>",     # no wgmma N of the file
                "hgemm_wgmma_swap<0, 192, 16, 128, 4, 1>",    # three m64 blocks
                "hgemm_wgmma_swap<0, 64, 16, 128, 17, 1>",    # past the ring's bound
                "hgemm_wgmma_swap<0, 128, 128, 128, 16, 1>",  # shared memory
                "hgemm_wgmma_swap<0, 64, 16, 128, 4, 9>",     # past the split's bound
                "hgemm_wgmma_swap_cluster<0, 64, 16, 128, 4, 1>",  # a cluster of one slice
                "hgemm_wgmma_swap_cluster<0, 128, 128, 32, 2, 2>"):  # a ring short of the partials
        assert not compile_spec(dataclasses.replace(ok, name_expression=bad)).ok, bad
    space = hw.HgemmWgmmaSwapDynTemplate().space(Hgemm.from_shape(BERT), h100)
    assert not space.contains({"bw": 128, "bt": 128, "swizzle": 32, "stages": 2, "split_k": 2, "reduce": "cluster"})
    assert space.contains({"bw": 128, "bt": 128, "swizzle": 32, "stages": 2, "split_k": 2, "reduce": "workspace"})


def test_corner_configs_compile_for_sm90a_without_spills(t, h100, tmp_path):
    specs = []
    for shape in [BERT, "5x264x200_bt", "300x2120x136_bt_bf16", "160x768x3072_bt"]:
        w = Hgemm.from_shape(shape)
        cfgs = t.sanitizer_picks(w, h100)
        assert len(cfgs) >= 4, shape
        specs += [t.render(w, c, h100) for c in cfgs[:6]]
    # every wgmma N of the file
    w = Hgemm.from_shape("300x2120x136_bt")
    specs += [t.render(w, {"bw": 64, "bt": bt, "swizzle": 128, "stages": 4, "split_k": 1, "reduce": "workspace"}, h100) for bt in hw.BT_VALUES]
    # every split, at the widest accumulators (two m64 blocks of 128 tokens) and the narrowest (the
    # dynamic template's space: the static one splits only where the tiles leave SMs idle)
    w = Hgemm.from_shape("160x768x3072_bt")
    specs += [hw.HgemmWgmmaSwapDynTemplate().render(w, {"bw": bw, "bt": bt, "swizzle": 128, "stages": 2, "split_k": sk, "reduce": r}, h100)
              for sk in hw.SPLIT_VALUES[1:] for bw, bt in ((64, 8), (128, 128)) for r in hw.REDUCE_VALUES]
    assert_wgmma_builds_clean(specs, tmp_path, h100)
    assert t.sanitizer_picks(Hgemm.from_shape("300x264x200"), h100) == []
