"""autosched.search.strategies: exhaustive and random search over the 4096x4096 gemv space."""

import random

import pytest

from autosched.search import STRATEGIES, Exhaustive, RandomSearch, make_strategy
from autosched.space import Constraint, Knob, Space, config_hash
from autosched.workloads import GemvQ4F16


@pytest.fixture(scope="module")
def space(h100, gemv_template):
    return gemv_template.space(GemvQ4F16(4096, 4096), h100)


@pytest.fixture(scope="module")
def configs(space):
    return space.enumerate()


def small_space() -> Space:
    return Space([Knob("a", (1, 2, 3, 4)), Knob("b", ("x", "y", "z"))],
                 [Constraint("not 4z", ("a", "b"), lambda a, b: not (a == 4 and b == "z"))])


def drain(strategy, batch):
    out, sizes = [], []
    while True:
        got = strategy.propose(batch)
        sizes.append(len(got))
        if not got:
            return out, sizes
        assert len(got) <= batch
        out += got


def test_registry():
    assert {"exhaustive", "random"} <= set(STRATEGIES)
    assert STRATEGIES["exhaustive"] is Exhaustive
    assert STRATEGIES["random"] is RandomSearch


def test_exhaustive_every_config_once_in_order(space, configs):
    batch = 64
    s = make_strategy("exhaustive", space)
    assert isinstance(s, Exhaustive)
    got, sizes = drain(s, batch)
    assert got == configs                      # same configs, same (enumeration) order
    assert len({config_hash(c) for c in got}) == len(configs) > 30000
    assert all(n == batch for n in sizes[:-2])
    assert sizes[-1] == 0
    assert s.propose(batch) == []              # stays exhausted


def test_exhaustive_small_space():
    sp = small_space()
    s = make_strategy("exhaustive", sp)
    assert s.propose(5) == sp.enumerate()[:5]
    assert s.propose(100) == sp.enumerate()[5:]
    assert len(sp.enumerate()) == 11
    assert s.propose(1) == []


def test_exhaustive_propose_zero_returns_nothing():
    sp = small_space()
    s = make_strategy("exhaustive", sp)
    assert s.propose(0) == []          # "Up to n configs": n = 0 -> none
    assert s.propose(3) == sp.enumerate()[:3]


def test_random_propose_zero_returns_nothing():
    s = make_strategy("random", small_space(), seed=1)
    assert s.propose(0) == []
    assert len(s.propose(100)) == 11


@pytest.fixture(scope="module")
def random_seed0(space):
    """Everything the seed-0 random search proposes, in batches of 64: (configs, batch sizes)."""
    s = make_strategy("random", space, seed=0)
    assert isinstance(s, RandomSearch)
    got, sizes = drain(s, 64)
    assert s.propose(64) == []
    return got, sizes


def test_random_every_valid_config_once(space, configs, random_seed0):
    got, sizes = random_seed0
    assert sizes[-1] == 0 and all(n == 64 for n in sizes[:-2])
    hashes = [config_hash(c) for c in got]
    assert len(hashes) == len(set(hashes)) == len(configs)       # no repeats, nothing missing
    assert set(hashes) == {config_hash(c) for c in configs}       # set equality with enumerate()
    assert all(space.contains(c) for c in got[:200])
    assert got != configs                                         # actually shuffled


def test_random_order_depends_on_seed_only(space, random_seed0):
    a0 = [config_hash(c) for c in random_seed0[0]]
    # same seed: same order, whatever the batch sizes
    assert [config_hash(c) for c in drain(make_strategy("random", space, seed=0), 997)[0]] == a0
    a1 = [config_hash(c) for c in drain(make_strategy("random", space, seed=1), 64)[0]]
    assert a0 != a1
    assert a0[:50] != a1[:50]
    assert sorted(a0) == sorted(a1)


def test_random_is_not_enumeration_prefix(configs, random_seed0):
    first = random_seed0[0][:100]
    enumeration = {config_hash(c) for c in configs[:100]}
    # a uniform sample of 100 of ~34k configs shares almost nothing with the first 100 enumerated
    assert len({config_hash(c) for c in first} & enumeration) < 10


def test_random_uses_given_rng_deterministically():
    sp = small_space()
    a = RandomSearch(sp, random.Random(7)).propose(11)
    b = RandomSearch(sp, random.Random(7)).propose(11)
    assert a == b
    assert sorted(map(config_hash, a)) == sorted(map(config_hash, sp.enumerate()))


def test_observe_records_history():
    s = make_strategy("exhaustive", small_space())
    cfg = s.propose(1)[0]
    s.observe(cfg, "m")
    assert s.history == [(cfg, "m")]


@pytest.mark.parametrize("name", ["annealing", "Random", "", "exhaustive "])
def test_unknown_strategy(name):
    with pytest.raises(ValueError) as e:
        make_strategy(name, small_space())
    msg = str(e.value)
    assert repr(name) in msg
    for choice in STRATEGIES:
        assert repr(choice) in msg
