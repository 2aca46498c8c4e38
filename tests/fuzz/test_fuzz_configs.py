"""Property tests of schedule spaces and render (issue 14): any dict (or non-dict) is a config of a
template's space or a ConfigError naming the knob, never a TypeError or KeyError; a config that
validates renders a KernelSpec within CUDA's launch limits whose grid covers the output and whose
arguments match the workload; SpaceUnion keeps its members apart; config_hash is stable.

Spaces are enumerated once per module, on small (some ragged) shapes of every family."""

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autosched.device import MAX_BLOCK, MAX_GRID, MAX_THREADS_PER_BLOCK
from autosched.registry import FAMILIES
from autosched.space import ConfigError, SpaceUnion, config_hash
from autosched.templates.base import KernelSpec, launch_problem
from fuzz.strategies import examples, VALID_WORKLOADS, keys, values

BOUNDED = settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])

SHAPES = {"gemv-q4f16": ["64x256", "264x4128", "1x256"], "sgemm": ["64x64x64", "300x260x200_ta", "1x1x1"],
          "hgemm": ["64x64x64", "300x260x200_bt", "1x8x8", "37x264x520_bt"], "gemv-dense": ["64x256", "264x4128", "1x8"]}
assert set(SHAPES) == set(FAMILIES), "a family without fuzz shapes: add some above"
# every template on every shape it serves (hgemm_wgmma and its split-K refuse N % 8, so not 300x260x200_bt;
# split-K serves 1x8x8 with an empty space: K = 8 is one k-block, no two slices; the clusters serve
# 1x8x8 and 64x64x64 with empty spaces: one tile each way, no pair; hgemm_stream serves nt with
# M <= 256 only: 37x264x520_bt)
CASES = [(name, shape, i) for name, shapes in SHAPES.items() for shape in shapes
         for i in range(len(FAMILIES[name].templates))
         if FAMILIES[name].templates[i].refuses(FAMILIES[name].parse(shape)) is None]
IDS = [f"{FAMILIES[n].templates[i].family}-{s}" for n, s, i in CASES]


_SPACES: dict = {}


def space_of(case, device):
    """(template, workload, space, its configs) of a case, enumerated once per module (a module
    global rather than a fixture: hypothesis prints a failing example's arguments)."""
    if case not in _SPACES:
        name, shape, i = case
        fam = FAMILIES[name]
        t, w = fam.templates[i], fam.parse(shape)
        space = t.space(w, device)
        _SPACES[case] = (t, w, space, space.enumerate())
    return _SPACES[case]


def with_configs(case, device):
    """space_of(case) for the properties that draw a config: a case whose space is empty has none to
    draw (test_an_empty_space_is_ordinary covers it)."""
    got = space_of(case, device)
    if not got[3]:
        pytest.skip(f"{got[0].family} has no config for {got[1].shape_str}")
    return got


def check_spec(spec: KernelSpec, template, workload, cfg, device):
    """What every rendered spec must satisfy, whatever the template."""
    assert launch_problem(spec.grid, spec.block, spec.smem_bytes) is None
    assert all(1 <= g <= m for g, m in zip(spec.grid, MAX_GRID))
    assert all(1 <= b <= m for b, m in zip(spec.block, MAX_BLOCK)) and spec.threads <= MAX_THREADS_PER_BLOCK
    assert spec.threads <= device.max_threads_per_block and spec.threads % device.warp_size == 0
    assert 0 <= spec.smem_bytes <= device.smem_per_block_optin
    assert dict(spec.config) == cfg and spec.family == template.family and spec.workload_key == workload.key
    assert spec.arch in (device.arch, device.arch + "a")    # sm_90a: hgemm_wgmma's arch-specific target
    p = workload.params
    # a TMA map ("tensormap") stands for the buffer it describes
    of = lambda a: a.params().get("of") if a.role == "tensormap" else a.role  # noqa: E731
    inputs = [a.name for a in spec.args if of(a) == "input"]
    outputs = [a.name for a in spec.args if of(a) == "output"]
    assert len(outputs) == 1 and len(set(a.name for a in spec.args)) == len(spec.args)
    assert all(a.ctype for a in spec.args), "an exported launcher needs every argument's C++ type"
    for a in spec.args:
        if a.role == "scalar":     # a workload parameter, or 0 (gemv_dense's unused epilogue arguments)
            assert a.value == p.get(a.name, 0), (a.name, a.value, p)
    # the inputs are the workload's own buffers (generated only where that is cheap), and the grid
    # covers every output
    if workload.bytes_moved() < 1 << 20:
        assert set(inputs) == set(workload.inputs(0))
    if "cluster_dim" in cfg:    # hgemm_wgmma_cluster: a persistent grid of CTA pairs walks the pair units
        from autosched.templates.hgemm_wgmma_cluster import cluster_pairs
        units, _ = cluster_pairs(p["M"], p["N"], cfg["bm"], cfg["bn"], cfg["cluster_dim"])
        assert spec.grid == (2 * min(units, device.sm_count // 2), 1, 1) and spec.cluster == (2, 1, 1)
        assert set(inputs) == {"A", "B"}
    elif "consumers" in cfg or "schedule" in cfg:    # hgemm_wgmma, its split-K and its schedules: a persistent
        #                                               grid walks the tiles (or work units)
        tiles = -(-p["M"] // cfg["bm"]) * -(-p["N"] // cfg["bn"])
        assert spec.grid == (min(tiles * cfg.get("split_k", 1), device.sm_count), 1, 1)
        assert set(inputs) == {"A", "B"}
    elif "bt" in cfg:           # hgemm_wgmma_swap: a persistent grid walks BT x BW tiles (x K slices); where
        #                         the slices meet in a cluster, a CTA a work unit
        tiles = -(-p["M"] // cfg["bt"]) * -(-p["N"] // cfg["bw"])
        units = tiles * cfg["split_k"]
        assert spec.grid == (units if cfg["reduce"] == "cluster" else min(units, device.sm_count), 1, 1)
        assert set(inputs) == {"A", "B"}
    elif "rw" in cfg:           # hgemm_stream: N blocks of W rows, K slices, M blocks of A rows
        bn = 16 * cfg["rw"] * cfg["wn"]
        assert spec.grid == (-(-p["N"] // bn), cfg["split_k"], -(-p["M"] // cfg["mt"]))
        assert set(inputs) == {"A", "B"}
    elif "bn" in cfg:
        assert spec.grid[0] * cfg["bn"] >= p["N"] and spec.grid[1] * cfg["bm"] >= p["M"]
        assert set(inputs) == {"A", "B"}
    elif "warps" in cfg:        # gemv_dense: a warp a row
        assert spec.grid[0] * cfg["warps"] >= p["N"] and spec.threads == 32 * cfg["warps"]
        assert set(inputs) == {"W", "V"}
    else:
        assert spec.grid[0] * cfg["ts"] * cfg["tile_s"] >= p["N"]
        assert set(inputs) == {"A_q", "A_scale", "V"}


@pytest.mark.parametrize("case", CASES, ids=IDS)
@BOUNDED
@given(cfg=st.one_of(st.none(), values, st.dictionaries(keys, values, max_size=6)))
def test_arbitrary_values_are_config_errors(case, cfg, h100):
    t, w, space, _ = space_of(case, h100)
    problems = space.violations(cfg)
    assert problems and all(isinstance(p, str) and p for p in problems)
    assert not space.contains(cfg)
    with pytest.raises(ConfigError):
        space.validate(cfg)


@pytest.mark.parametrize("case", CASES, ids=IDS)
@BOUNDED
@given(data=st.data())
def test_a_broken_knob_is_named(case, data, h100):
    """A valid config with one knob changed (to any value, or dropped), or one knob added: valid, or
    a ConfigError naming that knob, from validate and from render alike."""
    t, w, space, configs = with_configs(case, h100)
    cfg = dict(data.draw(st.sampled_from(configs)))
    knob = data.draw(st.sampled_from(space.names + ["extra"]))
    how = data.draw(st.sampled_from(["value", "drop", "declared"]))
    if how == "drop" and knob in cfg:
        del cfg[knob]
    elif how == "declared" and knob in cfg:
        cfg[knob] = data.draw(st.sampled_from(space.knob(knob).values))
    else:
        cfg[knob] = data.draw(values)
    try:
        out = space.validate(cfg)
    except ConfigError as e:
        assert repr(knob) in str(e) or f"{knob}=" in str(e) or "rule broken" in str(e), str(e)
        assert not space.contains(cfg)
        with pytest.raises(ConfigError):
            t.render(w, cfg, h100)
        return
    assert space.contains(cfg) and out in configs
    check_spec(t.render(w, cfg, h100), t, w, out, h100)


@pytest.mark.parametrize("case", CASES, ids=IDS)
@BOUNDED
@given(data=st.data())
def test_every_valid_config_renders_within_limits(case, data, h100):
    t, w, space, configs = with_configs(case, h100)
    cfg = data.draw(st.sampled_from(configs))
    assert space.validate(cfg) == cfg and not space.violations(cfg)
    check_spec(t.render(w, cfg, h100), t, w, cfg, h100)


@pytest.mark.parametrize("name", list(FAMILIES))
@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_valid_workload_renders_sampled_and_default_configs(name, data, h100):
    """On any shape the workload accepts (up to its bounds), a sampled config and the rule-based
    default render within the limits: the workload bounds and the spaces agree."""
    w = data.draw(VALID_WORKLOADS[name])
    for t in FAMILIES[name].templates_for(w):
        space = t.space(w, h100)
        # split-K where the tiles fill the GPU, clusters where no two tiles lie side by side: nothing to render
        if next(iter(space), None) is None:
            assert t.family in ("hgemm_wgmma_splitk", "hgemm_wgmma_cluster"), (t.family, w.key)
            with pytest.raises(ConfigError):
                t.default_config(w, h100)
            continue
        cfg = space.sample(random.Random(data.draw(st.integers(0, 2**32))))
        check_spec(t.render(w, cfg, h100), t, w, space.validate(cfg), h100)
        if w.name != "gemv_q4f16" or w.N * w.K <= 2**26:      # nearest() may walk a large GEMV space
            default = t.default_config(w, h100)
            check_spec(t.render(w, default, h100), t, w, default, h100)


def test_an_empty_space_is_ordinary(h100):
    """A template may serve a shape and have no config for it: its space enumerates nothing, a
    sample and the default are ConfigErrors, and render refuses any config; no other case is empty."""
    empty = [IDS[i] for i, case in enumerate(CASES) if not space_of(case, h100)[3]]
    assert sorted(empty) == ["hgemm_wgmma_cluster-1x8x8", "hgemm_wgmma_cluster-64x64x64", "hgemm_wgmma_splitk-1x8x8"]
    for case in CASES:
        t, w, space, configs = space_of(case, h100)
        if configs:
            continue
        with pytest.raises(ConfigError):
            space.sample(random.Random(0), max_tries=100)
        with pytest.raises(ConfigError):
            t.default_config(w, h100)
        with pytest.raises(ConfigError, match="rule broken"):
            t.render(w, {k.name: k.values[0] for k in space.knobs}, h100)


# -- config_hash --------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=IDS)
@BOUNDED
@given(data=st.data())
def test_config_hash_is_stable(case, data, h100):
    t, w, space, configs = with_configs(case, h100)
    a, b = data.draw(st.sampled_from(configs)), data.draw(st.sampled_from(configs))
    shuffled = dict(data.draw(st.permutations(list(a.items()))))
    h = config_hash(a)
    assert len(h) == 16 and int(h, 16) >= 0
    assert config_hash(shuffled) == h == config_hash(space.validate(shuffled)) == config_hash(dict(a))
    assert (config_hash(a) == config_hash(b)) == (a == b)
    # a value of another type is another config
    k = data.draw(st.sampled_from([n for n, v in a.items() if type(v) is int] or [None]))
    if k is not None:
        assert config_hash({**a, k: float(a[k])}) != h and config_hash({**a, k: str(a[k])}) != h


# -- SpaceUnion --------------------------------------------------------------------------------------

_UNION: list = []


def union_of(device):
    """The gemv, sgemm and hgemm spaces of the small shapes as one union: members with different
    knobs, as a workload served by several templates has."""
    if not _UNION:
        picks = {f"m{i}": space_of(c, device)[2]
                 for i, c in enumerate(c for c in CASES if c[1] in ("64x256", "64x64x64") and space_of(c, device)[3])}
        _UNION.append((SpaceUnion(picks), {m: s.enumerate() for m, s in picks.items()}))
    return _UNION[0]


@BOUNDED
@given(data=st.data())
def test_union_invariants(data, h100):
    u, members = union_of(h100)
    name = data.draw(st.sampled_from(sorted(members)))
    cfg = data.draw(st.sampled_from(members[name]))
    joined = u.join(name, cfg)
    assert u.split(joined) == (name, cfg)
    assert u.contains(joined) and u.validate(joined) == joined and not u.violations(joined)
    for n in u.neighbours(joined):
        assert n[u.tag] == name and u.contains(n)
        assert sum(n[k] != joined[k] for k in joined) == 1
    drawn = u.sample(random.Random(data.draw(st.integers(0, 2**32))))
    assert u.contains(drawn) and drawn[u.tag] in members
    # a config of one member under another member's name is not in the union
    other = data.draw(st.sampled_from(sorted(members)))
    if other != name and set(cfg) != set(u.members[other].names):
        assert not u.contains(u.join(other, cfg))
        with pytest.raises(ConfigError, match=other):
            u.validate(u.join(other, cfg))
    assert u.names[0] == u.tag and set(u.names[1:]) == {k for s in u.members.values() for k in s.names}


def test_union_enumerates_its_members_in_order(h100):
    u, members = union_of(h100)
    assert u.enumerate() == [u.join(m, c) for m in members for c in members[m]]
    assert u.size() == sum(map(len, members.values()))
    assert u.raw_size() == sum(s.raw_size() for s in u.members.values())


@BOUNDED
@given(cfg=st.one_of(values, st.dictionaries(keys, values, max_size=5),
                     st.dictionaries(st.just("template"), values, min_size=1).flatmap(
                         lambda d: st.dictionaries(keys, values, max_size=4).map(lambda e: {**e, **d}))))
def test_union_takes_any_value(cfg, h100):
    u, _ = union_of(h100)
    assert u.violations(cfg) and not u.contains(cfg)
    with pytest.raises(ConfigError):
        u.validate(cfg)
