"""KernelSpec -> Binary: NVRTC (through cuda.core) to a cubin for the exact architecture, in a
process pool, with an on-disk cache keyed by everything that changes the binary.

Needs only NVRTC and the CUDA headers from the nvidia-cuda-* wheels, so it runs on a CPU-only
machine.  The ptxas resource report (registers, shared memory, spills) is kept with each binary.
"""

from __future__ import annotations

import hashlib
import io
import json
import multiprocessing as mp
import os
import re
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from autosched import knobs
from autosched.device import nvrtc_version
from autosched.templates.base import KernelSpec

# cuda.core and cuda.pathfinder are imported inside functions: optional / slow to import, a CPU install runs
# without them


@dataclass(frozen=True)
class Resources:
    registers: int = 0
    smem_static: int = 0
    stack_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads


@dataclass
class Binary:
    key: str                      # cache key
    name_expression: str
    symbol: str = ""              # mangled entry name
    cubin: bytes = b""
    resources: Resources = field(default_factory=Resources)
    compile_s: float = 0.0
    log: str = ""
    error: str | None = None      # compile error text; the config is recorded as failed
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


_RES = {
    "registers": re.compile(r"Used (\d+) registers"),
    "smem_static": re.compile(r"(\d+) bytes smem"),
    "stack_bytes": re.compile(r"(\d+) bytes stack frame"),
    "spill_stores": re.compile(r"(\d+) bytes spill stores"),
    "spill_loads": re.compile(r"(\d+) bytes spill loads"),
}


def parse_ptxas(log: str) -> Resources:
    """The numbers of ptxas -v for the (single) entry in `log`."""
    vals = {}
    for name, rx in _RES.items():
        m = rx.search(log)
        vals[name] = int(m.group(1)) if m else 0
    return Resources(**vals)


def cuda_include_dir() -> str:
    from cuda.pathfinder import find_nvidia_header_directory
    inc = find_nvidia_header_directory("cudart")
    if not inc:
        raise RuntimeError("CUDA headers not found: install the nvidia-cuda-runtime wheel "
                           "(pip install 'nvidia-cuda-runtime')")
    return inc


def cache_key(spec: KernelSpec, nvrtc: str) -> str:
    return hashlib.sha256(f"{spec.source_hash}|nvrtc {nvrtc}".encode()).hexdigest()[:32]


def _macros(options: tuple[str, ...]) -> list[str] | None:
    """KernelSpec.options may only define macros: anything else would change the cache key
    without reaching NVRTC, so it is refused."""
    bad = [o for o in options if not o.startswith("-D")]
    if bad:
        raise ValueError(f"unsupported NVRTC options {bad}: a KernelSpec may only pass -D macros")
    return [o[2:] for o in options] or None


def compile_spec(spec: KernelSpec) -> Binary:
    """Compile one spec in this process (no cache).  Never raises for a compile error."""
    from cuda.core import Program, ProgramOptions
    key = cache_key(spec, nvrtc_version())
    opts = ProgramOptions(name=spec.family, arch=spec.arch, std="c++17",
                          include_path=[cuda_include_dir()], ptxas_options=["-v"],
                          define_macro=_macros(spec.options))
    log = io.StringIO()
    t0 = time.perf_counter()
    try:
        prog = Program(spec.source, "c++", opts)
        obj = prog.compile("cubin", name_expressions=[spec.name_expression], logs=log)
        symbol = obj.symbol_mapping[spec.name_expression]
        symbol = symbol.decode() if isinstance(symbol, bytes) else symbol
        text = log.getvalue().replace("\x00", "")
        return Binary(key, spec.name_expression, symbol, bytes(obj.code), parse_ptxas(text),
                      time.perf_counter() - t0, text)
    except Exception as e:   # NVRTC compile errors: the config fails, the tuning run goes on
        text = (log.getvalue() + "\n" + str(e)).replace("\x00", "").strip()
        return Binary(key, spec.name_expression, compile_s=time.perf_counter() - t0, log=text,
                      error=text[-4000:] or type(e).__name__)


def default_cache_dir() -> Path:
    root = knobs.CACHE.get() or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "autosched")
    return Path(root) / "build"


class BuildCache:
    """cubin + metadata on disk, one pair of files per key."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root) if root else default_cache_dir()

    def _paths(self, key: str) -> tuple[Path, Path]:
        d = self.root / key[:2]
        return d / f"{key}.cubin", d / f"{key}.json"

    def get(self, key: str) -> Binary | None:
        cubin, meta = self._paths(key)
        if not (cubin.exists() and meta.exists()):
            return None
        try:
            m = json.loads(meta.read_text())
            return Binary(key, m["name_expression"], m["symbol"], cubin.read_bytes(),
                          Resources(**m["resources"]), m["compile_s"], m.get("log", ""), cached=True)
        except (OSError, ValueError, KeyError, TypeError):
            return None      # a torn or stale entry is rebuilt

    def build(self, spec: KernelSpec) -> Binary:
        """The cached binary of `spec`, else one compiled in this process and cached (for a kernel or
        two, where starting Builder's pool would cost more than the compile)."""
        hit = self.get(cache_key(spec, nvrtc_version()))
        if hit is not None:
            return hit
        b = compile_spec(spec)
        self.put(b)
        return b

    def put(self, b: Binary) -> None:
        if not b.ok:
            return           # failures are recorded in the database, not cached
        cubin, meta = self._paths(b.key)
        cubin.parent.mkdir(parents=True, exist_ok=True)
        tmp = cubin.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(b.cubin)
        os.replace(tmp, cubin)
        m = {"name_expression": b.name_expression, "symbol": b.symbol, "compile_s": b.compile_s,
             "resources": asdict(b.resources), "log": b.log}
        tmp = meta.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(m))
        os.replace(tmp, meta)


def _pool_compile(spec: KernelSpec, cache_root: str) -> Binary:
    # the cache is written here, before the result goes back, so a build that returns is on disk
    b = compile_spec(spec)
    BuildCache(Path(cache_root)).put(b)
    return b


def _load_nvrtc() -> str:
    """A pool process's first work: import cuda.core and load NVRTC (Builder.start)."""
    from cuda.core import Program  # noqa: F401
    return nvrtc_version()


class Builder:
    """Compiles KernelSpecs in a process pool, through the disk cache.

    `submit` returns a Future at once, so builds run ahead of measurement: the caller can keep
    the GPU busy with finished binaries while NVRTC works on the next ones.
    """

    def __init__(self, workers: int | None = None, cache: BuildCache | None = None):
        self.workers = workers or max(1, (os.cpu_count() or 2))
        self.cache = cache if cache is not None else BuildCache()
        self._pool: ProcessPoolExecutor | None = None
        self._nvrtc = nvrtc_version()
        # builds in flight by key: a spec asked for again before its first build returns (a compile
        # report, then the probes of the same binary) waits on that build instead of starting a second
        self._inflight: dict[str, Future] = {}
        self._lock = threading.Lock()
        self.compiled = 0               # NVRTC builds finished (cache hits not counted)
        self.compile_s = 0.0            # their compile times summed (pool workers run side by side)

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # spawn: a forked child of a process that touched the CUDA driver is not safe
            self._pool = ProcessPoolExecutor(self.workers, mp_context=mp.get_context("spawn"))
        return self._pool

    def start(self) -> "Builder":
        """Start the pool's processes now, each importing cuda.core and loading NVRTC, in the
        background (returns at once): a tuning starts its GPU workers meanwhile, where the pool would
        otherwise start on the first build and the GPUs wait for it (a 128-config tune on the H100s of
        2026-11-26 waited 1.9 s on builds on one GPU; how much of it the pool's start was is for
        scripts/pool_start_ab.sh to measure)."""
        ex = self._executor()
        for _ in range(self.workers):
            ex.submit(_load_nvrtc)
        return self

    def submit(self, spec: KernelSpec) -> Future:
        key = cache_key(spec, self._nvrtc)
        with self._lock:
            running = self._inflight.get(key)
            if running is not None and not running.done():
                return running
        hit = self.cache.get(key)
        if hit is not None:
            fut: Future = Future()
            fut.set_result(hit)
            return fut
        with self._lock:
            running = self._inflight.get(key)
            if running is None or running.done():
                running = self._inflight[key] = self._executor().submit(_pool_compile, spec, str(self.cache.root))
                running.add_done_callback(lambda f, k=key: self._forget(k, f))
        return running

    def _forget(self, key: str, fut: Future) -> None:
        with self._lock:
            if self._inflight.get(key) is fut:
                del self._inflight[key]
            if not fut.cancelled() and fut.exception() is None:
                self.compiled += 1
                self.compile_s += fut.result().compile_s

    def build(self, spec: KernelSpec) -> Binary:
        return self.submit(spec).result()

    def build_many(self, specs: Iterable[KernelSpec]) -> Iterator[Binary]:
        """Binaries in the order of `specs`."""
        futures = [self.submit(s) for s in specs]
        for f in futures:
            yield f.result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
