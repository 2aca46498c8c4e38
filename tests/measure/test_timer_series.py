"""Timer._series on stand-ins for the stream and its events (no GPU): each enqueue's runs timed between
its own two events after a flush, in rounds of a, b, b, a for two (each one's two runs averaged); and the runs the GPU had reached before they
were wholly enqueued counted in host_late, per enqueue."""

from types import SimpleNamespace

from autosched.measure.protocol import Protocol, Timer


class FakeEvent:
    def __init__(self, ms: float, done: bool):
        self.ms, self.is_done = ms, done

    def __sub__(self, other):
        return self.ms - other.ms


class FakeStream:
    """Records events at a clock that each enqueue advances; the GPU is 'behind' (start not done)
    except at the records the test names."""

    def __init__(self, late_at=()):
        self.clock, self.records, self.late_at, self.synced = 0.0, 0, set(late_at), False

    def record(self, options=None):
        self.records += 1
        return FakeEvent(self.clock, self.records in self.late_at)

    def sync(self):
        self.synced = True


def timer(stream) -> Timer:
    t = Timer.__new__(Timer)
    t.stream, t.protocol, t._evopt, t.host_late = stream, Protocol(warmup=2, repeat=4), None, []
    t.flushes = 0

    def flush():
        t.flushes += 1
    t.flush = flush
    return t


def test_alternating_series_times_each_enqueue_between_its_events():
    s = FakeStream()
    t = timer(s)
    order = []

    def a():
        order.append("a")
        s.clock += 0.010            # 10 us

    def b():
        order.append("b")
        s.clock += 0.004
    ta, tb = t.time_alternating(a, b)
    assert order == ["a", "b", "b", "a"] * 3              # one warm-up round, then two timed
    assert [round(x, 6) for x in ta] == [10.0] * 2 and [round(x, 6) for x in tb] == [4.0] * 2
    assert t.flushes == 8 and s.synced and t.host_late == [0, 0]


def test_alternating_averages_each_ones_odd_and_even_place():
    # a kernel that runs 1 us slower in whichever place comes first in a round reads the same for both
    s = FakeStream()
    t = timer(s)
    place = []

    def run(us):
        def enqueue():
            place.append(len(place) % 4)
            s.clock += (us + (1.0 if place[-1] in (0, 2) else 0.0)) / 1000
        return enqueue
    ta, tb = t.time_alternating(run(8.0), run(8.0))
    assert [round(x, 6) for x in ta] == [8.5] * 2 and [round(x, 6) for x in tb] == [8.5] * 2


def test_runs_the_gpu_reached_first_are_counted_per_enqueue():
    # records 1, 2 (a's start, end), 3, 4 (b's), 5, 6 (b's), 7, 8 (a's), then the second round
    s = FakeStream(late_at={7, 11})
    t = timer(s)
    t.time_alternating(lambda: None, lambda: None)
    assert t.host_late == [1, 1]
    t.stream = FakeStream(late_at={1, 3, 5})
    t.flush = lambda: None
    out = t.summary(lambda: None)
    assert out["host_late"] == 3 and len(out["times_us"]) == 4
