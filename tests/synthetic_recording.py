"""A synthetic recording of GemvQ4F16(4096, 4096) on the test H100, for tests that need the replay
runner without real GPU data.

Every config of the pruned space gets a deterministic pseudo-random median (all distinct, so the
best is unique), min = 0.98 * median, spread 0.1.  About 3% are Status.WRONG and 1%
COMPILE_ERROR, and these are rigged to be *faster* than every ok config (half of the compile errors
keep NaN times, the realistic case), so a tuner that lets a failed config win is caught.

Import the `synthetic` fixture into a test module (`from synthetic_recording import synthetic`);
the data are built once per session (module-level cache) however many modules import it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from autosched.device import DeviceInfo
from autosched.measure.recording import Recording
from autosched.measure.result import Measurement, Status
from autosched.space import config_hash
from autosched.templates import GemvQ4F16Template
from autosched.workloads import GemvQ4F16

SHAPE = "4096x4096"
FILE_NAME = "x.json.gz"
SEED = 20240601
WRONG_FRACTION = 0.03
COMPILE_ERROR_FRACTION = 0.01


@dataclass
class Synthetic:
    workload: GemvQ4F16
    template: GemvQ4F16Template
    device: DeviceInfo
    configs: list[dict]                 # the space, in enumeration order
    original: Recording                 # as built (unrounded times), never saved-and-loaded
    path: Path                          # the saved recording: <dir>/x.json.gz
    wrong: set[str] = field(default_factory=set)          # config hashes
    compile_error: set[str] = field(default_factory=set)
    _loaded: Recording | None = None

    @property
    def dir(self) -> Path:
        return self.path.parent

    def load(self) -> Recording:
        """The Recording read back from disk (what the replay runner and the CLI see); read once
        per session and shared, so tests must not modify it."""
        if self._loaded is None:
            self._loaded = Recording.load(self.path)
        return self._loaded

    def best_ok(self, recording: Recording, configs=None) -> tuple[dict, Measurement]:
        """(config, measurement) of the fastest ok config among `configs` (default: all)."""
        pool = configs if configs is not None else self.configs
        cands = [(recording.lookup(c), c) for c in pool]
        cands = [(m, c) for m, c in cands if m is not None and m.ok]
        m, c = min(cands, key=lambda mc: mc[0].median_us)
        return c, m


def build(directory: Path, device: DeviceInfo) -> Synthetic:
    workload = GemvQ4F16.from_shape(SHAPE)
    template = GemvQ4F16Template()
    space = template.space(workload, device)
    configs = space.enumerate()
    n = len(configs)
    rng = np.random.default_rng(SEED)

    # distinct medians 20.000 .. ~89 us in a random order: distinct even after rounding to 4 digits
    medians = 20.0 + rng.permutation(n) * 0.002
    perm = rng.permutation(n)
    n_wrong, n_ce = round(WRONG_FRACTION * n), round(COMPILE_ERROR_FRACTION * n)
    wrong_idx = perm[:n_wrong]
    ce_idx = perm[n_wrong:n_wrong + n_ce]
    # failed configs are the fastest of all: WRONG 5..15 us, compile errors 1..5 us or NaN
    medians[wrong_idx] = 5.0 + rng.permutation(n_wrong) * (10.0 / n_wrong)
    ce_times = 1.0 + rng.permutation(n_ce) * (4.0 / n_ce)
    ce_times[: n_ce // 2] = np.nan
    medians[ce_idx] = ce_times
    status = np.array([Status.OK] * n, dtype=object)
    status[wrong_idx] = Status.WRONG
    status[ce_idx] = Status.COMPILE_ERROR
    regs = rng.integers(16, 128, size=n)

    rec = Recording(workload.key, template.family, device, space.names,
                    protocol={"warmup": 10, "repeats": 50}, versions={"autosched": "test", "nvrtc": "13.0"},
                    date="2025-06-01", space_size=n)
    syn = Synthetic(workload, template, device, configs, rec, directory / FILE_NAME)
    for i, cfg in enumerate(configs):
        med = float(medians[i])
        st = status[i]
        if st == Status.OK:
            m = Measurement(Status.OK, 0.98 * med, med, 0.1, float(rng.uniform(1e-4, 1e-2)),
                            registers=int(regs[i]), smem_bytes=int(64 * (i % 7)), spills=0)
        elif st == Status.WRONG:
            m = Measurement(Status.WRONG, 0.98 * med, med, 0.1, float(rng.uniform(1.0, 50.0)),
                            error=f"max abs err {i} (output rms 1)", registers=int(regs[i]))
            syn.wrong.add(config_hash(cfg))
        else:
            nan = med != med
            m = Measurement(Status.COMPILE_ERROR, *((med * 0.98, med, 0.1) if not nan else ()),
                            error=f"nvrtc: error #{i}: something did not compile")
            syn.compile_error.add(config_hash(cfg))
        rec.add(cfg, m)
    rec.save(syn.path)
    return syn


_CACHE: dict[str, Synthetic] = {}


@pytest.fixture(scope="session")
def synthetic(tmp_path_factory, h100) -> Synthetic:
    if "syn" not in _CACHE:
        _CACHE["syn"] = build(tmp_path_factory.mktemp("synthetic") / "recordings", h100)
    return _CACHE["syn"]
