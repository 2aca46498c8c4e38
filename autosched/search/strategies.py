"""Exhaustive and random search."""

from __future__ import annotations

import random

import numpy as np

from autosched.space import Space, config_hash


class Strategy:
    name = ""

    def __init__(self, space: Space, rng: random.Random, **context):
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

    def __init__(self, space, rng, **context):
        super().__init__(space, rng)
        self._it = iter(space)

    def propose(self, n):
        out = []
        if n <= 0:
            return out
        for cfg in self._it:
            out.append(cfg)
            if len(out) == n:
                break
        return out


class RandomSearch(Strategy):
    """Uniform sampling without replacement."""

    name = "random"

    def __init__(self, space, rng, **context):
        super().__init__(space, rng)
        # the spaces here enumerate in about a second; a shuffled list is exact sampling without
        # replacement, where repeated sample() calls would need a seen-set and rejection
        self._order = space.enumerate()
        rng.shuffle(self._order)

    def propose(self, n):
        out = self._order[-n:] if n else []
        del self._order[len(self._order) - len(out):]
        return out[::-1]


class ModelGuided(Strategy):
    """Measure what a cost model (gradient-boosted trees, refit before every batch on everything
    measured so far, other shapes of the template included) predicts fastest; a fraction of each
    batch is random so the model keeps seeing the rest of the space."""

    name = "model"

    def __init__(self, space, rng, workload_params: dict | None = None, prior=(), explore: float = 0.2,
                 exclude=(), **context):
        from autosched.search.cost_model import CostModel, Featurizer
        super().__init__(space, rng)
        self.params = dict(workload_params or {})
        self.prior = list(prior)           # (config, workload params, time us or inf)
        self.explore = explore
        self.model = CostModel(Featurizer(space, self.params), seed=rng.randrange(1 << 30))
        skip = set(exclude)
        self._left = [c for c in space.enumerate() if config_hash(c) not in skip]
        rng.shuffle(self._left)
        self.fits = 0

    def observe(self, config, measurement):
        super().observe(config, measurement)
        t = measurement.median_us if measurement.ok else float("inf")
        self.prior.append((config, self.params, t))

    def propose(self, n):
        if not self._left or n <= 0:
            return []
        if not self.model.fit(self.prior):
            picks = list(range(min(n, len(self._left))))
        else:
            self.fits += 1
            pred = self.model.predict(self._left)
            n_model = max(1, round(n * (1 - self.explore)))
            picks = [int(i) for i in np.argsort(pred)[:n_model]]
            taken = set(picks)
            rest = [i for i in range(len(self._left)) if i not in taken]
            picks += self.rng.sample(rest, min(n - len(picks), len(rest)))
        chosen = [self._left[i] for i in picks]
        for i in sorted(picks, reverse=True):
            self._left.pop(i)
        return chosen


STRATEGIES = {s.name: s for s in (Exhaustive, RandomSearch, ModelGuided)}


def make_strategy(name: str, space: Space, seed: int = 0, **context) -> Strategy:
    """context: workload_params and prior samples, for strategies that learn across shapes."""
    if name not in STRATEGIES:
        raise ValueError(f"unknown search strategy {name!r}; choose from {sorted(STRATEGIES)}")
    return STRATEGIES[name](space, random.Random(seed), **context)
