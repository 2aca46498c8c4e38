"""GpuRunner starts its GPU workers at once, and stops the started ones when another fails to start
(gpu._start_slots, with stand-in slots: no GPU here); a slot's prepare sent ahead is read before its
next request (a stand-in worker at the other end of the pipe)."""

import threading
import time

import pytest

from autosched.measure import gpu
from autosched.measure.protocol import Protocol

START_S = 0.3


class FakeSlot:
    started: list = []
    killed: list = []
    lock = threading.Lock()

    def __init__(self, device_id, protocol, start_timeout):
        time.sleep(START_S)
        if device_id == 2:
            raise gpu.WorkerDied(f"GPU {device_id} worker failed to start")
        self.device_id = device_id
        with self.lock:
            self.started.append(device_id)

    def kill(self):
        with self.lock:
            self.killed.append(self.device_id)


@pytest.fixture
def fake_slots(monkeypatch):
    FakeSlot.started, FakeSlot.killed = [], []
    monkeypatch.setattr(gpu, "_Slot", FakeSlot)


def test_workers_start_together_and_keep_the_gpu_order(fake_slots):
    t0 = time.perf_counter()
    slots = gpu._start_slots([3, 0, 1, 4], Protocol(), 10.0)
    assert time.perf_counter() - t0 < 2.5 * START_S        # one after another would take 4x
    assert [s.device_id for s in slots] == [3, 0, 1, 4] and FakeSlot.killed == []


def test_one_worker_failing_stops_the_others_and_names_its_gpu(fake_slots):
    with pytest.raises(gpu.WorkerDied, match="GPU 2 worker"):
        gpu._start_slots([0, 1, 2, 3], Protocol(), 10.0)
    assert sorted(FakeSlot.started) == [0, 1, 3] and sorted(FakeSlot.killed) == [0, 1, 3]


def _slot_with_fake_worker(answers_prepare_with="prepared"):
    """A _Slot whose worker is a thread at the other end of a pipe, logging the requests it gets."""
    import multiprocessing as mp
    slot = object.__new__(gpu._Slot)
    slot.device_id, slot.prepared, slot.pending, slot.restarts = 0, None, None, 0
    slot.prepare_s = slot.measure_s = 0.0
    slot.conn, child = mp.Pipe()
    log = []

    def worker():
        while (msg := child.recv()) is not None:
            log.append(msg[:2] if msg[0] != "measure" else ("measure", msg[1]))
            if msg[0] == "prepare":
                time.sleep(0.05)
                child.send((answers_prepare_with, 0.05))
            elif msg[0] == "measure":
                child.send(("result", f"measured {msg[1]}"))
            elif msg[0] == "forget":
                child.send(("forgotten", None))
    threading.Thread(target=worker, daemon=True).start()
    return slot, log


def test_a_prepare_sent_ahead_is_answered_before_the_next_request_and_not_repeated():
    from types import SimpleNamespace
    slot, log = _slot_with_fake_worker()
    slot.prepare_ahead("shape-a")
    slot.prepare_ahead("shape-b")              # one ahead at a time: ignored
    assert slot.pending == "shape-a" and log in ([], [("prepare", "shape-a")])
    got = slot.measure(SimpleNamespace(workload_key="shape-a"), "bin", 5.0, 5.0)
    assert got == f"measured {SimpleNamespace(workload_key='shape-a')}"
    assert [m[0] for m in log] == ["prepare", "measure"] and slot.prepared == "shape-a" and slot.pending is None
    slot.prepare_ahead("shape-a")              # already prepared: nothing sent
    slot.prepare_ahead("shape-c")
    slot.forget(5.0)                           # reads the answer first, then forgets
    assert [m[0] for m in log] == ["prepare", "measure", "prepare", "forget"] and slot.prepared is None
    slot.conn.send(None)


def test_a_measurement_of_another_shape_after_a_prepare_ahead_prepares_its_own():
    from types import SimpleNamespace
    slot, log = _slot_with_fake_worker()
    slot.prepare_ahead("largest")
    slot.measure(SimpleNamespace(workload_key="probe"), "bin", 5.0, 5.0)
    assert log == [("prepare", "largest"), ("prepare", "probe"), ("measure", SimpleNamespace(workload_key="probe"))]
    assert slot.prepared == "probe" and slot.prepare_s > 0.09       # both prepares waited on
    slot.conn.send(None)
