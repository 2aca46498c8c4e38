"""What a runner returns for one config."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum

import numpy as np


class Status(str, Enum):
    OK = "ok"
    WRONG = "wrong"                  # ran, but the output failed the check against the reference
    COMPILE_ERROR = "compile_error"
    LAUNCH_ERROR = "launch_error"    # refused by the driver (resources) or faulted
    TIMEOUT = "timeout"              # hung: the worker was killed
    CRASH = "crash"                  # the worker process died
    NOT_RECORDED = "not_recorded"    # replay: the data set has no measurement for this config


@dataclass
class Measurement:
    status: Status
    min_us: float = float("nan")
    median_us: float = float("nan")
    spread_us: float = float("nan")     # p90 - p10 of the timed runs
    max_abs_err: float = float("nan")
    error: str = ""
    registers: int = 0
    smem_bytes: int = 0                 # static + dynamic per block
    spills: int = 0
    source: str = "gpu"                 # "gpu" or "replay:<data set>"
    extra: dict = field(default_factory=dict)
    # timed runs behind the figures: the protocol's repeat, or fewer for a config screened out
    # early as far slower than the best (GpuRunner(screen=...)); 0 when not timed or not known
    runs: int = 0

    @property
    def ok(self) -> bool:
        return self.status == Status.OK

    def to_json(self) -> dict:
        d = asdict(self)
        d["status"] = self.status.value
        return d


def summarize(times_us) -> dict:
    t = np.asarray(times_us, dtype=np.float64)
    return {"min_us": float(t.min()), "median_us": float(np.median(t)),
            "spread_us": float(np.percentile(t, 90) - np.percentile(t, 10))}
