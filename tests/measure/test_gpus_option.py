"""--gpus and the run's build and measure rates, without a GPU: ids are parsed or refused by name,
GPUs of two models are refused naming each group, a replay refuses GPU ids, the time GPU threads
wait on NVRTC is counted, and a run's NVRTC figures count fresh builds only."""
import threading
import time
from concurrent.futures import Future

import pytest

from autosched import api
from autosched.api import AutoschedError, parse_gpus
from autosched.build import Binary
from autosched.measure import gpu as gpu_mod
from autosched.measure.gpu import GpuRunner
from autosched.measure.result import Measurement, Status
from autosched.tuner import TuneResult, _count_build


def test_parse_gpus():
    assert parse_gpus(None) is None and parse_gpus("all") is None and parse_gpus(" ALL ") is None
    assert parse_gpus("0") == [0] and parse_gpus("1,3") == [1, 3]
    for bad in ("", "x", "0,0", "-1", "1;2", ","):
        with pytest.raises(AutoschedError, match="--gpus"):
            parse_gpus(bad)


class _FakeSlot:
    def __init__(self, device_id, key):
        self.device_id, self.closed = device_id, False
        self.info = type("Info", (), {"key": key})()

    def close(self):
        self.closed = True


def test_gpus_of_two_models_are_refused_naming_each_group(monkeypatch):
    keys = {0: "H100", 1: "A100", 2: "H100"}
    made = []

    def slot(i, protocol, start_timeout):
        made.append(_FakeSlot(i, keys[i]))
        return made[-1]

    monkeypatch.setattr(gpu_mod, "_Slot", slot)
    monkeypatch.setattr("autosched.device.gpu_count", lambda: 3)
    with pytest.raises(AutoschedError) as e:
        api._gpu_runner(None, None)
    msg = str(e.value)
    assert "H100: GPU 0,2" in msg and "A100: GPU 1" in msg and "--gpus 0,2 or --gpus 1" in msg
    assert all(s.closed for s in made)          # no worker of a refused run is left running
    made.clear()
    run = api._gpu_runner(None, [0, 2])         # one model's ids: accepted
    assert [s.device_id for s in run.slots] == [0, 2]


def test_a_gpu_id_the_machine_lacks_is_refused(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr("autosched.device.gpu_count", lambda: 2)
    monkeypatch.setattr(gpu_mod, "_Slot", lambda *a: pytest.fail("no worker before the ids are checked"))
    with pytest.raises(AutoschedError, match=r"no GPU 5 here: this process sees GPUs 0..1$"):
        api._gpu_runner(None, [0, 5])


def test_a_gpu_id_hidden_by_cuda_visible_devices_is_refused_saying_how_they_are_numbered(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    monkeypatch.setattr("autosched.device._host_gpus", lambda: 2)
    monkeypatch.setattr(gpu_mod, "_Slot", lambda *a: pytest.fail("no worker before the ids are checked"))
    with pytest.raises(AutoschedError, match=r"no GPU 1 here: this process sees GPUs 0..0 "
                                             r"\(CUDA_VISIBLE_DEVICES=1 shows 1, numbered from 0\)"):
        api._gpu_runner(None, [1])


def test_a_replay_refuses_gpu_ids(monkeypatch):
    w = api.workload("gemv-q4f16", "4096x4096")
    with pytest.raises(AutoschedError, match="--gpus 1 asks for GPUs and the replay runner uses none"):
        api.open_runner("replay", w, None, gpus=[1])


def test_time_waiting_on_builds_is_counted():
    r = GpuRunner.__new__(GpuRunner)
    r.slots = [object(), object()]
    r._measure_on = lambda slot, spec, binary: Measurement(Status.OK, 1.0, 1.0, 0.0, 0.0)
    futs = [Future() for _ in range(4)]
    threading.Timer(0.2, lambda: [f.set_result("bin") for f in futs]).start()
    out = list(r.measure_stream((i, None, f) for i, f in enumerate(futs)))
    assert len(out) == 4
    assert r.build_wait_s >= 0.3        # two GPU threads, each waited ~0.2 s on its first build


def test_build_figures_count_fresh_builds_only():
    res = TuneResult("w", "d", "t", "gpu", 10, measured_now=20, elapsed_s=4.0, build_jobs=8)
    _count_build(res, Binary("k", "f", compile_s=0.5))
    _count_build(res, Binary("k", "f", compile_s=0.5, cached=True))     # a cache hit: not built here
    done = Future()
    done.set_result(Binary("k", "f", compile_s=1.5))
    _count_build(res, done)
    pending, failed = Future(), Future()
    failed.set_exception(RuntimeError("pool died"))
    _count_build(res, pending)
    _count_build(res, failed)
    _count_build(res, None)
    assert (res.built, res.build_cpu_s) == (2, 2.0)
    assert res.measure_rate == 5.0
    assert res.build_rate == 8.0        # 2 builds in 2 CPU-seconds, 8 processes at once
