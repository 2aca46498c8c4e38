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
