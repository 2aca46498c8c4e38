"""GpuRunner.measure_stream's plumbing without a GPU: every item comes back exactly once, with its
own result, from several GPU threads; futures are resolved by the thread that takes them; an
exception in one measurement is reported as a crash of that item and the stream goes on."""

import random
import time
from concurrent.futures import Future

from autosched.measure.gpu import GpuRunner
from autosched.measure.result import Measurement, Status


def stub_runner(n_gpus, measure):
    r = GpuRunner.__new__(GpuRunner)      # no worker processes: slots are placeholders
    r.slots = [object() for _ in range(n_gpus)]
    r._measure_on = measure
    return r


def test_every_item_once_with_its_result():
    rng = random.Random(0)

    def measure(slot, spec, binary):
        time.sleep(rng.random() * 0.002)
        return Measurement(Status.OK, spec, spec, 0.0, 0.0)

    out = list(stub_runner(3, measure).measure_stream((i, float(i), None) for i in range(200)))
    assert sorted(tag for tag, _ in out) == list(range(200))
    assert all(m.median_us == tag for tag, m in out)
    assert list(stub_runner(2, measure).measure_stream(iter([]))) == []


def test_futures_are_resolved_and_failures_do_not_stop_the_stream():
    def measure(slot, spec, binary):
        if binary == "boom":
            raise RuntimeError("worker could not restart")
        return Measurement(Status.OK, 1.0, 1.0, 0.0, 0.0, extra={"binary": binary})

    items = []
    for i in range(20):
        f = Future()
        f.set_result("boom" if i == 7 else f"bin{i}")
        items.append((i, None, f))
    out = dict(stub_runner(2, measure).measure_stream(items))
    assert len(out) == 20
    assert out[7].status == Status.CRASH and "could not restart" in out[7].error
    assert all(out[i].ok and out[i].extra["binary"] == f"bin{i}" for i in out if i != 7)


def screening_runner(factor, answers):
    """A GpuRunner whose slot answers from `answers` (median, runs) in turn and records the bar
    it was sent with each config."""
    from autosched.measure.protocol import Protocol
    r = GpuRunner.__new__(GpuRunner)
    r.protocol, r.timeout_s, r.prepare_timeout_s = Protocol(), 1.0, 1.0
    r.screen, r._best_us = factor, {}
    bars, it = [], iter(answers)

    class Slot:
        def measure(self, spec, binary, timeout, prepare_timeout, bar):
            bars.append(bar)
            med, runs = next(it)
            return Measurement(Status.OK, med, med, 0.0, 0.0, runs=runs)

    class Spec:
        workload_key = "w"

    class Bin:
        ok = True

    return r, Slot(), Spec(), Bin(), bars


def test_screen_bar_follows_the_best_measured_in_full():
    r, slot, spec, b, bars = screening_runner(2.0, [(10.0, 100), (50.0, 3), (8.0, 100), (1.0, 3), (9.0, 100)])
    for _ in range(5):
        r._measure_on(slot, spec, b)
    # no bar before a full measurement; a screened result (3 runs) never lowers the bar
    assert bars == [None, 20.0, 20.0, 16.0, 16.0]


def test_screen_off_sends_no_bar_and_observe_seeds_it():
    r, slot, spec, b, bars = screening_runner(None, [(10.0, 100), (5.0, 100)])
    r._measure_on(slot, spec, b)
    r._measure_on(slot, spec, b)
    assert bars == [None, None]
    r, slot, spec, b, bars = screening_runner(3.0, [(10.0, 100)])
    # a resumed run's database row (runs 0: from before runs were kept) counts as a full measurement
    r.observe("w", Measurement(Status.OK, 4.0, 4.0, 0.0, 0.0))
    r.observe("w", Measurement(Status.WRONG, 1.0, 1.0, 0.0, 0.0, runs=100))
    r.observe("other", Measurement(Status.OK, 1.0, 1.0, 0.0, 0.0, runs=100))
    r._measure_on(slot, spec, b)
    assert bars == [12.0]


def test_screen_factor_must_exceed_one():
    import pytest
    with pytest.raises(ValueError, match="screen factor"):
        GpuRunner(device_ids=[], screen=1.0)
