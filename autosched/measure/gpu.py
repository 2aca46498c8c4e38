"""GpuRunner: one worker process per GPU; a kernel that faults or hangs costs only its worker.

The parent process never touches the CUDA driver: device facts come from worker 0, so the parent
can fork a build pool or die without leaving a context behind.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable, Iterator

from autosched.device import DeviceInfo
from autosched.identity import build_id
from autosched.measure.protocol import Protocol
from autosched.measure.result import Measurement, Status
from autosched.measure.runner import Runner
from autosched.measure.worker import worker_main

# gpu_count is imported inside functions: looked up at call time, as tests replace it on its module


class NoGpu(RuntimeError):
    """No CUDA GPU to measure on (the caller says what to do instead)."""


class WorkerDied(RuntimeError):
    pass


class _Slot:
    """One GPU and the worker process that owns it."""

    def __init__(self, device_id: int, protocol: Protocol, start_timeout: float):
        self.device_id = device_id
        self.protocol = protocol
        self.start_timeout = start_timeout
        self.info: DeviceInfo | None = None
        self.prepared: str | None = None
        self.pending: str | None = None     # a prepare sent ahead (prepare_ahead), its answer not read yet
        self.restarts = 0
        self.prepare_s = 0.0        # waiting on the worker's inputs and float64 references
        self.measure_s = 0.0        # waiting on its measurements (checks and timed runs)
        self._start()

    def _start(self) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker_main, args=(self.device_id, child, self.protocol),
                                daemon=True, name=f"autosched-gpu{self.device_id}")
        self.proc.start()
        child.close()
        self.prepared = self.pending = None
        kind, payload = self._recv(self.start_timeout, "start")
        if kind != "ready":
            self.kill()
            raise WorkerDied(f"GPU {self.device_id} worker failed to start:\n{payload}")
        self.info = DeviceInfo.from_json(payload)

    def _recv(self, timeout: float, what: str):
        if not self.conn.poll(timeout):
            raise TimeoutError(f"GPU {self.device_id} worker gave no answer to {what} in {timeout:.0f} s")
        try:
            return self.conn.recv()
        except (EOFError, ConnectionResetError) as e:
            raise WorkerDied(f"GPU {self.device_id} worker died during {what} "
                             f"(exit code {self.proc.exitcode})") from e

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(timeout=10)
        self.conn.close()

    def restart(self) -> None:
        self.kill()
        self.restarts += 1
        self._start()

    def prepare_ahead(self, workload_key: str) -> None:
        """Send the worker a prepare of `workload_key` without waiting for its answer (read by the
        next request).  A broken pipe is left for that request to find and restart on."""
        if self.pending is not None or self.prepared == workload_key:
            return
        try:
            self.conn.send(("prepare", workload_key))
        except (BrokenPipeError, OSError):
            return
        self.pending = workload_key

    def _settle(self, timeout: float) -> None:
        """Read the answer to a prepare sent ahead (the worker answers in order)."""
        if self.pending is None:
            return
        key, self.pending = self.pending, None
        kind, _ = self._recv(timeout, "input preparation")
        if kind == "prepared":
            self.prepared = key
        elif kind == "fatal":       # it ended itself after the error: a fresh one for what comes next
            self.proc.join(timeout=10)
            self.restart()

    def measure(self, spec, binary, timeout: float, prepare_timeout: float,
                screen_over_us: float | None = None) -> Measurement:
        try:
            t0 = time.perf_counter()
            self._settle(prepare_timeout)
            if self.prepared != spec.workload_key:
                self.conn.send(("prepare", spec.workload_key))
                self._recv(prepare_timeout, "input preparation")
                self.prepared = spec.workload_key
            t1 = time.perf_counter()
            self.conn.send(("measure", spec, binary, screen_over_us))
            kind, result = self._recv(timeout, "measure")
            self.prepare_s += t1 - t0
            self.measure_s += time.perf_counter() - t1
        except TimeoutError as e:
            self.restart()
            return Measurement(Status.TIMEOUT, error=str(e))
        except (WorkerDied, BrokenPipeError, OSError) as e:
            self.restart()
            return Measurement(Status.CRASH, error=str(e))
        if kind == "fatal":
            # the worker ends itself after a CUDA error (its context may be poisoned)
            self.proc.join(timeout=10)
            self.restart()
        return result

    def forget(self, timeout: float) -> None:
        """The worker drops its inputs, references and row family (Worker.forget)."""
        try:
            self._settle(timeout)
            self.conn.send(("forget",))
            kind, _ = self._recv(timeout, "forget")
        except (TimeoutError, WorkerDied, BrokenPipeError, OSError):
            self.restart()                  # a fresh worker holds nothing either
            return
        if kind != "forgotten":
            self.restart()
        self.prepared = None

    def close(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, BrokenPipeError):
            pass
        self.proc.join(timeout=10)
        self.kill()


def _start_slots(ids: list[int], protocol: Protocol, start_timeout: float) -> list[_Slot]:
    """A worker on each GPU, all starting at once (each spends a second or two importing and making
    its context: on 8 GPUs one after another that was the first quarter minute of every run).  If
    any fails, the others are stopped and the first error is raised."""
    with ThreadPoolExecutor(len(ids)) as ex:
        futures = [ex.submit(_Slot, i, protocol, start_timeout) for i in ids]
    failed = [f.exception() for f in futures if f.exception() is not None]
    if failed:
        for f in futures:
            if f.exception() is None:
                f.result().kill()
        raise failed[0]
    return [f.result() for f in futures]


class MixedGpus(RuntimeError):
    """The GPUs asked for are of more than one model (device key)."""


class GpuRunner(Runner):
    """Measures (spec, binary) pairs on every GPU at once, one config per GPU at a time.

    screen: with a factor F (> 1), a config whose first few timed runs take over F x the best median
    measured so far in full is recorded from those runs (Measurement.runs says how many) instead of
    the protocol's 100: a whole-space recording then spends its time near the top, where a search
    needs exact figures.  Such a config can never be the best (it is F x slower than one that is),
    so the search a recording replays reaches the same optimum.  observe() feeds the runner results
    it did not measure (a resumed run's database rows).
    """

    name = "gpu"
    needs_binary = True
    build_wait_s = 0.0      # time the GPU threads spent waiting for NVRTC, all GPUs together

    def __init__(self, device_ids: Iterable[int] | None = None, protocol: Protocol = Protocol(),
                 timeout_s: float = 60.0, prepare_timeout_s: float = 600.0, start_timeout_s: float = 120.0,
                 screen: float | None = None):
        if screen is not None and not screen > 1:
            raise ValueError(f"screen factor must be > 1, got {screen}")
        self.screen = screen
        self._best_us: dict[str, float] = {}      # workload key -> best median timed in full
        from autosched.device import gpu_count
        n_gpus = gpu_count()
        ids = list(device_ids) if device_ids is not None else list(range(n_gpus))
        if not ids or n_gpus == 0:
            raise NoGpu("no CUDA GPU found on this machine")
        self.protocol = protocol
        self.timeout_s = timeout_s
        self.prepare_timeout_s = prepare_timeout_s
        bad = [i for i in ids if not 0 <= i < n_gpus]
        if bad:
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
            raise ValueError(f"no GPU {', '.join(map(str, bad))} here: this process sees GPUs 0..{n_gpus - 1}"
                             + (f" (CUDA_VISIBLE_DEVICES={visible} shows {n_gpus}, numbered from 0)"
                                if visible is not None else ""))
        self.slots = _start_slots(ids, protocol, start_timeout_s)
        kinds: dict[str, list[int]] = {}
        for s in self.slots:
            kinds.setdefault(s.info.key, []).append(s.device_id)
        if len(kinds) > 1:
            # a measurement is stored under one device key: GPUs of two models in one run would file
            # one's timings under the other's name
            self.close()
            raise MixedGpus("GPUs of different models in one run: " + "; ".join(
                f"{k}: GPU {','.join(map(str, v))}" for k, v in kinds.items())
                + "; measure one kind at a time (--gpus " + " or --gpus ".join(
                ",".join(map(str, v)) for v in kinds.values()) + ")")


    @property
    def device_info(self) -> DeviceInfo:
        return self.slots[0].info

    def time_split(self) -> dict[str, float]:
        """Seconds so far, all GPUs together: waiting on builds, on the workers' inputs and float64
        references (a new shape's), and on their measurements.  A caller takes differences."""
        return {"build_wait_s": self.build_wait_s, "prepare_s": sum(s.prepare_s for s in self.slots),
                "measure_s": sum(s.measure_s for s in self.slots)}

    def build_id(self, template) -> str:
        """The build every measurement of this runner is of: the local kernel source and NVRTC."""
        return build_id(template)

    def measure(self, spec, binary) -> Measurement:
        return self._measure_on(self.slots[0], spec, binary)

    def warm(self, spec, binary) -> list[Measurement]:
        """One measurement of `spec` on every GPU in turn: each worker prepares the shape's inputs
        and references (what a timed study leaves off its clock)."""
        return [self._measure_on(s, spec, binary) for s in self.slots]

    def prepare_ahead(self, workload_key: str) -> None:
        """Every worker starts on the inputs and reference of `workload_key` now, while this process
        goes on (Runner.prepare_ahead); its answer is read before the worker's next measurement."""
        for s in self.slots:
            s.prepare_ahead(workload_key)

    def forget_inputs(self) -> None:
        """Every worker drops the inputs and float64 references it holds, so that what is measured
        next pays for its own, as in a fresh process (a benchmark's cold start)."""
        for s in self.slots:
            s.forget(self.prepare_timeout_s)

    def observe(self, workload_key: str, m: Measurement) -> None:
        full = m.runs == 0 or m.runs >= self.protocol.repeat      # 0: a row from before runs were kept
        if m.ok and full and m.median_us < self._best_us.get(workload_key, float("inf")):
            self._best_us[workload_key] = m.median_us

    def _measure_on(self, slot: _Slot, spec, binary) -> Measurement:
        if not binary.ok:
            return Measurement(Status.COMPILE_ERROR, error=binary.error or "")
        best = self._best_us.get(spec.workload_key)
        bar = self.screen * best if (self.screen and best is not None) else None
        m = slot.measure(spec, binary, self.timeout_s, self.prepare_timeout_s, bar)
        self.observe(spec.workload_key, m)
        return m

    def measure_stream(self, items: Iterable[tuple]) -> Iterator[tuple]:
        """items: (tag, spec, binary_or_future).  Yields (tag, Measurement) as each finishes, with
        every GPU busy while work remains.  A future is waited on by the GPU thread that takes
        it, so builds still in the pool do not hold back finished ones on other GPUs."""
        work: queue.Queue = queue.Queue(maxsize=4 * len(self.slots))
        wait_lock = threading.Lock()
        done: queue.Queue = queue.Queue()
        stop = object()

        def gpu_thread(slot):
            while (item := work.get()) is not stop:
                tag, spec, binary = item
                try:
                    if hasattr(binary, "result"):
                        t0 = time.perf_counter()
                        binary = binary.result()
                        with wait_lock:
                            self.build_wait_s += time.perf_counter() - t0
                    done.put((tag, self._measure_on(slot, spec, binary)))
                except Exception as e:   # a worker that cannot even restart: report, go on
                    done.put((tag, Measurement(Status.CRASH, error=f"{type(e).__name__}: {e}")))
            done.put(stop)

        threads = [threading.Thread(target=gpu_thread, args=(s,), daemon=True) for s in self.slots]
        for t in threads:
            t.start()

        failed: list[BaseException] = []

        def feeder():
            # items may be a generator doing work of its own (waiting on builds): whatever it raises
            # is raised here after the GPU threads sign off, never left to hang them
            try:
                for item in items:
                    work.put(item)
            except BaseException as e:
                failed.append(e)
            finally:
                for _ in threads:
                    work.put(stop)

        threading.Thread(target=feeder, daemon=True).start()
        finished = 0
        while finished < len(threads):      # each GPU thread signs off after the last item
            got = done.get()
            if got is stop:
                finished += 1
            else:
                yield got
        if failed:
            raise failed[0]

    def close(self) -> None:
        for s in self.slots:
            s.close()
