"""The interface every runner implements: the tuner, the benchmarks and the API see only this.

A runner turns (tag, KernelSpec, binary or build future) items into (tag, Measurement) pairs on one
kind of GPU.  The GPU runner measures; the replay runner answers from recorded measurements and so
can only answer for what a recording holds (`covers`).
"""

from __future__ import annotations

from typing import Iterable, Iterator

from autosched.device import DeviceInfo
from autosched.measure.result import Measurement


class Runner:
    name: str = ""
    needs_binary: bool = True       # False: the runner never launches, so nothing need be built
    partial: bool = False           # True: answers only for some configs (`covers` says which)

    @property
    def device_info(self) -> DeviceInfo:
        raise NotImplementedError

    def measure_stream(self, items: Iterable[tuple]) -> Iterator[tuple]:
        """items: (tag, spec, binary or future).  Yields (tag, Measurement) as each finishes (in any
        order)."""
        raise NotImplementedError

    def build_id(self, template) -> str:
        """The build (the binaries and the NVRTC that made them, `identity.build_id`) whose times this runner
        reports for `template`: measurements are stored and ranked under it."""
        raise NotImplementedError

    def measure(self, spec, binary=None) -> Measurement:
        return next(iter(self.measure_stream([(0, spec, binary)])))[1]

    def covers(self, workload_key: str, template: str, config: dict) -> bool:
        """Whether this runner can answer for the config at all (a replay: only recorded ones)."""
        return True

    def coverage_note(self, workload_key: str, template: str, space_size: int) -> str | None:
        """What a user should know about what the runner can answer for (None: everything)."""
        return None

    def prepare_ahead(self, workload_key: str) -> None:
        """Start making the inputs and reference of `workload_key` where measurements are taken, and
        return at once (a hint: the first builds of a tuning take a while, and its worker would idle
        through them).  Call it while no measure_stream is running.  Default: nothing."""

    def observe(self, workload_key: str, m: Measurement) -> None:
        """A measurement the runner did not take (a resumed run's database row), for runners that
        adapt to the best so far (the GPU runner's screening)."""

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
