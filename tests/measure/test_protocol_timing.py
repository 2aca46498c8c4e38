"""measure/protocol's torch-stream timers without a GPU: torch.cuda's events, graph and streams
stand in with a fake clock each launch advances, so what is timed, how often and how the median
per launch comes out are checked (the GPU tests time real kernels through the same code)."""

import contextlib

import pytest

torch = pytest.importorskip("torch")

from autosched.measure import protocol  # noqa: E402


class FakeCuda:
    """A clock in ms that each enqueued launch advances by the next of `costs` (cycled), events
    that read it when recorded, and a CUDA graph that records the launches made while capturing
    and re-runs them on replay."""

    def __init__(self, costs):
        self.now, self.costs, self.i = 0.0, list(costs), 0
        self.capturing, self.launched, self.replays, self.waited = None, [], 0, 0
        fake = self

        class Event:
            def __init__(self, enable_timing=False):
                assert enable_timing
                self.t = None

            def record(self, stream=None):
                self.t = fake.now

            def synchronize(self):
                fake.waited += 1

            def elapsed_time(self, end):
                return end.t - self.t

        class CUDAGraph:
            def __init__(self):
                self.ops = []

            def replay(self):
                fake.replays += 1
                for op in self.ops:
                    fake.run(op)

        class Stream:
            def wait_stream(self, other):
                pass

        @contextlib.contextmanager
        def graph(g, stream=None):
            fake.capturing = g
            yield
            fake.capturing = None

        self.Event, self.CUDAGraph, self.Stream, self.graph = Event, CUDAGraph, Stream, graph
        self.stream = lambda s: contextlib.nullcontext()
        self.current_stream = lambda device=None: Stream()
        self.synchronize = lambda device=None: None

    def run(self, op):
        self.launched.append(op)
        self.now += self.costs[self.i % len(self.costs)]
        self.i += 1

    def enqueue(self, op):
        if self.capturing is not None:
            self.capturing.ops.append(op)
        else:
            self.run(op)


@pytest.fixture
def fake(monkeypatch):
    def make(costs):
        f = FakeCuda(costs)
        for name in ("Event", "CUDAGraph", "Stream", "graph", "stream", "current_stream", "synchronize"):
            monkeypatch.setattr(torch.cuda, name, getattr(f, name))
        return f
    return make


def test_time_runs_is_the_median_per_launch_of_each_timed_run(fake):
    f = fake([1.0, 1.0, 1.0, 1.0, 5.0, 5.0, 5.0, 5.0, 2.0, 2.0, 2.0, 2.0])     # ms a launch, run by run

    def run():
        for _ in range(4):
            f.enqueue("k")
    us = protocol.time_runs(run, runs=3, launches=4)
    assert us == pytest.approx(2000.0)          # runs of 1, 5 and 2 ms a launch: median 2 ms = 2000 us
    assert len(f.launched) == 12 and f.waited == 3      # each run's end event is waited on


def test_time_graph_captures_count_launches_over_rotating_copies_and_times_the_replays(fake):
    f = fake([0.01])
    us = protocol.time_graph(lambda i: f.enqueue(i), copies=3, count=7, replays=5)
    assert us == pytest.approx(10.0)            # 0.01 ms a launch
    # one warm-up launch of copy 0 outside the capture, then 3 warm replays and 5 timed ones
    assert f.replays == 3 + 5
    assert f.launched[0] == 0 and f.launched[1:8] == [0, 1, 2, 0, 1, 2, 0]
    assert len(f.launched) == 1 + 8 * 7
