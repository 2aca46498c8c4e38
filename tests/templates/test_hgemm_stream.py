"""The weight-streaming GEMM template (hgemm_stream): what it serves and refuses, its space's rules
against the .cuh's limits, the default, render (grid, block, shared memory, workspace), and NVRTC
builds of sampled and corner configs in FP16 and BF16: no spills, no stack, and no static shared
memory (the launcher opts in for the dynamic amount only)."""

import random

import pytest

from autosched.build import BuildCache, Builder
from autosched.space import ConfigError
from autosched.templates.hgemm_stream import (MAX_ACC, HgemmStreamTemplate, bn_of, registers_needed, slot_row,
                                              smem_bytes, threads, tiles, workspace_bytes)
from autosched.workloads import Hgemm
from autosched.workloads.base import WorkloadError


@pytest.fixture(scope="module")
def t():
    return HgemmStreamTemplate()


def test_serves_the_linear_layers_few_rows_only(t):
    assert t.refuses(Hgemm.from_shape("128x4096x4096_bt")) is None
    assert t.refuses(Hgemm.from_shape("1x12x16_bt_bf16")) is None
    assert "layout nt" in t.refuses(Hgemm.from_shape("128x4096x4096"))
    assert "layout nt" in t.refuses(Hgemm.from_shape("128x4096x4096_tt"))
    assert "M = 257 > 256" in t.refuses(Hgemm.from_shape("257x4096x4096_bt"))


def test_space_obeys_the_kernels_limits(t, h100):
    for shape in ("128x4096x4096_bt", "16x11008x4096_bt", "1x72x40_bt"):
        w = Hgemm.from_shape(shape)
        cfgs = t.space(w, h100).enumerate()
        assert len(cfgs) > 100, shape
        for c in cfgs:
            n = threads(c["wn"], c["wk"])
            assert 64 <= n <= 512
            assert c["rw"] * c["mt"] // 2 <= MAX_ACC
            assert registers_needed(c["rw"], c["mt"]) <= min(255, 65536 // n)
            assert smem_bytes(c["rw"], c["wn"], c["wk"], c["mt"], c["kw"], c["stages"]) <= h100.smem_per_block_optin
            assert c["mt"] == 8 or c["mt"] // 2 < w.M
            assert -(-w.K // (c["kw"] * c["wk"])) >= c["split_k"]
            assert c["split_k"] == 1 or tiles(w.M, w.N, c["rw"], c["wn"], c["mt"]) * c["split_k"] <= 8 * 132
    # M = 1 keeps the 8-row tile alone; a short K leaves no deep split
    w = Hgemm.from_shape("1x72x40_bt")
    assert {c["mt"] for c in t.space(w, h100)} == {8}
    assert max(c["split_k"] for c in t.space(w, h100)) == 2       # 40 k: two slots of 32 at most


def test_slot_rows_are_64_bytes_past_a_multiple_of_128():
    for ch in (32, 64, 128, 256, 512):
        assert (slot_row(ch) * 2) % 128 == 64 and slot_row(ch) >= ch


def test_default_and_render(t, h100):
    w = Hgemm.from_shape("16x4096x4096_bt")
    d = t.default_config(w, h100)
    assert d["mt"] == 16 and t.space(w, h100).contains(d)
    ctas = tiles(16, 4096, d["rw"], d["wn"], d["mt"]) * d["split_k"]
    assert ctas >= 2 * 132        # the CTAs cover the SMs twice
    spec = t.render(w, d, h100)
    bn = bn_of(d["rw"], d["wn"])
    assert spec.grid == (4096 // bn, d["split_k"], 1) and spec.block == (threads(d["wn"], d["wk"]), 1, 1)
    assert spec.smem_bytes == smem_bytes(d["rw"], d["wn"], d["wk"], d["mt"], d["kw"], d["stages"])
    assert spec.name_expression == (f"hgemm_stream<0, {d['rw']}, {d['wn']}, {d['wk']}, 16, {d['kw']}, "
                                    f"{d['stages']}, {d['split_k']}>")
    ws = [a for a in spec.args if a.role == "workspace"]
    assert [a.name for a in spec.args] == ["A", "B", "C", "workspace", "M", "N", "K"]
    assert ws[0].value == workspace_bytes(16, 4096, d["rw"], d["wn"], 16, d["split_k"])
    # ragged M: the grid's z covers it in tiles of mt
    w = Hgemm.from_shape("200x264x200_bt_bf16")
    c = {"rw": 1, "wn": 2, "wk": 2, "mt": 64, "kw": 32, "stages": 3, "split_k": 2}
    spec = t.render(w, c, h100)
    assert spec.grid == (9, 2, 4) and spec.name_expression.startswith("hgemm_stream<1, ")
    assert workspace_bytes(200, 264, 1, 2, 64, 2) == 256 + 2 * 36 * 64 * 32 * 4
    with pytest.raises(ConfigError):
        t.render(w, {**c, "mt": 256}, h100)
    with pytest.raises(WorkloadError, match="layout nt"):
        t.space(Hgemm.from_shape("64x64x64"), h100)


def test_sampled_and_corner_configs_compile_clean(t, h100, tmp_path):
    rng = random.Random(7)
    specs = []
    for shape in ("128x4096x4096_bt", "16x11008x4096_bt_bf16", "37x264x520_bt", "256x264x200_bt_bf16"):
        w = Hgemm.from_shape(shape)
        cfgs = t.space(w, h100).enumerate()
        smem = lambda c: smem_bytes(c["rw"], c["wn"], c["wk"], c["mt"], c["kw"], c["stages"])  # noqa: E731
        picks = [max(cfgs, key=smem), max(cfgs, key=lambda c: (registers_needed(c["rw"], c["mt"]), c["wn"] * c["wk"])),
                 max(cfgs, key=lambda c: (c["split_k"], c["wk"])), t.default_config(w, h100), *rng.sample(cfgs, 2)]
        # a config whose dynamic shared memory sits just under 48 KB: any static shared memory would
        # push the block over what a launch gets without opting in
        near = [c for c in cfgs if 45000 < smem(c) <= 49152]
        picks += near[:1]
        specs += [t.render(w, c, h100) for c in picks]
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        for spec, binary in zip(specs, b.build_many(specs)):
            assert binary.ok, (spec.name_expression, binary.error)
            r = binary.resources
            assert r.spills == 0 and r.stack_bytes == 0, (spec.name_expression, r)
            assert r.smem_static == 0, (spec.name_expression, r)
            assert r.registers * spec.threads <= h100.regs_per_block
