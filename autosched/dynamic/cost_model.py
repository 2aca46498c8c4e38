"""The micro-kernel cost model: a [micro-kernels x instances] matrix of predicted throughput.

For a measured micro-kernel the prediction starts from its two probes (measurer.py): t1, the time of
a grid of #SMs (one block an SM), and t2, of a full wave (blocks_per_sm on every SM).  An instance M
runs T = ceil(M/BM) * ceil(N/BN) tiles: floor(T / wave) full waves at t2 each, then a last partial
wave whose time goes from t1 (at most one block an SM) to t2 (full) with the blocks an SM holds in
it.  Padding waste is in T already (a tile computes BM rows whatever M is).

A learned correction (gradient-boosted trees over waves, the last wave's fill, padding waste in M and
N, occupancy, threads, unroll, local padding) multiplies that by what measurements of real instances
(the verification step's) showed, where there are any.

A split-K micro-kernel (hgemm_wgmma_splitk) runs T x split_k work units (tile, K slice) on its
persistent grid, and its probes time waves of work units (measurer.py): its waves are T x split_k /
#SMs, so at a small M it fills the SMs that its T tiles alone would leave idle.  hgemm_stream's CTAs
are (tile, K slice) units too, its tile mt x BN (sketch.tile_of), its waves as hgemm_dyn's.

For micro-kernels not yet measured, `ProbeModel` predicts the two probes from the config (trained on
those measured so far, a roofline guess before that), so evolutionary search can rank candidates.
"""

from __future__ import annotations

import math

import numpy as np

from autosched.dynamic.measurer import MicroKernel
from autosched.dynamic.measurer import compile_report
from autosched.dynamic.sketch import tile_of
from autosched.templates.micro_kernels import micro_kernel

# sklearn is imported inside functions: slow to import, and only a few functions need it


def tiles(config: dict, M: int, N: int, family: str = "hgemm_dyn") -> int:
    bm, bn = tile_of(family, config)
    return -(-M // bm) * -(-N // bn)


def work_units(config: dict, M: int, N: int, family: str = "hgemm_dyn") -> int:
    """What the grid runs: tiles, each cut in split_k K slices where the config splits K."""
    return tiles(config, M, N, family) * config.get("split_k", 1)


def wave_model_us(t1: float, t2: float, bps: int, sm_count: int, T: int) -> float:
    """Time of T tiles from the probes (t1: #SMs blocks, t2: bps x #SMs blocks)."""
    return float(wave_model_us_many(t1, t2, bps, sm_count, [T])[0])


def wave_model_us_many(t1: float, t2: float, bps: int, sm_count: int, T) -> np.ndarray:
    """wave_model_us over an array of tile counts: floor(T / wave) full waves at t2, then a last
    partial wave from t1 (one block an SM) to t2 (full) by the blocks the busiest SM holds in it."""
    bps = max(1, bps)
    T = np.asarray(T, dtype=np.int64)
    full, rem = np.divmod(T, bps * sm_count)
    resident = -(-rem // sm_count)            # blocks the busiest SM holds in the last wave
    last = np.full(T.shape, float(t1)) if bps == 1 else t1 + (t2 - t1) * (resident - 1) / (bps - 1)
    return full * t2 + np.where(rem > 0, last, 0.0)


def _quiet_sklearn():
    """sklearn's per-call checks (parameter validation, finiteness) off: the search fits and queries
    its models hundreds of times on a few dozen rows, where those checks were most of a dynamic run's
    search time; the inputs are our own finite feature arrays."""
    import sklearn
    return sklearn.config_context(assume_finite=True, skip_parameter_validation=True)


def features(mk: MicroKernel, M: int, N: int, sm_count: int) -> list[float]:
    """Waves (of work units), the last wave's fill, padding waste in M and N, occupancy, threads,
    unroll, local padding, tile sizes, M, log2 split_k (0 where K is not split) and, last, the
    template (its template_code: wgmma's tiles pad in TMA's zero fill, as local_pad 1 does, and their
    persistent loop walks the waves inside one launch; the stream's zero-filled ring pads too)."""
    c, bps = mk.config, max(1, mk.report.blocks_per_sm)
    fam = getattr(mk, "family", "hgemm_dyn")
    t = micro_kernel(fam)
    bm, bn = t.tile(c)
    T = work_units(c, M, N, fam)
    wave = bps * sm_count
    rem = T % wave
    return [math.log2(T / wave + 1e-9) if T else 0.0, (rem / wave) if rem else 1.0,
            1.0 - M / (-(-M // bm) * bm), 1.0 - N / (-(-N // bn) * bn),
            float(bps), math.log2(t.threads(c)), math.log2(t.unroll(c)),
            float(c.get("local_pad", 1)), math.log2(bm), math.log2(bn), math.log2(M), math.log2(c.get("split_k", 1)),
            t.template_code]


class MicroKernelCostModel:
    """predict_us(kernels, Ms) -> [kernels x Ms] times; throughput() the same as TFLOP/s."""

    def __init__(self, dw, device):
        self.dw, self.device = dw, device
        self._model = None
        self._bias = 0.0
        self.observations: list[tuple[MicroKernel, int, float]] = []

    def analytic_us(self, mk: MicroKernel, M: int) -> float:
        """The wave model of the two grid probes; where the row probe was taken (measurer.py), no
        partial first wave is predicted faster than it: such an M streams all of W at least once,
        which the row probe does and the grid probes may not."""
        return float(self.analytic_us_many(mk, [M])[0])

    def analytic_us_many(self, mk: MicroKernel, Ms) -> np.ndarray:
        """analytic_us at every M of Ms, as one array operation."""
        g1, g2 = mk.grids
        T = work_units(mk.config, np.asarray(Ms, dtype=np.int64), self.dw.N, getattr(mk, "family", "hgemm_dyn"))
        bps = mk.report.blocks_per_sm
        us = wave_model_us_many(mk.probes[g1], mk.probes[g2], bps, self.device.sm_count, T)
        row = getattr(mk, "row_us", None)
        if row is not None:
            us = np.where(T <= max(1, bps) * self.device.sm_count, np.maximum(us, row), us)
        return us

    def fit(self, observations) -> None:
        """observations: (micro-kernel, M, measured us) of real instances; learns log(measured /
        analytic) from the features.  Few rows: their median ratio only."""
        self.observations = [o for o in observations if o[2] == o[2] and o[2] > 0]
        if not self.observations:
            self._model, self._bias = None, 0.0
            return
        X = np.array([features(mk, M, self.dw.N, self.device.sm_count) for mk, M, _ in self.observations])
        y = np.array([math.log(us / self.analytic_us(mk, M)) for mk, M, us in self.observations])
        self._bias = float(np.median(y))
        if len(y) < 12:
            self._model = None
            return
        from sklearn.ensemble import GradientBoostingRegressor
        with _quiet_sklearn():
            self._model = GradientBoostingRegressor(n_estimators=60, max_depth=2, learning_rate=0.1,
                                                    subsample=1.0, random_state=0).fit(X, y - self._bias)

    def correction(self, mk: MicroKernel, Ms) -> np.ndarray:
        if self._model is None:
            return np.full(len(Ms), math.exp(self._bias))
        X = np.array([features(mk, M, self.dw.N, self.device.sm_count) for M in Ms])
        with _quiet_sklearn():
            return np.exp(self._model.predict(X) + self._bias)

    def predict_us(self, kernels, Ms) -> np.ndarray:
        Ms = list(Ms)
        out = np.empty((len(kernels), len(Ms)))
        for i, mk in enumerate(kernels):
            out[i] = self.analytic_us_many(mk, Ms)
            out[i] *= self.correction(mk, Ms)
        return out

    def throughput(self, kernels, Ms) -> np.ndarray:
        """TFLOP/s of each kernel on each M: the [micro-kernels x instances] matrix."""
        Ms = list(Ms)
        flops = np.array([2.0 * M * self.dw.N * self.dw.K for M in Ms])
        return flops[None, :] / (self.predict_us(kernels, Ms) * 1e-6) / 1e12


class ProbeModel:
    """Predicts an unmeasured config's probes (t1, t2) and blocks per SM, for search: one model per
    template (family), fitted on that template's measured micro-kernels."""

    # the roofline guess before a family has 8 measurements: its template's `roof` (an SM's tensor-core
    # rate and the tile intensity reaching it); split-K's work unit is a tile over K / split_k, plus its
    # partials written and summed, PARTIAL_BW bytes/s an SM's share of the memory bandwidth
    PARTIAL_BW = 3.0e12 / 132

    def __init__(self, dw, device, template):
        self.dw, self.device = dw, device
        ts = template if isinstance(template, (list, tuple)) else [template]
        self.templates = {t.family: t for t in ts}
        self.template = ts[0]
        self._models: dict = {}

    def _x(self, c: dict, family: str = "hgemm_dyn") -> list[float]:
        return self.templates[family].probe_features(c, self.dw.largest, self.device)

    def fit(self, measured: list[MicroKernel]) -> None:
        from sklearn.ensemble import GradientBoostingRegressor
        self._models = {}
        for fam in self.templates:
            ok = [mk for mk in measured if mk.ok and mk.family == fam]
            if len(ok) < 8:
                continue
            X = np.array([self._x(mk.config, fam) for mk in ok])
            with _quiet_sklearn():
                self._models[fam] = [GradientBoostingRegressor(n_estimators=80, max_depth=3, random_state=0).fit(
                    X, np.array([math.log(mk.probes[mk.grids[which]]) for mk in ok])) for which in (0, 1)]

    def guess(self, config: dict, family: str | None = None) -> MicroKernel:
        """A MicroKernel whose probes are predicted (estimated compile report)."""
        family = family or self.template.family
        return self.guess_many([(family, config)])[0]

    def guess_many(self, pairs) -> list[MicroKernel]:
        """guess() of each (family, config), the fitted models queried once per family."""
        pairs = list(pairs)
        out: list[MicroKernel] = []
        reports = [compile_report(self.templates[f], c, self.dw.largest, self.device) for f, c in pairs]
        predicted: dict[int, tuple[float, float]] = {}
        by_family: dict[str, list[int]] = {}
        for i, (f, _) in enumerate(pairs):
            by_family.setdefault(f, []).append(i)
        for fam, idx in by_family.items():
            models = self._models.get(fam)
            if models is None:
                continue
            X = np.array([self._x(pairs[i][1], fam) for i in idx])
            with _quiet_sklearn():
                t1s, t2s = (np.exp(m.predict(X)) for m in models)
            for i, a, b in zip(idx, t1s, t2s):
                predicted[i] = (float(a), float(b))
        for i, ((family, c), rep) in enumerate(zip(pairs, reports)):
            g1, g2 = self.device.sm_count, max(1, rep.blocks_per_sm) * self.device.sm_count
            if i in predicted:
                t1, t2 = predicted[i]
            else:
                peak, ai_full = self.templates[family].roof
                bm, bn = tile_of(family, c)
                ai = bm * bn / (bm + bn)
                sk = c.get("split_k", 1)
                t1 = 2.0 * bm * bn * self.dw.K / sk / (peak * min(1.0, ai / ai_full)) * 1e6 + 3.0
                if sk > 1:      # its partial written, and the last slice's read of the others'
                    t1 += bm * bn * 4 * (2 - 1 / sk) / self.PARTIAL_BW * 1e6
                t2 = t1 * max(1, rep.blocks_per_sm) * 0.6 + 3.0
            out.append(MicroKernel(dict(c), rep, {g1: t1, g2: max(t1, t2)} if g2 != g1 else {g1: t1}, family=family))
        return out
