"""Split-K of the wgmma GEMM (kernels/hgemm_wgmma_splitk.cuh): the switch leaves everything as it
was when off; when on, the knob's rules, its features, the rendered kernel and its workspace
argument, the static_asserts agreeing with the Python rules, NVRTC builds without spills; and the
"workspace" ArgSpec role where launches are assembled."""

import dataclasses
import hashlib
import random
import re
import types

import numpy as np
import pytest

import autosched.templates.hgemm_wgmma as hw
from autosched.build import BuildCache, Builder, build_id, compile_spec
from autosched.registry import family
from autosched.templates import HgemmWgmmaTemplate
from autosched.templates.base import ArgSpec, kernel_source
from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate, workspace_bytes
from autosched.workloads import Hgemm

SMALL = "128x4096x4096_bt"      # 64 tiles of 128 x 64: the prefill shape split-K is for
DEFAULT = {"bm": 128, "bn": 256, "consumers": 2, "swizzle": 128, "stages": 3, "group": 8}


@pytest.fixture
def off(monkeypatch):
    monkeypatch.delenv("AUTOSCHED_WGMMA_SPLIT_K", raising=False)
    monkeypatch.setattr(hw, "SPLIT_K_VERIFIED", False)
    return HgemmWgmmaTemplate()


@pytest.fixture
def on(monkeypatch):
    monkeypatch.setenv("AUTOSCHED_WGMMA_SPLIT_K", "1")
    return HgemmWgmmaTemplate()


def test_switch_reads_the_constant_and_the_environment(monkeypatch):
    monkeypatch.delenv("AUTOSCHED_WGMMA_SPLIT_K", raising=False)
    assert hw.split_k_enabled() is hw.SPLIT_K_VERIFIED is False
    for value, want in [("1", True), ("0", False), ("", False), ("yes", True)]:
        monkeypatch.setenv("AUTOSCHED_WGMMA_SPLIT_K", value)
        assert hw.split_k_enabled() is want


@pytest.mark.parametrize("shape", [SMALL, "4096x4096x4096_bt", "136x264x4104_bt", "296x264x200_tn_bf16"])
def test_off_changes_nothing(off, h100, shape):
    w = Hgemm.from_shape(shape)
    space = off.space(w, h100)
    assert "split_k" not in space.names
    d = off.default_config(w, h100)
    assert "split_k" not in d
    spec = off.render(w, d, h100)
    assert spec.source == kernel_source("hgemm_wgmma.cuh")
    assert spec.name_expression.startswith("hgemm_wgmma<") and spec.name_expression.count(",") == 8
    assert [a.role for a in spec.args] == ["tensormap"] * 3 + ["scalar"] * 3
    assert off.source_hash() == hashlib.sha256(kernel_source("hgemm_wgmma.cuh").encode()).hexdigest()
    with pytest.raises(Exception, match="unknown knobs"):
        off.render(w, {**d, "split_k": 2}, h100)


@pytest.mark.parametrize("shape", [SMALL, "4096x4096x4096_bt", "296x264x200_tn_bf16"])
def test_on_keeps_every_split_k_1_config_as_it_was(off, h100, shape, monkeypatch):
    """The configs of the space without the knob are exactly its split_k = 1 configs with it, and
    each renders the same source, entry, grid and arguments."""
    w = Hgemm.from_shape(shape)
    before = off.space(w, h100).enumerate()
    d_before = off.default_config(w, h100)
    specs = {json_key(c): off.render(w, c, h100) for c in random.Random(1).sample(before, 8) + [d_before]}
    monkeypatch.setenv("AUTOSCHED_WGMMA_SPLIT_K", "1")
    on = HgemmWgmmaTemplate()
    after = on.space(w, h100).enumerate()
    assert [{k: v for k, v in c.items() if k != "split_k"} for c in after if c["split_k"] == 1] == before
    assert on.default_config(w, h100) == {**d_before, "split_k": 1}
    for key, old in specs.items():
        new = on.render(w, {**dict(old.config), "split_k": 1}, h100)
        assert (new.source, new.name_expression, new.grid, new.block, new.smem_bytes, new.args) == \
               (old.source, old.name_expression, old.grid, old.block, old.smem_bytes, old.args)


def json_key(c):
    return tuple(sorted(c.items()))


def test_big_shapes_get_no_split(on, h100):
    cfgs = on.space(Hgemm.from_shape("8192x8192x4096_bt"), h100).enumerate()
    assert cfgs and all(c["split_k"] == 1 for c in cfgs)      # every tile choice leaves >= 264 tiles


def test_rules_name_what_they_refuse(on, h100):
    space = on.space(Hgemm.from_shape(SMALL), h100)
    ok = {"bm": 128, "bn": 64, "consumers": 2, "swizzle": 128, "stages": 6, "group": 1, "split_k": 2}
    assert space.contains(ok)
    assert any("not one of" in v for v in space.violations({**ok, "split_k": 5}))
    # 4096 x 4096 in 64 x 64 tiles is 4096 tiles: the grid is full without split-K
    big = on.space(Hgemm.from_shape("4096x4096x4096_bt"), h100)
    tiny = {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 4, "group": 8}
    assert big.contains({**tiny, "split_k": 1})
    assert any("fewer output tiles than 2 x 132" in v for v in big.violations({**tiny, "split_k": 2}))
    # K = 96: three k-blocks of 32 (64B swizzle) cannot make four slices; two of 64 not three
    short = on.space(Hgemm.from_shape("128x512x96_bt"), h100)
    c = {"bm": 128, "bn": 64, "consumers": 2, "swizzle": 64, "stages": 4, "group": 1}
    assert short.contains({**c, "split_k": 3})
    assert any("at least one k-block" in v for v in short.violations({**c, "split_k": 4}))
    assert any("at least one k-block" in v for v in short.violations({**c, "swizzle": 128, "split_k": 3}))
    # 200 tiles of 256 x 256 split four ways: 200 MiB of partials
    wide = on.space(Hgemm.from_shape("2048x6400x4096_bt"), h100)
    c = {"bm": 256, "bn": 256, "consumers": 2, "swizzle": 64, "stages": 2, "group": 1, "split_k": 4}
    assert workspace_bytes(2048, 6400, 256, 256, 4) > hw.WORKSPACE_CAP
    assert any("workspace" in v and "64 MiB" in v for v in wide.violations(c))


def test_every_accepted_config_respects_the_rules(on, h100):
    for shape in [SMALL, "136x264x4104_bt", "128x4096x11008_tn_bf16"]:
        w = Hgemm.from_shape(shape)
        for c in on.space(w, h100):
            tiles = -(-w.M // c["bm"]) * -(-w.N // c["bn"])
            assert c["split_k"] == 1 or tiles < 2 * h100.sm_count
            assert -(-w.K // (c["swizzle"] // 2)) >= c["split_k"]
            assert workspace_bytes(w.M, w.N, c["bm"], c["bn"], c["split_k"]) <= hw.WORKSPACE_CAP


def test_render_of_a_split_config(on, h100):
    w = Hgemm.from_shape(SMALL)
    c = {"bm": 128, "bn": 64, "consumers": 2, "swizzle": 128, "stages": 6, "group": 1, "split_k": 3}
    spec = on.render(w, c, h100)
    assert spec.name_expression == "hgemm_wgmma_splitk<0, 0, 0, 128, 64, 128, 6, 2, 1, 3>"
    assert spec.source == kernel_source("hgemm_wgmma_splitk.cuh")
    assert kernel_source("hgemm_wgmma.cuh") in spec.source          # the base inlined, once
    assert spec.grid == (132, 1, 1)                                   # 64 tiles x 3 slices, capped
    assert [a.role for a in spec.args] == ["tensormap"] * 3 + ["scalar"] * 3 + ["workspace"]
    ws = spec.args[-1]
    assert ws.ctype == "unsigned char*" and ws.value == 256 + 3 * 64 * 128 * 64 * 4
    assert spec.output_init == "nan"                                  # the last slice stores C whole
    two = on.render(w, {**c, "split_k": 2, "bm": 64, "consumers": 1, "bn": 256, "stages": 3}, h100)
    assert two.grid == (2 * 16 * 2, 1, 1)                             # 2 x 16 tiles x 2 slices: one CTA a unit
    assert workspace_bytes(128, 4096, 64, 256, 1) == 0


def test_workspace_layout_matches_the_kernel():
    """counters padded to 256 bytes, then (SPLIT_K, tiles, BM x BN) floats: HgemmWgmmaSplitK::partial."""
    src = kernel_source("hgemm_wgmma_splitk.cuh")
    assert "((size_t)tiles * 4 + 255) / 256 * 256" in src
    assert "((size_t)slice * tiles + tile) * TILE_VEC" in src and "TILE_VEC = BM * BN / 4" in src
    assert workspace_bytes(136, 264, 64, 64, 4) == 256 + 4 * 15 * 64 * 64 * 4
    assert workspace_bytes(128, 4096, 128, 64, 2) == 256 + 2 * 64 * 128 * 64 * 4


def test_features_carry_split_k_and_its_waves(on, off, h100):
    p = Hgemm.from_shape(SMALL).params
    c = {"bm": 128, "bn": 64, "consumers": 2, "swizzle": 128, "stages": 6, "group": 1}
    plain = off.derived_features(c, p, h100)
    assert "split_k" not in plain and plain["waves"] == 64 / 132
    f = on.derived_features({**c, "split_k": 4}, p, h100)
    assert f["split_k"] == 4 and f["work_units"] == 256 and f["waves"] == 256 / 132
    assert f["k_blocks_per_unit"] == 64 / 4 and f["workspace_bytes"] == workspace_bytes(128, 4096, 128, 64, 4)
    assert {k: v for k, v in f.items() if k in plain} == {**plain, "waves": 256 / 132}


def test_build_id_follows_the_split_k_source_only_when_on(off, h100, monkeypatch):
    base = off.source_hash()
    monkeypatch.setenv("AUTOSCHED_WGMMA_SPLIT_K", "1")
    on = HgemmWgmmaTemplate()
    assert on.source_hash() == hashlib.sha256(kernel_source("hgemm_wgmma_splitk.cuh").encode()).hexdigest() != base
    assert build_id(on).split("/")[0] == on.source_hash()[:12]
    # the dynamic-M template (ops.HgemmDispatch) never has the knob: its workspace would follow M
    dyn = HgemmWgmmaDynTemplate()
    assert dyn.source_hash() == base
    assert "split_k" not in dyn.space(Hgemm.from_shape(SMALL), h100).names


def test_sanitizer_picks_put_split_k_4_first(on, h100):
    w = Hgemm.from_shape("300x264x200")
    picks = family("hgemm").sanitize_picks(on, w, h100)
    space = on.space(w, h100)
    assert all(space.contains(c) for c in picks)
    assert [c["split_k"] for c in picks[:2]] == [4, 4] and picks[0] != picks[1]
    assert len({json_key(c) for c in picks}) == len(picks)


# -- NVRTC -----------------------------------------------------------------------------------

def _static_assert_fails(spec, expr):
    b = compile_spec(dataclasses.replace(spec, name_expression=expr))
    return (not b.ok) and "static assertion failed" in b.log


def test_static_assert_agrees_with_the_knob(on, h100):
    """split_k 1..4 (the knob's values) compile; 0 and 5 (which the space refuses) do not."""
    w = Hgemm.from_shape(SMALL)
    c = {"bm": 128, "bn": 64, "consumers": 2, "swizzle": 128, "stages": 6, "group": 1, "split_k": 2}
    spec = on.render(w, c, h100)
    stem = spec.name_expression.rsplit(",", 1)[0]
    space = on.space(w, h100)
    for k in (0, 1, 2, 3, 4, 5):
        accepted = k in hw.SPLIT_K_VALUES and space.contains({**c, "split_k": k})
        fails = _static_assert_fails(spec, f"{stem}, {k}>")
        assert accepted != fails, (k, accepted, fails)


def test_split_configs_compile_for_sm90a_without_spills(on, h100, tmp_path):
    rng = random.Random(11)
    specs = []
    for shape in ["136x264x4104_bt", SMALL, "128x4096x11008_tn_bf16", "296x264x200_tt", "128x1032x504_nn_bf16"]:
        w = Hgemm.from_shape(shape)
        cfgs = [c for c in on.space(w, h100) if c["split_k"] > 1]
        smem = lambda c: hw.smem_bytes(c["bm"], c["bn"], c["swizzle"], c["stages"])  # noqa: E731
        picks = [max(cfgs, key=smem), max(cfgs, key=lambda c: (hw.m_blocks(c["bm"], c["consumers"]) * c["bn"],
                                                               c["consumers"] == 1))]
        picks += rng.sample(cfgs, 2)
        specs += [on.render(w, c, h100) for c in picks]
    assert {dict(s.config)["split_k"] for s in specs} == {2, 3, 4}
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        for spec, binary in zip(specs, b.build_many(specs)):
            assert binary.ok, (spec.name_expression, binary.error)
            r = binary.resources
            assert r.spills == 0 and r.stack_bytes == 0, (spec.name_expression, r)
            assert "Potential Performance Loss" not in binary.log, (spec.name_expression, binary.log)
            assert r.registers * spec.threads <= h100.regs_per_block
            if dict(spec.config)["consumers"] == 2:
                assert 128 * 40 + 256 * 232 <= 384 * r.registers, (spec.name_expression, r)


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
