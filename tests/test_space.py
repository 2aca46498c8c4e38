"""autosched.space on a small toy space: enumeration against brute force, validation and its error
messages, strict value typing, sampling, neighbours and the prune report."""

import collections
import itertools
import random
import re

import pytest

from autosched.space import ConfigError, Constraint, Knob, Space, config_hash

KNOBS = [
    Knob("a", (1, 2, 4, 8)),
    Knob("b", ("x", "y", "z")),
    Knob("c", (0, 1)),
    Knob("d", (1, 3, 5)),
]
# (name, knobs, check); the first one lists its knobs out of declaration order on purpose
RULES = [
    ("a times d at most 16", ("d", "a"), lambda d, a: a * d <= 16),
    ("b is x or c is 1", ("b", "c"), lambda b, c: b == "x" or c == 1),
    ("a even when b is z", ("a", "b"), lambda a, b: b != "z" or a % 2 == 0),
]


def toy_space(rules=RULES) -> Space:
    return Space(list(KNOBS), [Constraint(n, k, f) for n, k, f in rules])


def brute_force(rules=RULES) -> list[dict]:
    names = [k.name for k in KNOBS]
    out = []
    for values in itertools.product(*(k.values for k in KNOBS)):
        cfg = dict(zip(names, values))
        if all(f(*(cfg[k] for k in knobs)) for _, knobs, f in rules):
            out.append(cfg)
    return out


def as_key(cfg: dict) -> tuple:
    return tuple(sorted(cfg.items()))


def test_enumeration_equals_brute_force():
    space = toy_space()
    got = space.enumerate()
    want = brute_force()
    assert 0 < len(want) < space.raw_size()         # the rules really prune something
    assert len(got) == len({as_key(c) for c in got}), "duplicate configs"
    assert {as_key(c) for c in got} == {as_key(c) for c in want}
    assert space.size() == len(want)
    assert all(list(c) == space.names for c in got)  # every config sets every knob


def test_enumeration_without_constraints_is_the_product():
    space = Space(list(KNOBS))
    assert space.size() == space.raw_size() == 4 * 3 * 2 * 3


def test_raw_size():
    assert toy_space().raw_size() == 72


def test_enumerated_configs_validate_to_themselves():
    space = toy_space()
    for cfg in space:
        assert space.contains(cfg)
        assert space.validate(cfg) == cfg


def test_space_construction_errors():
    with pytest.raises(ValueError, match="duplicate"):
        Space([Knob("a", (1,)), Knob("a", (2,))])
    with pytest.raises(ValueError, match="nope"):
        Space([Knob("a", (1,))], [Constraint("reads nope", ("a", "nope"), lambda a, n: True)])


# -- validation ---------------------------------------------------------------------------------

def valid_config() -> dict:
    return {"a": 2, "b": "x", "c": 0, "d": 3}


def test_validate_names_unknown_knob():
    cfg = valid_config() | {"zeta": 1}
    with pytest.raises(ConfigError, match="zeta"):
        toy_space().validate(cfg)


def test_validate_names_missing_knob():
    cfg = valid_config()
    del cfg["c"]
    with pytest.raises(ConfigError, match="missing knob 'c'"):
        toy_space().validate(cfg)


def test_validate_names_undeclared_value():
    with pytest.raises(ConfigError, match="d=7"):
        toy_space().validate(valid_config() | {"d": 7})
    with pytest.raises(ConfigError, match="b='w'"):
        toy_space().validate(valid_config() | {"b": "w"})


@pytest.mark.parametrize("patch, rule", [
    ({"a": 8, "d": 3}, "a times d at most 16"),
    ({"b": "y", "c": 0}, "b is x or c is 1"),
    ({"a": 1, "b": "z", "c": 1}, "a even when b is z"),
])
def test_validate_names_broken_rule(patch, rule):
    cfg = valid_config() | patch
    with pytest.raises(ConfigError) as e:
        toy_space().validate(cfg)
    assert rule in str(e.value)
    assert not toy_space().contains(cfg)
    # only the broken rule is named
    others = [n for n, _, _ in RULES if n != rule]
    assert not any(o in str(e.value) for o in others)


def test_validate_names_every_problem():
    cfg = valid_config() | {"zeta": 1, "d": 7}
    msg = str(pytest.raises(ConfigError, toy_space().validate, cfg).value)
    assert "zeta" in msg and "d=7" in msg


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


# -- 1 vs "1" vs True ---------------------------------------------------------------------------

def typed_space() -> Space:
    return Space([Knob("i", (0, 1, 2)), Knob("s", ("0", "1")), Knob("m", (1, "1"))])


@pytest.mark.parametrize("patch, culprit", [
    ({"i": True}, "i=True"),
    ({"i": "1"}, "i='1'"),
    ({"i": 1.0}, "i=1.0"),
    ({"s": 1}, "s=1"),
    ({"s": True}, "s=True"),
    ({"m": True}, "m=True"),
    ({"m": 1.0}, "m=1.0"),
])
def test_values_are_not_confused_across_types(patch, culprit):
    cfg = {"i": 1, "s": "1", "m": 1} | patch
    with pytest.raises(ConfigError, match=re.escape(culprit)):
        typed_space().validate(cfg)


def test_validate_returns_the_declared_value_of_the_same_type():
    space = typed_space()
    out = space.validate({"i": 1, "s": "1", "m": "1"})
    assert out == {"i": 1, "s": "1", "m": "1"}
    assert type(out["i"]) is int and type(out["s"]) is str and type(out["m"]) is str
    out = space.validate({"i": 1, "s": "1", "m": 1})
    assert type(out["m"]) is int


def test_bool_knob_rejects_ints():
    space = Space([Knob("flag", (False, True))])
    assert space.validate({"flag": True}) == {"flag": True}
    with pytest.raises(ConfigError):
        space.validate({"flag": 1})


def test_neighbours_do_not_treat_true_as_one():
    space = Space([Knob("m", (1, True, "1"))])
    # the two other values are distinct points: 1 is not skipped as "equal" to True
    nbrs = space.neighbours({"m": True})
    assert [(type(n["m"]), n["m"]) for n in nbrs] == [(int, 1), (str, "1")]


# -- sampling, neighbours, prune report ------------------------------------------------------------

def test_sample_returns_valid_configs():
    space = toy_space()
    rng = random.Random(0)
    for _ in range(500):
        cfg = space.sample(rng)
        assert space.contains(cfg), cfg


def test_sample_covers_small_space():
    space = toy_space()
    rng = random.Random(1)
    seen = {as_key(space.sample(rng)) for _ in range(3000)}
    assert seen == {as_key(c) for c in brute_force()}


def test_sample_is_reproducible_with_a_seed():
    space = toy_space()
    a = [space.sample(random.Random(7)) for _ in range(3)]
    r1, r2 = random.Random(42), random.Random(42)
    assert [space.sample(r1) for _ in range(20)] == [space.sample(r2) for _ in range(20)]
    assert a[0] == a[1] == a[2]


def test_sample_of_an_empty_space_raises():
    space = Space([Knob("a", (1, 2))], [Constraint("never", ("a",), lambda a: False)])
    assert space.size() == 0
    with pytest.raises(ConfigError):
        space.sample(random.Random(0), max_tries=50)


def test_random_search_order_is_uniform_over_valid_configs():
    # Space.sample is documented as not uniform; RandomSearch (a shuffled enumeration) must be:
    # every valid config first equally often.  valid: (0,0) (0,1) (0,2) (1,0)
    from autosched.search import make_strategy
    space = Space([Knob("a", (0, 1)), Knob("b", (0, 1, 2))],
                  [Constraint("a is 0 or b is 0", ("a", "b"), lambda a, b: a == 0 or b == 0)])
    counts = collections.Counter(as_key(make_strategy("random", space, seed).propose(1)[0])
                                 for seed in range(4000))
    assert len(counts) == 4
    # 5 sigma of a binomial(4000, 1/4) is ~137
    assert all(abs(n - 1000) < 150 for n in counts.values()), counts


def test_neighbours_differ_in_exactly_one_knob_and_are_valid():
    space = toy_space()
    valid = {as_key(c) for c in brute_force()}
    for cfg in space:
        nbrs = space.neighbours(cfg)
        for n in nbrs:
            assert sum(n[k] != cfg[k] for k in space.names) == 1
            assert space.contains(n)
        # ... and they are all of them: every valid config at Hamming distance 1
        want = {c for c in valid if sum(a != b for (_, a), (_, b) in zip(c, as_key(cfg))) == 1}
        assert {as_key(n) for n in nbrs} == want
        assert len(nbrs) == len(want)


def test_mutate_returns_a_neighbour_or_none():
    space = toy_space()
    rng = random.Random(3)
    cfg = space.sample(rng)
    for _ in range(50):
        m = space.mutate(cfg, rng)
        assert m in space.neighbours(cfg)
    lonely = Space([Knob("a", (1, 2))], [Constraint("a is 1", ("a",), lambda a: a == 1)])
    assert lonely.mutate({"a": 1}, rng) is None


@pytest.mark.parametrize("rules", [RULES, RULES[::-1], RULES[:1], []])
def test_prune_report_counts_add_up(rules):
    space = toy_space(rules)
    report = space.prune_report()
    names = [n for n, _, _ in rules]
    assert all(name in names and n > 0 for name, n in report)
    assert sum(n for _, n in report) + space.size() == space.raw_size()
    assert space.size() == len(brute_force(rules))


def test_config_hash_ignores_key_order():
    a = {"a": 1, "b": "x", "c": 0}
    b = {"c": 0, "b": "x", "a": 1}
    assert config_hash(a) == config_hash(b)
    assert config_hash(a) != config_hash(a | {"a": 2})
    assert config_hash({"a": 1}) != config_hash({"a": "1"})


def test_nearest_is_the_config_itself_or_the_point_differing_in_fewest_knobs():
    s = Space([Knob("a", (1, 2, 4)), Knob("b", (1, 2, 4)), Knob("c", (0, 1))],
              [Constraint("a * b <= 4", ("a", "b"), lambda a, b: a * b <= 4)])
    assert s.nearest({"a": 2, "b": 2, "c": 1}) == {"a": 2, "b": 2, "c": 1}
    # (4, 2) breaks the rule: (1, 2), (2, 2) and (4, 1) each change one knob; the first in walk order wins
    assert s.nearest({"a": 4, "b": 2, "c": 1}) == {"a": 1, "b": 2, "c": 1}
    assert s.contains(s.nearest({"a": 4, "b": 4, "c": 0}))


# -- malformed configs (issue 14): a ConfigError naming the problem, never a TypeError ----------------

OK = {"a": 2, "b": "x", "c": 0, "d": 1}


@pytest.mark.parametrize("cfg, words", [
    (None, "got None"),
    (5, "got 5"),
    ("str", "got 'str'"),
    ([("a", 1)], "a config is a dict"),
    (OK, None),
    ({**OK, 1: 2}, "unknown knobs [1]"),
    ({**OK, (1, 2): 2, "zz": 1}, "unknown knobs"),
    ({**OK, "b": {"x"}}, "b={'x'}"),
    ({**OK, "a": 2.0}, "a=2.0 is not one of [1, 2, 4, 8] (a float; the space's values are ints)"),
    ({**OK, "a": "2"}, "(a str; the space's values are ints)"),
    ({**OK, "c": False}, "(a bool; the space's values are ints)"),
    ({"a": 2}, "missing knob 'b'"),
])
def test_malformed_configs_are_config_errors_naming_the_knob(cfg, words):
    space = toy_space(rules=[])
    if words is None:
        assert space.validate(cfg) == cfg
        return
    assert not space.contains(cfg)
    assert any(words in p for p in space.violations(cfg)), space.violations(cfg)
    with pytest.raises(ConfigError, match=re.escape(words)):
        space.validate(cfg)


def test_nearest_ignores_knobs_the_space_lacks():
    assert toy_space().nearest(valid_config() | {"zeta": 1}) in toy_space().enumerate()


@pytest.mark.parametrize("cfg", [None, [], {"template": ["a"]}, {"template": None, "a": 1}, {"template": {}}])
def test_union_split_refuses_malformed_configs(cfg):
    from autosched.space import SpaceUnion
    union = SpaceUnion({"one": toy_space(), "two": toy_space()})
    with pytest.raises(ConfigError, match="template"):
        union.validate(cfg)
    assert not union.contains(cfg)
