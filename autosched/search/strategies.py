"""Exhaustive and random search."""

from __future__ import annotations

import random

from autosched.space import Space


class Strategy:
    name = ""

    def __init__(self, space: Space, rng: random.Random):
        self.space = space
        self.rng = rng
        self.history: list[tuple[dict, object]] = []

    def propose(self, n: int) -> list[dict]:
        """Up to n configs not proposed before; [] when the strategy has nothing left."""
        raise NotImplementedError

    def observe(self, config: dict, measurement) -> None:
        self.history.append((config, measurement))


class Exhaustive(Strategy):
    """Every config of the space, in enumeration order."""

    name = "exhaustive"

    def __init__(self, space, rng):
        super().__init__(space, rng)
        self._it = iter(space)

    def propose(self, n):
        out = []
        for cfg in self._it:
            out.append(cfg)
            if len(out) == n:
                break
        return out


class RandomSearch(Strategy):
    """Uniform sampling without replacement."""

    name = "random"

    def __init__(self, space, rng):
        super().__init__(space, rng)
        # the spaces here enumerate in about a second; a shuffled list is exact sampling without
        # replacement, where repeated sample() calls would need a seen-set and rejection
        self._order = space.enumerate()
        rng.shuffle(self._order)

    def propose(self, n):
        out = self._order[-n:] if n else []
        del self._order[len(self._order) - len(out):]
        return out[::-1]


STRATEGIES = {s.name: s for s in (Exhaustive, RandomSearch)}


def make_strategy(name: str, space: Space, seed: int = 0) -> Strategy:
    if name not in STRATEGIES:
        raise ValueError(f"unknown search strategy {name!r}; choose from {sorted(STRATEGIES)}")
    return STRATEGIES[name](space, random.Random(seed))
