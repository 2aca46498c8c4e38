"""Exhaustive and random search."""

from __future__ import annotations

import random

import numpy as np

from autosched.search.cost_model import CostModel, Featurizer
from autosched.space import Space, config_hash


class Strategy:
    name = ""
    # True: learns from what is measured (prior samples of every shape) and never proposes a config
    # the caller marks measured (`exclude`); False: proposes in its own order, measured ones included
    learns = False

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
    learns = True

    def __init__(self, space, rng, workload_params: dict | None = None, prior=(), explore: float = 0.2,
                 exclude=(), derive=None, scale=None, **context):
        super().__init__(space, rng)
        self.params = dict(workload_params or {})
        self.prior = list(prior)           # (config, workload params, time us or inf)
        self.explore = explore
        self.model = CostModel(Featurizer(space, self.params, derive), seed=rng.randrange(1 << 30), scale=scale)
        skip = set(exclude)
        self._left = [c for c in space.enumerate() if config_hash(c) not in skip]
        rng.shuffle(self._left)
        self._rows = None       # the feature rows of _left, in its order: made once, at the first fit
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
            if self._rows is None:
                # featurizing the whole space took half of a 500-trial tune's own time, made anew
                # every batch (bench/results/tuner-overhead-cpu-2026-11-28.json)
                self._rows = self.model.f.matrix(self._left)
            pred = self.model.predict_rows(self._rows)
            n_model = max(1, round(n * (1 - self.explore)))
            picks = [int(i) for i in np.argsort(pred)[:n_model]]
            taken = set(picks)
            rest = [i for i in range(len(self._left)) if i not in taken]
            picks += self.rng.sample(rest, min(n - len(picks), len(rest)))
        chosen = [self._left[i] for i in picks]
        for i in sorted(picks, reverse=True):
            self._left.pop(i)
        if self._rows is not None:
            self._rows = np.delete(self._rows, picks, axis=0)
        return chosen


class Evolutionary(Strategy):
    """Evolutionary search: a random first generation, then children of the fastest configs so
    far (a one-knob mutation, or a uniform crossover of two parents that satisfies the rules).
    With a cost model (`evolutionary-model`, as TVM's auto-schedulers do), many children are bred
    and the model ranks them; without one, children are measured as bred."""

    name = "evolutionary"
    learns = True
    use_model = False
    POPULATION = 64
    PARENTS = 16
    BREED = 8          # children bred per config proposed when a model ranks them

    def __init__(self, space, rng, workload_params: dict | None = None, prior=(), exclude=(), derive=None,
                 scale=None, **context):
        super().__init__(space, rng)
        self.params = dict(workload_params or {})
        self.seen = set(exclude)
        self.prior = list(prior)
        # (time or inf, config) of this workload, earlier runs included: the first parents
        self.scored: list[tuple[float, dict]] = [(t, c) for c, p, t in self.prior if p == self.params]
        self.model = None
        if self.use_model:
            self.model = CostModel(Featurizer(space, self.params, derive), seed=rng.randrange(1 << 30),
                                   scale=scale)

    def observe(self, config, measurement):
        super().observe(config, measurement)
        t = measurement.median_us if measurement.ok else float("inf")
        self.scored.append((t, config))
        self.prior.append((config, self.params, t))

    def _random(self, n):
        out = []
        for _ in range(50 * n):
            if len(out) == n:
                break
            c = self.space.sample(self.rng)
            h = config_hash(c)
            if h not in self.seen:
                self.seen.add(h)
                out.append(c)
        return out

    def _child(self, parents):
        if len(parents) > 1 and self.rng.random() < 0.5:
            a, b = self.rng.sample(parents, 2)
            # crossover within one template: in a SpaceUnion two parents of different members have
            # different knobs (a stream config has no "bm"), and there is nothing to mix
            if a.keys() == b.keys():
                c = {k: (a if self.rng.random() < 0.5 else b)[k] for k in a}
                if self.space.contains(c):
                    return c
        return self.space.mutate(self.rng.choice(parents), self.rng)

    def propose(self, n):
        if n <= 0:
            return []
        ok = sorted(((t, c) for t, c in self.scored if t != float("inf")), key=lambda tc: tc[0])
        if len(ok) < min(self.PARENTS, self.POPULATION // 4) or len(self.scored) < self.POPULATION:
            return self._random(n)
        parents = [c for _, c in ok[:self.PARENTS]]
        want = n * (self.BREED if self.model is not None else 1)
        children, hashes = [], set()
        for _ in range(20 * want):
            if len(children) == want:
                break
            c = self._child(parents)
            if c is None:
                continue
            h = config_hash(c)
            if h in self.seen or h in hashes:
                continue
            hashes.add(h)
            children.append(c)
        if self.model is not None and children and self.model.fit(self.prior):
            order = np.argsort(self.model.predict(children))
            children = [children[i] for i in order]
        chosen = children[:n]
        for c in chosen:
            self.seen.add(config_hash(c))
        return chosen + self._random(n - len(chosen))     # top up when the neighbourhood is spent


class EvolutionaryModel(Evolutionary):
    name = "evolutionary-model"
    use_model = True


STRATEGIES = {s.name: s for s in (Exhaustive, RandomSearch, ModelGuided, Evolutionary, EvolutionaryModel)}


def make_strategy(name: str, space: Space, seed: int = 0, **context) -> Strategy:
    """context: workload_params and prior samples, for strategies that learn across shapes."""
    if name not in STRATEGIES:
        raise ValueError(f"unknown search strategy {name!r}; choose from {sorted(STRATEGIES)}")
    return STRATEGIES[name](space, random.Random(seed), **context)
