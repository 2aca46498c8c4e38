"""SgemmTemplate against an H100's limits: the seed's ranges and rules, render, NVRTC compiles."""

import random

import pytest

from autosched.build import BuildCache, Builder
from autosched.space import ConfigError
from autosched.templates import SgemmTemplate
from autosched.templates.sgemm import threads
from autosched.workloads import Sgemm

SEED_RANGES = {"bk": (8, 16, 32, 64), "bm": (64, 128, 256), "bn": (64, 128, 256), "wm": (32, 64, 128, 256),
               "wn": (32, 64, 128, 256), "wniter": (1, 2, 4, 8), "tm": (4, 8, 16, 32), "tn": (4, 8, 16, 32)}


@pytest.fixture(scope="module")
def t():
    return SgemmTemplate()


@pytest.mark.parametrize("shape", ["4096x4096x4096", "16x16x16", "1x4096x4096", "64x11008x4096",
                                   "4096x512x4096", "1000x1000x1000"])
def test_space_holds_the_seed_ranges_and_rules(t, h100, shape):
    w = Sgemm.from_shape(shape)
    space = t.space(w, h100)
    for name, values in SEED_RANGES.items():
        assert space.knob(name).values == values
    configs = space.enumerate()
    assert configs
    for c in configs:
        assert c["bm"] % c["wm"] == 0 and c["bn"] % c["wn"] == 0
        n = threads(c["bm"], c["bn"], c["wm"], c["wn"])
        assert 32 <= n <= 1024
        assert (c["wm"] * c["wn"]) % (32 * c["tm"] * c["tn"] * c["wniter"]) == 0
        wmiter = c["wm"] * c["wn"] // (32 * c["tm"] * c["tn"] * c["wniter"])
        assert c["wm"] % wmiter == 0 and c["wn"] % c["wniter"] == 0
        assert (c["bm"] * c["bk"]) % (4 * n) == 0 and (c["bn"] * c["bk"]) % (4 * n) == 0
        assert 4 * c["stages"] * c["bk"] * (c["bm"] + c["bn"] + 2 * c["pad"]) <= h100.smem_per_block_optin
    assert space.contains(t.default_config(w, h100))


def test_render_refuses_bad_configs_and_maps_shape_to_launch(t, h100):
    w = Sgemm(1000, 700, 333)
    cfg = dict(t.default_config(w, h100))
    with pytest.raises(ConfigError, match="bm"):
        t.render(w, dict(cfg, bm=96), h100)
    spec = t.render(w, dict(cfg, splitk=4), h100)
    assert spec.grid == (-(-700 // cfg["bn"]), -(-1000 // cfg["bm"]), 4)
    assert spec.output_init == "zero"
    assert [a.value for a in spec.args if a.role == "scalar"] == [1000, 700, 333]
    # K=333 rows of A are not 16-byte aligned: scalar loads for A, float4 for B (N=700)
    assert spec.name_expression.endswith(", 1, 4>")
    assert t.render(w, cfg, h100).output_init == "nan"


def test_sample_of_configs_compiles(t, h100, tmp_path):
    rng = random.Random(7)
    specs = []
    for shape, trans_a in (("1000x1000x1000", 0), ("64x11008x4096", 1)):
        w = Sgemm.from_shape(shape, trans_a=trans_a)
        space = t.space(w, h100)
        cfgs = rng.sample(space.enumerate(), 2) + [t.default_config(w, h100)]
        specs += [t.render(w, c, h100) for c in cfgs]
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        for spec, binary in zip(specs, b.build_many(specs)):
            assert binary.ok, binary.error
            assert binary.cubin[:4] == b"\x7fELF" and binary.resources.registers > 0
            assert binary.resources.spills == 0, (spec.name_expression, binary.resources)


def test_register_rule_refuses_a_tile_that_cannot_fit_the_register_file(t, h100):
    """256x256 blocks of 64x64 warps (512 threads: at most 128 registers each) with 4x8 thread
    tiles and WNITER 4 need 180: measured on the H100 it spilled 19 KB a thread and took 188 ms
    at 4096^3 (59x the best).  The rule removes it; the measured best stays."""
    from autosched.templates.sgemm import registers_needed
    w = Sgemm(4096, 4096, 4096)
    space = t.space(w, h100)
    spilled = {"bm": 256, "bn": 256, "wm": 64, "wn": 64, "wniter": 4, "tm": 4, "tn": 8, "bk": 16,
               "stages": 1, "pad": 0, "splitk": 1}
    assert registers_needed(*(spilled[k] for k in ("bm", "bn", "wm", "wn", "wniter", "tm", "tn", "bk", "stages"))) == 180
    with pytest.raises(ConfigError, match="registers"):
        space.validate(spilled)
    best = {"bm": 256, "bn": 128, "wm": 64, "wn": 32, "wniter": 2, "tm": 4, "tn": 4, "bk": 16,
            "stages": 2, "pad": 0, "splitk": 1}
    assert space.contains(best) and space.contains(t.default_config(w, h100))


def test_over_48kb_of_shared_memory_is_dynamic_and_compiles(t, h100, tmp_path):
    """A config staging more than 48 KB asks for it as dynamic shared memory (the kernel switches to
    an extern array; the launcher opts in); one at or under 48 KB keeps its static array."""
    w = Sgemm(4096, 4096, 4096)
    big = {"bm": 128, "bn": 128, "wm": 64, "wn": 64, "wniter": 1, "tm": 8, "tn": 8, "bk": 32, "stages": 2,
           "pad": 0, "splitk": 1}
    small = dict(big, bk=16)
    assert t.space(w, h100).contains(big)
    s_big, s_small = t.render(w, big, h100), t.render(w, small, h100)
    assert s_big.smem_bytes == 4 * 2 * 32 * (128 + 128) > 48 * 1024 and s_small.smem_bytes == 0
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        bb, bs = b.build(s_big), b.build(s_small)
    assert bb.ok and bs.ok, (bb.error, bs.error)
    assert bb.resources.smem_static == 0 and bs.resources.smem_static == 4 * 2 * 16 * (128 + 128)
    assert bb.resources.spills == 0
