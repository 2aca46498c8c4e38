"""The mma.sync tensor-core GEMM template: its space and rules, render, and NVRTC builds of sampled
and corner configs in every row layout and both dtypes (no spills)."""

import random

import pytest

from autosched.build import BuildCache, Builder
from autosched.registry import templates_for
from autosched.templates import HgemmMmaTemplate
from autosched.templates.hgemm_mma import registers_needed, smem_bytes, threads
from autosched.workloads import Hgemm

# every hgemm template serves these shapes (split-K too: its space may be empty, that is not a refusal)
HGEMM_TEMPLATES = ["hgemm_mma", "hgemm_wmma", "hgemm_wgmma", "hgemm_wgmma_splitk"]


@pytest.fixture(scope="module")
def t():
    return HgemmMmaTemplate()


def test_space_rules_and_render(t, h100):
    w = Hgemm.from_shape("4096x4096x4096")
    assert templates_for(w)[0].family == "hgemm_mma"
    space = t.space(w, h100)
    cfgs = space.enumerate()
    assert len(cfgs) > 1000
    for c in cfgs:
        n = threads(c["bm"], c["bn"], c["wm"], c["wn"])
        assert 64 <= n <= 1024 and c["bm"] % c["wm"] == 0 and c["bn"] % c["wn"] == 0
        assert registers_needed(c["wm"], c["wn"]) <= min(255, 65536 // n)
        assert smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"], 0) <= h100.smem_per_block_optin
    d = t.default_config(w, h100)
    spec = t.render(w, d, h100)
    assert spec.name_expression == "hgemm_mma<0, 128, 128, 32, 64, 64, 3, 8>"
    assert spec.grid == (32, 32, 1) and spec.block == (128, 1, 1)
    assert spec.smem_bytes == 2 * 3 * (128 * 40 + 32 * 136)
    # a skinny M keeps only the smallest block height
    assert {c["bm"] for c in t.space(Hgemm.from_shape("1x4096x4096_bt"), h100).enumerate()} == {32}


def test_sampled_and_corner_configs_compile_without_spills(t, h100, tmp_path):
    rng = random.Random(5)
    specs = []
    for shape in ("100x72x40_bt", "4096x4096x4096", "64x11008x4096_bt", "104x72x40_tn", "104x70x40_tt_bf16",
                  "100x72x40_bf16", "4096x4096x4096_tn_bf16"):
        w = Hgemm.from_shape(shape)
        cfgs = t.space(w, h100).enumerate()
        corners = [max(cfgs, key=lambda c: c["bm"] * c["bn"] * c["stages"] * c["bk"]),
                   max(cfgs, key=lambda c: c["wm"] * c["wn"]), min(cfgs, key=lambda c: c["bm"] * c["bn"])]
        specs += [t.render(w, c, h100) for c in rng.sample(cfgs, 2) + corners + [t.default_config(w, h100)]]
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        for spec, binary in zip(specs, b.build_many(specs)):
            assert binary.ok, binary.error
            assert binary.cubin[:4] == b"\x7fELF"
            assert binary.resources.spill_stores == 0, (spec.name_expression, binary.resources)


@pytest.mark.parametrize("shape", ["4096x4096x4096_bb", "4096x4096x4096_bb_bf16"])
def test_refuses_the_blocked_layout(t, h100, shape):
    from autosched.workloads import WorkloadError
    w = Hgemm.from_shape(shape)
    assert "not the blocked 16x16 tiles (bb; hgemm_wmma serves them)" in t.refuses(w)
    with pytest.raises(WorkloadError, match="hgemm_mma cannot serve"):
        t.space(w, h100)
    assert [x.family for x in templates_for(w)] == ["hgemm_wmma"]


@pytest.mark.parametrize("shape, expr, smem", [
    # A stored (K, M) is staged [BK][BM + PAD]; BF16 changes neither the tiles nor the shared memory
    ("4096x4096x4096_tn", "hgemm_mma<0, 128, 128, 32, 64, 64, 3, 8, 1, 0>", 2 * 3 * (32 * 136 + 32 * 136)),
    ("4096x4096x4096_tt", "hgemm_mma<1, 128, 128, 32, 64, 64, 3, 8, 1, 0>", 2 * 3 * (32 * 136 + 128 * 40)),
    ("4096x4096x4096_bf16", "hgemm_mma<0, 128, 128, 32, 64, 64, 3, 8, 0, 1>", 2 * 3 * (128 * 40 + 32 * 136)),
    ("4096x4096x4096_tt_bf16", "hgemm_mma<1, 128, 128, 32, 64, 64, 3, 8, 1, 1>", 2 * 3 * (32 * 136 + 128 * 40)),
])
def test_serves_a_col_and_bf16(t, h100, shape, expr, smem):
    w = Hgemm.from_shape(shape)
    assert t.refuses(w) is None and [x.family for x in templates_for(w)] == HGEMM_TEMPLATES + ["hgemm_wgmma_cluster", "hgemm_wgmma_sched"]
    spec = t.render(w, t.default_config(w, h100), h100)
    assert (spec.name_expression, spec.smem_bytes) == (expr, smem)
    elem = "__nv_bfloat16" if w.bf16 else "half"
    assert [a.ctype for a in spec.args[:3]] == [f"const {elem}*", f"const {elem}*", f"{elem}*"]
    for c in t.space(w, h100).enumerate()[::53]:
        assert smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"], w.b_col, w.a_col) <= h100.smem_per_block_optin


@pytest.mark.parametrize("shape, size, default", [
    # sizes and defaults as committed before the layouts and dtypes existed
    ("4096x4096x4096", 2070, ("hgemm_mma<0, 128, 128, 32, 64, 64, 3, 8>", (32, 32, 1), 2 * 3 * (128 * 40 + 32 * 136))),
    ("4096x4096x4096_bt", 2070, ("hgemm_mma<1, 128, 128, 32, 64, 64, 3, 8>", (32, 32, 1), 61440)),
    ("1x4096x4096_bt", 414, ("hgemm_mma<1, 32, 128, 32, 16, 64, 3, 8>", (32, 1, 1), 38400)),
    ("1x4096x4096", 414, ("hgemm_mma<0, 32, 128, 32, 16, 64, 3, 8>", (32, 1, 1), 33792)),
    ("64x14336x4096_bt", 1026, ("hgemm_mma<1, 64, 128, 32, 64, 64, 3, 8>", (112, 1, 1), 46080)),
])
def test_still_serves_fp16_nn_and_nt_as_before(t, h100, shape, size, default):
    w = Hgemm.from_shape(shape)
    # hgemm_stream serves the linear layer's few rows (nt, M <= 256) besides, hgemm_wgmma_swap its layout (nt)
    streams, swaps = w.layout == "nt" and w.M <= 256, w.layout == "nt"
    assert t.refuses(w) is None and [x.family for x in templates_for(w)] == \
        HGEMM_TEMPLATES + ["hgemm_stream"] * streams + ["hgemm_wgmma_cluster", "hgemm_wgmma_sched"] + \
        ["hgemm_wgmma_swap"] * swaps
    cfgs = t.space(w, h100).enumerate()
    assert len(cfgs) == size
    spec = t.render(w, t.default_config(w, h100), h100)
    assert (spec.name_expression, spec.grid, spec.smem_bytes) == default
    # the same workload through the options renders the same kernels
    same = Hgemm.from_shape(shape.removesuffix("_bt"), layout="nt" if shape.endswith("_bt") else "nn", dtype="fp16")
    assert same == w and same.key == w.key
    for c in cfgs[::97]:
        assert t.render(same, c, h100) == t.render(w, c, h100)
