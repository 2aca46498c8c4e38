"""Runners: turn (KernelSpec, Binary) into Measurements.

GpuRunner measures on real GPUs (one worker process per GPU); ReplayRunner answers from a data set
recorded on a real GPU, so the whole pipeline runs on a CPU-only machine.
"""

from autosched.measure.result import Measurement, Status

__all__ = ["Measurement", "Status"]
