"""The 2-GPU scaling study's logic (benchmarks/scale_gpu.py) on the CPU: "GPUs" are replay runners that
take a fixed time per config, one at a time each, so the study's measuring ratio must come out near
the number of GPUs, and every row and summary key must say what ran."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from autosched.benchmarks import scale_gpu
from autosched.build import BuildCache, Builder
from autosched.measure.recording import Recording, ReplayRunner, shipped_recordings
from autosched.registry import template_named
from autosched.workloads import workload_from_key

DELAY_S = 0.02


class TimedGpus(ReplayRunner):
    """A replay runner standing in for `ids` GPUs: each answers one config at a time, DELAY_S each."""

    def __init__(self, rec, ids):
        super().__init__(rec)
        self.slots = list(ids)
        self.warmed = 0

    def warm(self, spec, binary):
        self.warmed += len(self.slots)

    def measure_stream(self, items):
        items = list(items)
        free = threading.Semaphore(len(self.slots))

        def one(item):
            with free:
                time.sleep(DELAY_S)
                return next(iter(ReplayRunner.measure_stream(self, [item])))
        with ThreadPoolExecutor(len(self.slots)) as ex:
            yield from ex.map(one, items)


@pytest.fixture(scope="module")
def rec():
    return Recording.load(next(p for p in shipped_recordings() if p.name.startswith("gemv_q4f16-4096x4096-")))


def test_the_study_compares_one_gpu_with_two_on_one_list_of_configs(rec, tmp_path):
    w, t = workload_from_key(rec.workload_key), template_named(rec.template)
    recorded = [c for c, m in rec.entries.values() if m.ok][:24]
    runners = []

    def make_runner(ids):
        runners.append(TimedGpus(rec, ids))
        return runners[-1]
    rows, summary = scale_gpu.study(make_runner, lambda d: Builder(workers=2, cache=BuildCache(d)), t, w,
                                    rec.device, recorded, [[0], [0, 1]], tune_trials=8, log=lambda *a: None)
    nvrtc = rows[0]
    assert nvrtc["what"] == "nvrtc" and nvrtc["configs"] == 24 and nvrtc["failed"] == 0 and nvrtc["configs_per_s"] > 0
    meas = {tuple(r["gpus"]): r for r in rows if r["what"] == "measuring"}
    assert set(meas) == {(0,), (0, 1)} and all(r["configs"] == 24 and r["statuses"] == {"ok": 24} for r in meas.values())
    tunes = [r for r in rows if r["what"] == "tune"]
    assert [r["gpus"] for r in tunes] == [[0], [0, 1]] and all(r["configs"] == 8 for r in tunes)
    # each warm-up reached every GPU of its runner, off the clock
    assert len(runners) == 4 and [r.warmed for r in runners[:2]] == [1, 2]   # measuring, then tune; no extra
    assert 1.5 <= summary["gpu2_throughput_speedup"] <= 2.3
    assert summary["gpu2_throughput_speedup"] == summary["gpu_all_throughput_speedup"]
    assert summary["bars"] == {"gpu2_throughput_speedup": 1.8} and summary["gpus"] == 2
    assert summary["nvrtc_configs_per_s"] == nvrtc["configs_per_s"]


def test_sample_configs_are_distinct_and_seeded(rec, h100):
    w, t = workload_from_key(rec.workload_key), template_named(rec.template)
    a, b = scale_gpu.sample_configs(t, w, h100, 40), scale_gpu.sample_configs(t, w, h100, 40)
    assert a == b and len(a) == 40 and len({tuple(sorted(c.items())) for c in a}) == 40
    assert scale_gpu.sample_configs(t, w, h100, 40, seed=1) != a


def test_main_refuses_a_machine_of_one_gpu(monkeypatch):
    import autosched.device as device
    monkeypatch.setattr(device, "gpu_count", lambda: 1)
    with pytest.raises(SystemExit):
        scale_gpu.main(["--configs", "8"])
