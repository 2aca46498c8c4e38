"""Evolutionary search (with and without a cost model) on a small space with a known optimum."""

import random

import pytest

from autosched.measure.result import Measurement, Status
from autosched.search import make_strategy
from autosched.space import Constraint, Knob, Space, config_hash


def bowl_space():
    knobs = [Knob(f"x{i}", tuple(range(8))) for i in range(4)]
    return Space(knobs, [Constraint("x0 + x1 <= 12", ("x0", "x1"), lambda a, b: a + b <= 12)])


def cost(c):          # one optimum at (5, 2, 6, 3)
    return 1.0 + (c["x0"] - 5) ** 2 + (c["x1"] - 2) ** 2 + (c["x2"] - 6) ** 2 + (c["x3"] - 3) ** 2


@pytest.mark.parametrize("name", ["evolutionary", "evolutionary-model"])
def test_proposals_are_valid_new_and_reach_the_optimum(name):
    space = bowl_space()
    s = make_strategy(name, space, seed=1, workload_params={"n": 4}, prior=[])
    seen, best = set(), float("inf")
    for _ in range(12):
        batch = s.propose(32)
        assert batch
        for c in batch:
            assert space.contains(c)
            h = config_hash(c)
            assert h not in seen
            seen.add(h)
            t = cost(c)
            best = min(best, t)
            s.observe(c, Measurement(Status.OK, t, t, 0.0, 0.0))
    # 384 of 3,936 configs: a local search on a bowl finds the bottom
    assert best == 1.0


def test_excluded_configs_are_never_proposed():
    space = bowl_space()
    every = space.enumerate()
    excluded = {config_hash(c) for c in random.Random(0).sample(every, 3000)}
    s = make_strategy("evolutionary", space, seed=0, workload_params={"n": 4}, prior=[], exclude=excluded)
    got = []
    for _ in range(40):
        b = s.propose(50)
        if not b:
            break
        got += b
        for c in b:
            s.observe(c, Measurement(Status.OK, cost(c), cost(c), 0.0, 0.0))
    assert not {config_hash(c) for c in got} & excluded
    assert len({config_hash(c) for c in got}) == len(got)


@pytest.mark.parametrize("name", ["evolutionary", "evolutionary-model"])
def test_a_union_of_templates_with_different_knobs_breeds_without_error(name):
    """Parents from two members of a SpaceUnion (one has knob x, the other y): crossover stays within
    a member (it raised KeyError when a parent lacked the other's knob: the per-instance tunings of
    the DietCode bench died of it on 2026-11-26), every proposal is a config of one member, and
    both members keep being proposed."""
    from autosched.space import SpaceUnion
    union = SpaceUnion({"a": Space([Knob("x", tuple(range(16))), Knob("s", (1, 2))]),
                        "b": Space([Knob("y", tuple(range(16))), Knob("s", (1, 2))])})

    def t(c):               # both members good: the parents hold both templates
        return 1.0 + abs(c.get("x", c.get("y")) - 7) + c["s"]
    s = make_strategy(name, union, seed=3, workload_params={"n": 4}, prior=[])
    fams = set()
    for _ in range(10):
        for c in s.propose(8):
            assert union.contains(c)
            fams.add(c["template"])
            s.observe(c, Measurement(Status.OK, t(c), t(c), 0.0, 0.0))
    assert fams == {"a", "b"}
