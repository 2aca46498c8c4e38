"""GpuRunner starts its GPU workers at once, and stops the started ones when another fails to start
(gpu._start_slots, with stand-in slots: no GPU here)."""

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
