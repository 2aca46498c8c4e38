"""RayRunner: tuning spread over a Ray cluster, one measurement actor per GPU, nothing lost when a
worker or a node dies.

    ray start --head                          # on one node
    ray start --address=HEAD:6379             # on every other node
    autosched tune gemv-q4f16 --shape 4096x4096 --cluster HEAD:6379

Actors.  On a cluster with GPUs, one actor per GPU (`num_gpus=1`: Ray gives each its own
CUDA_VISIBLE_DEVICES), each owning a one-GPU `GpuRunner`, so a kernel that faults or hangs still
costs only that actor's worker process.  On a CPU-only cluster (tests, CI, a replay study) the
actors (`num_cpus=1`) wrap a `ReplayRunner` over recordings sent to them once, optionally sleeping
`measure_delay_s` per config to stand in for a GPU's measuring time.

Binaries are built on the driver and travel in the work item.  The tuner's Builder already builds
ahead of the measurements in a process pool on the driver's CPUs, with its on-disk cache; the
measurements are stored under the build id of the driver's kernel sources and NVRTC
(`build_id`), which is only true if the driver's NVRTC made the cubin: a worker node with another
NVRTC (or an older checkout) would time a different binary under the driver's id.  A cubin is tens
of kilobytes, small beside a GPU's measuring time, and GPU nodes need no NVRTC or kernel sources.
(Should one driver's CPUs ever fall behind many GPUs, `--jobs` and a bigger driver are the first
answer; building on the workers would need the build id checked per node.)

Results flow back to the driver: `measure_stream` yields (tag, Measurement) as each finishes, so
the tuner stays the one SQLite writer.

Nothing lost, nothing twice.  Every work item has exactly one outstanding Ray call at a time.  An
item is yielded only when its call returns a Measurement; a call that fails because its actor died
(RayActorError: the process killed, its node gone) drops that actor and puts the item back at the
front of the queue for the others.  So each item is yielded once: a config whose actor died after
measuring it but before answering is measured again elsewhere, never written twice.  Ray's own
retries are off (`max_restarts=0`, `max_task_retries=0`) so that only this bookkeeping re-sends.
If every actor is dead with work left, `ClusterLost` says how much; the database holds every
result that arrived, so running the same command again resumes.

Ray is an optional extra (`pip install 'autosched[cluster]'`): importing this module does not
import ray; creating a RayRunner without it raises `RayMissing` saying what to install.
"""

from __future__ import annotations

import collections
import os
import socket
import time
import warnings
from dataclasses import dataclass
from typing import Iterable, Iterator

from autosched.device import DeviceInfo
from autosched.identity import build_id
from autosched.measure.protocol import Protocol
from autosched.measure.recording import ReplayRunner
from autosched.measure.result import Measurement, Status
from autosched.measure.runner import Runner

# ray is imported inside functions: optional / slow to import, a CPU install runs without it; GpuRunner is
# imported inside functions too: looked up at call time, as tests replace it on its module

INSTALL_HINT = "pip install 'autosched[cluster]' (or pip install 'ray>=2.9')"


class RayMissing(RuntimeError):
    """The Ray runner was asked for where ray is not installed."""


class ClusterLost(RuntimeError):
    """Every measurement actor died with work left."""


class ActorLostWarning(UserWarning):
    """A measurement actor died mid-run; its configs went to the others."""


def import_ray():
    try:
        import ray
    except ImportError as e:
        raise RayMissing(f"the Ray runner needs ray, which is not installed here: {INSTALL_HINT}") from e
    return ray


def connect(address: str | None = "auto", **init_kwargs) -> tuple[dict, bool]:
    """Join (or start) the Ray cluster at `address`: (its resources, whether this call connected).
    "auto": the cluster RAY_ADDRESS or `ray start` on this machine names, else a new local one;
    "local": always a new local one; anything else ("HOST:6379", "ray://HOST:10001"): that cluster.
    A process already connected (a test's, a notebook's ray.init) stays on its cluster."""
    ray = import_ray()
    started = False
    if not ray.is_initialized():
        kw = {"include_dashboard": False, "logging_level": "WARNING", "log_to_driver": False, **init_kwargs}
        ray.init(address=None if address in (None, "", "auto") else address, **kw)
        started = True
    return ray.cluster_resources(), started


class _Measurer:
    """What runs inside one actor: a runner of one GPU (or a replay) measuring one item a call."""

    def __init__(self, mode: str, recordings=None, delay_s: float = 0.0, protocol: Protocol | None = None,
                 timeout_s: float = 60.0, screen: float | None = None):
        self.delay_s = delay_s
        if mode == "replay":
            self.runner = ReplayRunner(recordings)
        else:
            from autosched.measure.gpu import GpuRunner
            # Ray has set CUDA_VISIBLE_DEVICES to this actor's one GPU: it is device 0 here
            self.runner = GpuRunner([0], protocol or Protocol(), timeout_s=timeout_s, screen=screen)

    def info(self) -> tuple:
        import ray
        return self.runner.device_info, ray.get_runtime_context().get_node_id(), socket.gethostname(), os.getpid()

    def measure(self, spec, binary) -> Measurement:
        if self.delay_s:
            time.sleep(self.delay_s)         # stands in for a GPU's measuring time in a replay
        return self.runner.measure(spec, binary)

    def observe(self, workload_key: str, m: Measurement) -> None:
        self.runner.observe(workload_key, m)

    def close(self) -> None:
        self.runner.close()


@dataclass
class _Job:
    tag: object
    spec: object
    binary: object


@dataclass
class ActorInfo:
    device: DeviceInfo
    node_id: str
    host: str
    pid: int


class RayRunner(Runner):
    """Measures on every actor of a Ray cluster at once (see the module's doc).

    recordings: None measures on the cluster's GPUs (one actor each; `actors` caps how many);
    recordings given: `actors` replay actors (default: one per CPU of the cluster) answer from them.
    depth: calls queued on each actor, so the next item is there when one finishes.
    own_connection: whether close() leaves the cluster (ray.shutdown: a local instance stops, a
    joined cluster runs on); default: if this runner connected, not if the caller had."""

    needs_binary = True

    def __init__(self, address: str | None = "auto", *, recordings=None, actors: int | None = None,
                 measure_delay_s: float = 0.0, protocol: Protocol = Protocol(), timeout_s: float = 60.0,
                 screen: float | None = None, depth: int = 2, start_timeout_s: float = 300.0,
                 init_kwargs: dict | None = None, own_connection: bool | None = None):
        if actors is not None and actors < 1:
            raise ValueError(f"actors must be >= 1, got {actors}")
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        if screen is not None and not screen > 1:
            raise ValueError(f"screen factor must be > 1, got {screen}")
        ray = import_ray()
        self._ray = ray
        self.address = address
        self.depth, self.screen = depth, screen
        self.actors, self.infos, self._alive = [], [], []
        self.lost: list[str] = []           # why each actor that died is gone
        self.requeued = 0                   # items sent again after their actor died
        self._local = None
        resources, started = connect(address, **(init_kwargs or {}))
        self._owns = started if own_connection is None else own_connection
        try:
            self._start(resources, recordings, actors, measure_delay_s, protocol, timeout_s, start_timeout_s)
        except BaseException:
            self.close()        # no actor, nor a Ray instance started for them, outlives a failed start
            raise

    def _start(self, resources, recordings, actors, measure_delay_s, protocol, timeout_s, start_timeout_s):
        ray, address, screen = self._ray, self.address, self.screen
        if recordings is not None:
            self._local = ReplayRunner(recordings)   # answers covers/build_id without a round trip
            self.mode, self.name = "replay", "ray-replay"
            self.needs_binary, self.partial = False, True
            cpus = int(resources.get("CPU", 0))
            n = actors or max(1, cpus)
            if n > cpus:        # Ray would wait for CPUs that never come
                raise RuntimeError(f"{n} replay actors asked for, but the Ray cluster at {address} has {cpus} CPUs")
            opts = {"num_cpus": 1}
            args = ("replay", ray.put(list(self._local.recordings.values())), measure_delay_s)
        else:
            gpus = int(resources.get("GPU", 0))
            if gpus < 1:
                raise RuntimeError(f"no GPU in the Ray cluster at {address} (resources: "
                                   f"{_resources_text(resources)}): a CPU-only cluster can only replay recordings")
            if actors is not None and actors > gpus:
                raise RuntimeError(f"{actors} GPU actors asked for, but the Ray cluster at {address} has {gpus} GPUs")
            self.mode, self.name = "gpu", "ray"
            n = actors or gpus
            opts = {"num_gpus": 1}
            args = ("gpu", None, 0.0, protocol, timeout_s, screen)
        cls = ray.remote(max_restarts=0, max_task_retries=0, **opts)(_Measurer)
        self.actors = [cls.remote(*args) for _ in range(n)]
        try:
            got = ray.get([a.info.remote() for a in self.actors], timeout=start_timeout_s)
        except ray.exceptions.GetTimeoutError as e:
            raise RuntimeError(f"{n} measurement actors did not all start in {start_timeout_s:.0f} s on the Ray "
                               f"cluster at {address} (resources: {_resources_text(resources)})") from e
        except ray.exceptions.RayError as e:
            raise RuntimeError(f"a measurement actor failed to start on the Ray cluster at {address}: {e}") from e
        self.infos = [ActorInfo(*g) for g in got]
        check_one_device(self.infos)
        self._alive = list(self.actors)

    @property
    def device_info(self) -> DeviceInfo:
        return self.infos[0].device

    @property
    def nodes(self) -> int:
        return len({i.node_id for i in self.infos})

    def build_id(self, template) -> str:
        if self._local is not None:
            return self._local.build_id(template)
        return build_id(template)      # the driver builds, with its own sources and NVRTC

    def covers(self, workload_key, template, config) -> bool:
        return self._local.covers(workload_key, template, config) if self._local else True

    def coverage_note(self, workload_key, template, space_size):
        return self._local.coverage_note(workload_key, template, space_size) if self._local else None

    def observe(self, workload_key: str, m: Measurement) -> None:
        if self.screen:     # every GPU's screening bar follows the best any of them has timed
            for a in self._alive:
                a.observe.remote(workload_key, m)

    def measure_stream(self, items: Iterable[tuple]) -> Iterator[tuple]:
        """items: (tag, spec, binary or build future).  Yields (tag, Measurement) as each finishes,
        every live actor kept `depth` calls deep; an item whose actor dies is sent to another."""
        ray = self._ray
        it = iter(items)
        exhausted = False
        waiting: collections.deque[_Job] = collections.deque()   # its build may still be running
        ready: collections.deque[_Job] = collections.deque()     # sendable, re-sent ones first
        inflight: dict = {}          # ObjectRef -> (actor, job)
        load = {id(a): 0 for a in self._alive}
        try:
            while True:
                lookahead = 2 * self.depth * max(1, len(self._alive))
                while not exhausted and len(waiting) + len(ready) < lookahead:
                    try:
                        tag, spec, binary = next(it)
                    except StopIteration:
                        exhausted = True
                        break
                    waiting.append(_Job(tag, spec, binary))
                # items whose build is done go out in the order given; one still building does not
                # hold back those behind it
                still = collections.deque()
                for job in waiting:
                    if hasattr(job.binary, "result"):
                        if not job.binary.done():
                            still.append(job)
                            continue
                        job.binary = job.binary.result()
                    ready.append(job)
                waiting = still
                if not self._alive and (ready or waiting or inflight or not exhausted):
                    left = len(ready) + len(waiting) + len(inflight) + (0 if exhausted else 1)
                    raise ClusterLost(f"every measurement actor of the Ray cluster died ({'; '.join(self.lost)}) "
                                      f"with {left}{'' if exhausted else '+'} configs unmeasured; the results "
                                      "that arrived are in the database: run again to resume")
                for a in sorted(self._alive, key=lambda a: load[id(a)]):
                    while load[id(a)] < self.depth and ready:
                        job = ready.popleft()
                        inflight[a.measure.remote(job.spec, job.binary)] = (a, job)
                        load[id(a)] += 1
                if not inflight:
                    if ready:
                        continue
                    if waiting:
                        waiting[0].binary.result()       # nothing to measure until this build is done
                        continue
                    if exhausted:
                        return
                    continue
                done, _ = ray.wait(list(inflight), num_returns=1, timeout=0.05 if waiting else None)
                for ref in done:
                    actor, job = inflight.pop(ref)
                    load[id(actor)] -= 1
                    try:
                        m = ray.get(ref)
                    except ray.exceptions.RayActorError as e:
                        self._lose(actor, e)
                        ready.appendleft(job)
                        self.requeued += 1
                        continue
                    except ray.exceptions.RayError as e:     # the runner raised: report it, go on
                        m = Measurement(Status.CRASH, error=f"{type(e).__name__}: {e}"[-2000:])
                    if self.screen:
                        self.observe(job.spec.workload_key, m)
                    yield job.tag, m
        finally:
            for ref in inflight:         # a consumer that stopped early leaves nothing queued
                try:
                    ray.cancel(ref)
                except Exception:
                    pass

    def _lose(self, actor, err) -> None:
        if actor not in self._alive:
            return
        i = self.actors.index(actor)
        info = self.infos[i] if i < len(self.infos) else None
        where = f"actor {i}" + (f" on {info.host} (pid {info.pid})" if info else "")
        why = str(err).strip().splitlines()[0][:200] if str(err).strip() else type(err).__name__
        self._alive.remove(actor)
        self.lost.append(f"{where}: {type(err).__name__}")
        warnings.warn(f"Ray measurement {where} died ({why}); its configs go to the {len(self._alive)} "
                      "left", ActorLostWarning, stacklevel=3)

    def close(self) -> None:
        ray = self._ray
        actors, self.actors, self._alive = self.actors, [], []
        if actors:
            try:        # GPU actors end their worker processes before they go
                ray.get([a.close.remote() for a in actors], timeout=30)
            except Exception:
                pass
            for a in actors:
                try:
                    ray.kill(a)
                except Exception:
                    pass
        if self._owns and ray.is_initialized():
            ray.shutdown()


def check_one_device(infos: list[ActorInfo]) -> None:
    """Refuse actors that measure for different device keys: a tuning's rows are stored and ranked
    under one key, and a time taken on one GPU model says nothing about another."""
    keys = collections.Counter(i.device.key for i in infos)
    if len(keys) > 1:
        raise RuntimeError("GPUs of different kinds in one Ray cluster: " +
                           ", ".join(f"{n} x {k}" for k, n in sorted(keys.items())) +
                           "; a tuning measures for one device key (its rows are stored and ranked under it), "
                           "so start the cluster from nodes with one GPU model")


def _resources_text(resources: dict) -> str:
    keep = {k: v for k, v in resources.items() if k in ("CPU", "GPU") or k.startswith("accelerator")}
    return ", ".join(f"{k} {v:g}" for k, v in sorted(keep.items())) or "none"
