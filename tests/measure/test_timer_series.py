"""Timer._series on stand-ins for the stream and its events (no GPU): each enqueue's runs timed between
its own two events after a flush, in alternation for two; and the runs the GPU had reached before they
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
    t.stream, t.protocol, t._evopt, t.host_late = stream, Protocol(warmup=1, repeat=3), None, []
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
    assert order == ["a", "b"] + ["a", "b"] * 3          # one warm-up round, then three timed
    assert [round(x, 6) for x in ta] == [10.0] * 3 and [round(x, 6) for x in tb] == [4.0] * 3
    assert t.flushes == 6 and s.synced and t.host_late == [0, 0]


def test_runs_the_gpu_reached_first_are_counted_per_enqueue():
    # records 1, 2 (a's start, end), 3, 4 (b's), ...: b's start in the second round is record 7
    s = FakeStream(late_at={7, 9})
    t = timer(s)
    t.time_alternating(lambda: None, lambda: None)
    assert t.host_late == [1, 1]
    t.stream = FakeStream(late_at={1, 3, 5})
    t.flush = lambda: None
    out = t.summary(lambda: None)
    assert out["host_late"] == 3 and len(out["times_us"]) == 3
