"""Every timing of enqueued work, in one module.

The timing protocol (the q4f16_1 seed's, see BENCHMARKS.md) on a cuda.core stream (`Timer`): L2
flushed before every timed run by writing a buffer of >= 2x the L2 (256 MB by default), one launch
per timed run between two events, median of 100 after 10 warm-ups.

How a kernel runs in a decode step, on torch's stream (`time_graph`, `time_runs`): many launches
back to back, no flush between them (rotating weight copies keep them cold instead), in a CUDA
graph, timed as a whole between two events and divided by the launches; median of a few runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from autosched.measure.result import summarize
from autosched.runtime import check

# torch, cuda.bindings and cuda.core are imported inside functions: optional / slow to import, a CPU install
# runs without them


@dataclass(frozen=True)
class Protocol:
    flush_bytes: int = 256 * 10**6
    warmup: int = 10
    repeat: int = 100

    def to_json(self) -> dict:
        return {"flush_bytes": self.flush_bytes, "warmup": self.warmup, "repeat": self.repeat}


class Timer:
    """Times work enqueued on `stream` (a cuda.core Stream) under the protocol."""

    def __init__(self, device, stream, protocol: Protocol = Protocol()):
        from cuda.core import EventOptions
        self.stream = stream
        self.protocol = protocol
        self.flush_buf = device.allocate(protocol.flush_bytes, stream=stream)
        self._evopt = EventOptions(timing_enabled=True)
        self._flush_value = 0
        # of the last series, per enqueue: the timed runs the GPU reached before they were wholly enqueued
        self.host_late: list[int] = []

    def flush(self) -> None:
        from cuda.bindings import driver
        # a different value each time, so no layer can skip the write as redundant
        self._flush_value = (self._flush_value + 1) & 0xFFFFFFFF
        check(driver.cuMemsetD32Async(int(self.flush_buf.handle), self._flush_value,
                                      self.protocol.flush_bytes // 4, int(self.stream.handle)))

    def time(self, enqueue: Callable[[], None], repeat: int | None = None,
             warmup: int | None = None, flush: bool = True) -> list[float]:
        """Microseconds of each timed run of `enqueue()` (which must only enqueue on the stream)."""
        return self._series((enqueue,), repeat, warmup, flush)[0]

    def time_alternating(self, first: Callable[[], None], second: Callable[[], None],
                         repeat: int | None = None, warmup: int | None = None) -> tuple[list[float], list[float]]:
        """Microseconds of `first` and `second` timed in alternation, each run after a flush, in rounds of
        first, second, second, first (about `repeat` runs of each): per round, the mean of each one's two
        runs.  A clock that drifts under sustained load moves both alike within the window, where two
        separate series would each see a different stretch of it.

        Why each appears in an odd and an even place: on an H100 (2026-11-27, checks/slot-bias-*.json)
        a 7-12 us GEMM alternating with itself read 5-9% apart in the two places of a plain first,
        second round, one place fast and one slow for a whole series and which one changing from
        series to series, whatever the flush wrote; so first-then-second rounds gave either kernel
        that margin by chance.  In these rounds the per-kernel means agreed across series to 0.5%."""
        repeat = self.protocol.repeat if repeat is None else repeat
        warmup = self.protocol.warmup if warmup is None else warmup
        a1, b1, b2, a2 = self._series((first, second, second, first), max(1, repeat // 2), max(1, warmup // 2), True)
        late = self.host_late
        self.host_late = [late[0] + late[3], late[1] + late[2]]
        return ([(x + y) / 2 for x, y in zip(a1, a2)], [(x + y) / 2 for x, y in zip(b1, b2)])

    def _series(self, enqueues, repeat: int | None, warmup: int | None, flush: bool) -> list[list[float]]:
        """A list of microseconds per enqueue: `warmup` untimed rounds, then `repeat` rounds, each
        timing every enqueue in turn between two events (after a flush, where `flush`).

        The events time what the GPU did between them, which is the enqueued work only while the host
        stays ahead of the GPU.  Where the GPU has already passed the start event when the work has
        just been enqueued behind it, it may have waited for the host in between (a thread holding the
        GIL beside the loop made every run 15.5 ms on an H100, 2026-11-27): such runs are counted in
        host_late (per enqueue), an upper bound, since the GPU may have reached the event only after
        the enqueue returned."""
        repeat = self.protocol.repeat if repeat is None else repeat
        warmup = self.protocol.warmup if warmup is None else warmup
        for _ in range(warmup):
            for enqueue in enqueues:
                enqueue()
        events = [[] for _ in enqueues]
        late = [0] * len(enqueues)
        for _ in range(repeat):
            for j, (enqueue, out) in enumerate(zip(enqueues, events)):
                if flush:
                    self.flush()
                start = self.stream.record(options=self._evopt)
                enqueue()
                late[j] += _reached(start)
                end = self.stream.record(options=self._evopt)
                out.append((start, end))
        self.stream.sync()
        self.host_late = late
        return [[float(e - s) * 1000.0 for s, e in pairs] for pairs in events]

    def summary(self, enqueue: Callable[[], None], **kw) -> dict:
        times = self.time(enqueue, **kw)
        return {**summarize(times), "times_us": times, "host_late": self.host_late[0]}

    def close(self) -> None:
        self.flush_buf.close()


def _reached(event) -> bool:
    """Whether the GPU has passed `event` (cuEventQuery through cuda.core's Event.is_done; a property
    in cuda.core 1.x, called where a version makes it a method, False where it has none)."""
    done = getattr(event, "is_done", False)
    return bool(done() if callable(done) else done)


def time_runs(run: Callable[[], None], runs: int, launches: int) -> float:
    """Median over `runs` of the microseconds per launch of `run()`, which enqueues `launches`
    launches on torch's current stream and is timed whole between two events (no per-launch event
    or flush: what back-to-back launches in a step cost)."""
    import torch
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(runs):
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / launches)
    return float(np.median(times))


def time_graph(enqueue_copy: Callable[[int], None], copies: int, count: int = 200, replays: int = 10) -> float:
    """Per-launch microseconds of `count` back-to-back launches over rotating copies, in a CUDA
    graph (no per-launch event or launch-API cost: what a decode step sees); median of replays."""
    import torch
    g = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        enqueue_copy(0)          # warm up outside capture (lazy init, module load)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        for i in range(count):
            enqueue_copy(i % copies)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    return time_runs(g.replay, replays, count)
