"""The fp16 tensor-core GEMM template: its space and rules, render, and NVRTC builds of sampled and
corner configs in both B layouts (no spills)."""

import random

import pytest

from autosched.build import BuildCache, Builder
from autosched.registry import templates_for
from autosched.templates import HgemmMmaTemplate
from autosched.templates.hgemm_mma import registers_needed, smem_bytes, threads
from autosched.workloads import Hgemm


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
    for shape in ("100x72x40_bt", "4096x4096x4096", "64x11008x4096_bt"):
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
