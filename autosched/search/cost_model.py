"""A learned cost model: gradient-boosted trees on config features, predicting log(time).

Features are the knobs (log2 of numeric values, one column per categorical value), the workload's
parameters, so measurements of other shapes of the same template train it too, and what the
template derives from a config on a shape (Template.derived_features: blocks, waves, occupancy,
...), which no single knob says.
"""

from __future__ import annotations

import math

import numpy as np

# sklearn and threadpoolctl are imported inside functions: slow to import, and only a few functions need them;
# the command line imports this module at start-up


class Featurizer:
    def __init__(self, space, workload_params: dict, derive=None):
        """derive(config, params) -> {name: value >= 0}: the template's derived features."""
        self.space = space
        self.params = dict(workload_params)
        self.derive = derive
        self._rows: dict = {}       # a strategy asks for the same configs' rows batch after batch
        self.columns: list[tuple[str, object]] = []
        for k in space.knobs:
            if all(isinstance(v, int) for v in k.values):
                self.columns.append((k.name, None))
            else:
                self.columns += [(k.name, v) for v in k.values]
        self.param_names = sorted(self.params)

    def row(self, config: dict, params: dict | None = None) -> list[float]:
        p = self.params if params is None else params
        key = (tuple(sorted(config.items())), tuple(sorted(p.items())))
        hit = self._rows.get(key)
        if hit is None:
            hit = self._rows[key] = self._row(config, p)
        return hit

    def _row(self, config: dict, p: dict) -> list[float]:
        out = []
        for name, value in self.columns:
            v = config.get(name)
            if v is None:       # a knob of another template of a union: absent from this config
                out.append(0.0)
                continue
            out.append(math.log2(v + 1) if value is None else float(v == value))
        # +1: flags such as trans_a are 0; a flag a key leaves out at its default (hgemm's a_col, bf16)
        # is 0, so a measurement of another layout still makes a row
        out += [math.log2(p.get(n, 0) + 1) for n in self.param_names]
        if self.derive is not None:
            d = self.derive(config, p)
            out += [math.log2(d[k] + 1) for k in sorted(d)]
        return out

    def matrix(self, configs, params: dict | None = None) -> np.ndarray:
        return np.asarray([self.row(c, params) for c in configs], dtype=np.float64)


class CostModel:
    """Fit on (config, params, time) triples; predict time for configs of one workload.

    scale(params) -> us, optional: the model learns time / scale (with bytes moved as the scale,
    how far a config falls short of streaming the shape's bytes), which carries over to shapes of
    another size far better than raw time, since trees cannot extrapolate a time they never saw."""

    def __init__(self, featurizer: Featurizer, seed: int = 0, scale=None):
        self.f = featurizer
        self.seed = seed
        self.scale = scale
        self.model = None

    def fit(self, samples: list[tuple[dict, dict, float]]) -> bool:
        """samples: (config, workload params, time in us; inf for a failed config)."""
        from sklearn.ensemble import HistGradientBoostingRegressor
        ok = [s for s in samples if math.isfinite(s[2])]
        if len(ok) < 8:
            return False
        X = np.asarray([self.f.row(c, p) for c, p, _ in samples])
        t = np.asarray([s[2] for s in samples], dtype=np.float64)
        if self.scale is not None:
            t = t / np.asarray([self.scale(p) for _, p, _ in samples])
        # a failed config is modelled as twice the slowest working one: avoided, not infinite
        finite = np.isfinite(t)
        y = np.log(np.where(finite, t, 2 * t[finite].max()))
        self.model = HistGradientBoostingRegressor(max_iter=200, learning_rate=0.1, max_leaf_nodes=31,
                                                   random_state=self.seed)
        with _one_thread():
            self.model.fit(X, y)
        return True

    def predict(self, configs: list[dict], params: dict | None = None) -> np.ndarray:
        """Predicted us of each config on the featurizer's shape, or on `params` (another shape of
        the same template: what a model trained on other shapes predicts for one never measured)."""
        return self.predict_rows(self.f.matrix(configs, params), params)

    def predict_rows(self, X: np.ndarray, params: dict | None = None) -> np.ndarray:
        """predict for configs already made into feature rows (Featurizer.matrix) on `params`'s shape:
        a search that ranks the same configs batch after batch makes their rows once."""
        if self.model is None:
            raise RuntimeError("predict before a successful fit")
        with _one_thread():
            pred = np.exp(self.model.predict(X))
        return pred * self.scale(self.f.params if params is None else params) if self.scale is not None else pred


def _one_thread():
    """OpenMP confined to one thread for the model's fit and predict: with a thread per core, two
    tuning processes on one machine spin against each other and each runs 40x slower (2 cores,
    2026-11-23); the model is small enough that one thread costs a single run little."""
    from threadpoolctl import threadpool_limits
    return threadpool_limits(limits=1, user_api="openmp")
