"""autosched.templates.gemv_q4f16 against an H100's limits: the space holds the seed's templates and
obeys the seed's rules (re-checked here independently), default configs, and render(): refusal of
bad configs before any source is produced, template-argument order, launch shape, shared memory and
argument layouts."""

import itertools
import random
import re
from pathlib import Path

import pytest

import autosched.kernels
import autosched.templates.gemv_q4f16 as tmod
from autosched.space import ConfigError
from autosched.workloads import GemvQ4F16

CUH = Path(autosched.kernels.__file__).parent / "gemv_q4f16.cuh"

SHAPES = ["12288x4096", "15360x5120", "4096x4096", "11008x4096", "4096x11008", "14336x4096",
          "4096x14336", "128256x4096", "1024x4128"]


def allowed_combo(tx, load, compute, vec_c) -> bool:
    """(tx, load, compute, vec_c) the seed's rules leave: fp32 scalar compute has no vector axis,
    and tx over N with loads over K forces tile_s == 1, which half2-over-N (row pairs) cannot use."""
    if vec_c == 1 and compute == "n":
        return False
    return not (tx == "s" and load == "k" and compute == "n")


COMBOS = [c for c in itertools.product("rs", "kn", "kn", (1, 2)) if allowed_combo(*c)]


@pytest.fixture(scope="module")
def w12288():
    return GemvQ4F16.from_shape("12288x4096")


@pytest.fixture(scope="module")
def space12288(gemv_template, w12288, h100):
    return gemv_template.space(w12288, h100)


@pytest.fixture(scope="module")
def configs12288(space12288):
    return space12288.enumerate()


@pytest.fixture(scope="module")
def render_sample(configs12288, gemv_template, w12288, h100):
    """300 seeded configs of every combo, with their rendered specs."""
    rng = random.Random(2024)
    picked = rng.sample(configs12288, 300)
    return [(cfg, gemv_template.render(w12288, cfg, h100)) for cfg in picked]


# -- the space -------------------------------------------------------------------------------------

def test_space_is_non_empty_and_every_config_validates(space12288, configs12288):
    assert len(configs12288) > 1000
    for cfg in configs12288:
        assert space12288.validate(cfg) == cfg


def test_prune_report_adds_up(space12288, configs12288):
    report = space12288.prune_report()
    assert sum(n for _, n in report) + len(configs12288) == space12288.raw_size()


def test_seed_templates_and_tx_bindings_all_appear(configs12288):
    assert {(c["load"], c["compute"]) for c in configs12288} == set(itertools.product("kn", "kn"))
    assert {c["tx"] for c in configs12288} == {"r", "s"}
    for tx in "rs":
        assert {c["load"] for c in configs12288 if c["tx"] == tx} == {"k", "n"}
    assert {(c["tx"], c["load"], c["compute"], c["vec_c"]) for c in configs12288} == set(COMBOS)


def test_every_config_obeys_the_seed_rules(configs12288, w12288, h100):
    N, K = w12288.N, w12288.K
    for c in configs12288:
        tx, load, vl, ts, tr = c["tx"], c["load"], c["vec_load"], c["ts"], c["tr"]
        assert N % c["layout_n"] == 0, c
        assert (K // 8) % c["layout_k"] == 0, c
        assert c["tile_s"] <= c["layout_n"], c
        assert c["tile_r"] % 8 == 0, c
        assert c["vec_c"] == 2 or c["compute"] == "k", c
        if c["compute"] == "n" and c["vec_c"] == 2:
            assert c["tile_s"] % 2 == 0, c
        # coalescing
        if tx == "s" and load == "n":
            assert c["tile_s"] == vl, c
        if tx == "s" and load == "k":
            assert c["tile_s"] == 1, c
        if tx == "r" and load == "k":
            assert c["tile_r"] == 8 * vl, c
        if tx == "r" and load == "n":
            assert c["tile_r"] == 8, c
        # block shape
        threads = ts * tr
        assert 32 <= threads <= 1024 and threads % 32 == 0, c
        assert ts * c["tile_s"] <= N and tr * c["tile_r"] <= K, c
        assert tmod.smem_bytes(K, tx, ts, tr, c["tile_s"], c["v_shared"]) <= h100.smem_per_block


# -- default configs ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES)
def test_default_config_is_in_the_space(shape, gemv_template, h100):
    w = GemvQ4F16.from_shape(shape)
    cfg = gemv_template.default_config(w, h100)
    space = gemv_template.space(w, h100)
    assert space.contains(cfg)
    assert space.validate(cfg) == cfg
    gemv_template.render(w, cfg, h100)


@pytest.mark.parametrize("shape", ["2048x2048", "8192x2048", "4096x3072", "4096x96"])
def test_default_config_for_short_k(shape, gemv_template, h100):
    w = GemvQ4F16.from_shape(shape)
    space = gemv_template.space(w, h100)
    assert space.size() > 0
    assert space.contains(gemv_template.default_config(w, h100))


@pytest.mark.parametrize("shape", ["2x4096", "1x4096"])
def test_default_config_for_tiny_n(shape, gemv_template, h100):
    w = GemvQ4F16.from_shape(shape)
    space = gemv_template.space(w, h100)
    assert space.size() > 0
    assert space.contains(gemv_template.default_config(w, h100))


# -- render refuses bad configs before producing source ---------------------------------------------

@pytest.fixture
def no_source(monkeypatch):
    """Make reading the kernel source fail loudly, so a refusal is known to come first."""
    calls = []

    def fail(name):
        calls.append(name)
        raise AssertionError("render produced source for a config it should have refused")

    monkeypatch.setattr(tmod, "kernel_source", fail)
    return calls


@pytest.mark.parametrize("patch, culprit", [
    ({"ts": 3}, "ts=3"),
    ({"ts": "4"}, "ts='4'"),
    ({"v_shared": True}, "v_shared=True"),
    ({"bogus": 1}, "bogus"),
    ({"tile_s": 2}, "rule broken: layout: N % n == 0 and TILE_S <= n"),   # declared, breaks a rule
])
def test_render_refuses_bad_configs_before_source(patch, culprit, no_source, gemv_template,
                                                  w12288, h100):
    cfg = gemv_template.default_config(w12288, h100) | patch
    with pytest.raises(ConfigError) as e:
        gemv_template.render(w12288, cfg, h100)
    assert culprit in str(e.value)
    assert no_source == []


def test_render_refuses_a_missing_knob(no_source, gemv_template, w12288, h100):
    cfg = gemv_template.default_config(w12288, h100)
    del cfg["hint"]
    with pytest.raises(ConfigError, match="missing knob 'hint'"):
        gemv_template.render(w12288, cfg, h100)
    assert no_source == []


# -- render output -------------------------------------------------------------------------------------

def cuh_template_params() -> list[str]:
    """Names of gemv_q4f16's template parameters, in order, read from the .cuh."""
    m = re.search(r"template\s*<([^>]*)>\s*__global__[^(]*\(TS \* TR\)\s*gemv_q4f16\(", CUH.read_text())
    assert m, "kernel declaration not found in gemv_q4f16.cuh"
    return [p.split()[-1] for p in m.group(1).split(",")]


def expected_args(cfg: dict, N: int, K: int) -> list[int]:
    by_name = {"N": N, "K": K, "LOAD_K": int(cfg["load"] == "k"),
               "COMPUTE_K": int(cfg["compute"] == "k"), "VEC_C": cfg["vec_c"],
               "TX_S": int(cfg["tx"] == "s"), "TS": cfg["ts"], "TR": cfg["tr"],
               "TILE_S": cfg["tile_s"], "TILE_R": cfg["tile_r"], "VEC_LOAD": cfg["vec_load"],
               "LN": cfg["layout_n"], "LK": cfg["layout_k"], "V_SHARED": cfg["v_shared"],
               "UNROLL": cfg["unroll"], "HINT": cfg["hint"], "PREFETCH": cfg["prefetch"]}
    names = cuh_template_params()
    assert sorted(names) == sorted(by_name)
    return [by_name[n] for n in names]


def test_cuh_declares_seventeen_parameters():
    assert len(cuh_template_params()) == 17


def test_name_expression_follows_the_cuh_parameter_order(render_sample, w12288):
    for cfg, spec in render_sample:
        m = re.fullmatch(r"gemv_q4f16<([^<>]*)>", spec.name_expression)
        assert m, spec.name_expression
        args = [int(a) for a in m.group(1).split(",")]
        assert args == expected_args(cfg, w12288.N, w12288.K), cfg


def test_launch_shape(render_sample, w12288):
    for cfg, spec in render_sample:
        rows = cfg["ts"] * cfg["tile_s"]
        assert spec.grid[1:] == (1, 1)
        assert spec.grid[0] * rows >= w12288.N > (spec.grid[0] - 1) * rows, cfg
        want = (cfg["ts"], cfg["tr"], 1) if cfg["tx"] == "s" else (cfg["tr"], cfg["ts"], 1)
        assert spec.block == want, cfg
        assert spec.threads == cfg["ts"] * cfg["tr"]


def test_grid_covers_n_when_blocks_do_not_divide_it(gemv_template, h100):
    w = GemvQ4F16(1000, 4096)        # 1000 = 8 * 125: blocks of 16+ rows leave a tail
    configs = [c for c in gemv_template.space(w, h100) if 1000 % (c["ts"] * c["tile_s"])]
    assert configs
    for cfg in random.Random(0).sample(configs, 20):
        spec = gemv_template.render(w, cfg, h100)
        assert spec.grid[0] == -(-1000 // (cfg["ts"] * cfg["tile_s"]))


def needs_cross_warp_reduction(cfg) -> bool:
    """Do the tr threads of one output row span more than one warp?"""
    if cfg["tr"] == 1:
        return False
    if cfg["tx"] == "r":                    # lanes walk r first
        return cfg["tr"] > 32
    return cfg["ts"] * cfg["tr"] > 32       # lanes walk s first: a warp holds 32 // ts r-values


def test_smem_bytes(render_sample, w12288):
    single = 0
    for cfg, spec in render_sample:
        v_bytes = cfg["v_shared"] * 2 * w12288.K
        if needs_cross_warp_reduction(cfg):
            # one fp32 partial per (warp group along r, row of the block)
            assert spec.smem_bytes > v_bytes, cfg
            assert (spec.smem_bytes - v_bytes) % (4 * cfg["ts"] * cfg["tile_s"]) == 0, cfg
        else:
            single += 1
            assert spec.smem_bytes == v_bytes, cfg
    assert 0 < single < len(render_sample)        # the sample has both kinds


def test_arguments_and_layouts(render_sample, w12288, h100):
    for cfg, spec in render_sample:
        assert [(a.name, a.role) for a in spec.args] == \
            [("A_q", "input"), ("A_scale", "input"), ("V", "input"), ("C", "output")]
        a_q, a_s, v, _ = spec.args
        nibbles = "natural" if cfg["vec_c"] == 1 else ("k" if cfg["compute"] == "k" else "rows")
        assert a_q.layout == "q4_words"
        assert a_q.params() == {"nibbles": nibbles, "n": cfg["layout_n"], "k": cfg["layout_k"]}
        assert a_s.layout == "q4_scales" and a_s.params() == {"n": cfg["layout_n"]}
        assert v.layout == "identity"
        assert dict(spec.config) == cfg
        assert spec.workload_key == w12288.key and spec.family == "gemv_q4f16"
        assert spec.arch == h100.arch == "sm_90"


def test_source_is_the_cuh_text_with_local_includes_inlined(render_sample):
    golden = CUH.read_text()
    assert "gemv_q4f16(" in golden and '#include "pdl.cuh"' in golden
    inlined = golden
    for inc in ("epilogue.cuh", "pdl.cuh"):
        inlined = inlined.replace(f'#include "{inc}"\n', (CUH.parent / inc).read_text())
    for _, spec in render_sample[:5]:
        assert spec.source == inlined and "#include \"" not in spec.source


def test_distinct_configs_render_distinct_binaries(render_sample):
    hashes = {spec.source_hash for _, spec in render_sample}
    assert len(hashes) == len(render_sample)


# -- the decode step's fused variants -------------------------------------------------------------

def test_fused_variants_compile_for_every_template_family(tmp_path, gemv_template, h100):
    """gemv_q4f16_fused with each epilogue compiles (NVRTC, no spills) for a corner config of every
    template family; the row-pairing epilogue refuses blocks of an odd number of rows."""
    from autosched.build import BuildCache, Builder
    from autosched.templates.epilogue import EPILOGUES
    w = GemvQ4F16(512, 1024)
    configs = gemv_template.space(w, h100).enumerate()
    corners = {}
    for c in tmod.extreme_configs(configs):
        corners.setdefault(tmod.family_of(c), c)
    specs = []
    for i, c in enumerate(sorted(corners.values(), key=lambda c: tmod.family_of(c))):
        epi = list(EPILOGUES)[i % len(EPILOGUES)]
        if epi == "norm_swiglu" and c["ts"] * c["tile_s"] % 2:
            epi = "residual"
        spec = tmod.fused_spec(w, c, h100, epi)
        assert spec.name_expression.startswith("gemv_q4f16_fused<")
        assert spec.name_expression.endswith(f", {EPILOGUES[epi]}>")
        assert spec.smem_bytes >= 4 * c["ts"] * c["tile_s"] + 2 * w.K * c["v_shared"]
        specs.append(spec)
    assert {s.name_expression.rsplit(",", 1)[1] for s in specs} == {f" {i}>" for i in EPILOGUES.values()}
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        for spec, binary in zip(specs, b.build_many(specs)):
            assert binary.ok, (spec.name_expression, binary.error)
            assert binary.resources.spills == 0, spec.name_expression
    odd = next(c for c in configs if c["ts"] * c["tile_s"] == 1)
    with pytest.raises(ValueError, match="pairs rows"):
        tmod.fused_spec(w, odd, h100, "norm_swiglu")


@pytest.mark.parametrize("shape", ["1x32", "2x64", "3x96", "7x32"])
def test_shapes_too_small_for_a_warp_are_refused_not_an_empty_space(h100, gemv_template, shape):
    """Found by tests/fuzz: these shapes had an empty space, and default_config died in min()."""
    from autosched.registry import templates_for
    from autosched.space import ConfigError
    from autosched.workloads import WorkloadError
    w = GemvQ4F16.from_shape(shape)
    assert next(iter(gemv_template.space(w, h100)), None) is None
    assert "a warp of threads" in gemv_template.refuses(w)
    with pytest.raises(WorkloadError, match="a warp of threads"):
        templates_for(w)
    with pytest.raises(ConfigError, match="the space is empty"):
        gemv_template.default_config(w, h100)


@pytest.mark.parametrize("shape", ["1x256", "4x64", "32x32", "2x128"])
def test_smallest_shapes_with_a_warp_have_configs(h100, gemv_template, shape):
    w = GemvQ4F16.from_shape(shape)
    assert gemv_template.refuses(w) is None
    cfg = gemv_template.default_config(w, h100)
    assert gemv_template.render(w, cfg, h100).threads % 32 == 0
