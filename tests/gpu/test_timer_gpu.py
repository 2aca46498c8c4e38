"""On a GPU: the protocol's Timer counts the runs the GPU reached before they were wholly enqueued
(host_late).  A plain series of a small copy, the host far ahead behind each 256 MB flush, has none or
nearly none; with a Python thread spinning beside the loop (the GIL handed over every 5 ms), most runs
are late and their times hold the host's wait: the count is what tells such a timing apart."""

import threading

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def timer():
    from cuda.core import Device, Stream

    from autosched.measure.protocol import Protocol, Timer
    dev = Device(0)
    dev.set_current()
    t = Timer(dev, Stream.from_handle(torch.cuda.current_stream().cuda_stream), Protocol(repeat=40))
    yield t
    t.close()


def test_host_ahead_none_late_then_a_spinning_thread_makes_them_late(timer):
    src = torch.randn(1 << 20, device="cuda")
    dst = torch.empty_like(src)
    s = timer.summary(lambda: dst.copy_(src))
    assert s["host_late"] <= 2 and s["median_us"] < 100, s["host_late"]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            sum(range(1000))
    th = threading.Thread(target=spin, daemon=True)
    th.start()
    try:
        late = timer.summary(lambda: dst.copy_(src))
    finally:
        stop.set()
        th.join()
    assert late["host_late"] >= 20 and late["median_us"] > 10 * s["median_us"], (late["host_late"], late["median_us"])
