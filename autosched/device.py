"""What the tuner needs to know about a GPU, from one query (never from literals).

On a machine without a GPU the DeviceInfo comes from a recorded data set instead (it is stored
beside the measurements), so spaces are pruned against the GPU the measurements were taken on.
"""

from __future__ import annotations

import os
import platform
import re
from dataclasses import asdict, dataclass

# cuda.bindings and cuda.core are imported inside functions: optional / slow to import, a CPU install runs
# without them; subprocess too, for start-up time (the command line imports this module)

# shared memory a launch gets without opting in (static arrays plus dynamic); beyond it, up to the
# GPU's opt-in maximum, only dynamic memory of a kernel opted in at load (runtime.allow_dynamic_smem).
# A device limit, here beside the others, so that templates and the measuring worker read it without
# importing the layers that launch kernels
STATIC_SMEM_LIMIT = 48 * 1024

# launch shape limits of every CUDA GPU since compute capability 3.0: a launch past them fails
# with cudaErrorInvalidConfiguration, so a KernelSpec is checked against them when it is built
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS_PER_BLOCK = 1024


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    cc: tuple[int, int]
    sm_count: int
    max_threads_per_block: int
    max_threads_per_sm: int
    regs_per_block: int
    regs_per_sm: int
    smem_per_block: int          # without opt-in
    smem_per_block_optin: int
    smem_per_sm: int
    l2_bytes: int
    warp_size: int
    driver_version: str
    cuda_version: str            # of the NVRTC that builds for it

    @property
    def arch(self) -> str:
        return f"sm_{self.cc[0]}{self.cc[1]}"

    @property
    def key(self) -> str:
        """GPU model, compute capability, driver and CUDA versions: a tuned result is only
        trusted for the exact same key."""
        return f"{self.name}|{self.arch}|driver {self.driver_version}|cuda {self.cuda_version}"

    def to_json(self) -> dict:
        d = asdict(self)
        d["cc"] = list(self.cc)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "DeviceInfo":
        d = dict(d)
        d["cc"] = tuple(d["cc"])
        return cls(**d)


def nvrtc_version() -> str:
    from cuda.bindings import nvrtc
    err, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


def _driver_version() -> str:
    try:
        import subprocess
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    from cuda.bindings import driver
    err, v = driver.cuDriverGetVersion()
    return f"cuda-driver-api {v // 1000}.{(v % 1000) // 10}"


def gpu_count() -> int:
    """Number of CUDA GPUs this process can use, 0 where there is no driver or no device (never
    raises).  The host's count comes from NVML, which ignores CUDA_VISIBLE_DEVICES while every CUDA
    context (the measuring workers') honours it, so the variable is applied here as the driver does."""
    return visible_count(os.environ.get("CUDA_VISIBLE_DEVICES"), _host_gpus())


def _host_gpus() -> int:
    """The host's GPUs by NVML, without initialising CUDA in this process (it forks a build pool)."""
    try:
        from cuda.core import system
        return int(system.get_num_devices() if callable(getattr(system, "get_num_devices", None))
                   else system.num_devices)
    except Exception:  # no libcuda, no device, or a driver error: all mean "no GPU here"
        return 0


def visible_count(visible: str | None, host: int) -> int:
    """GPUs a CUDA context sees out of `host` under CUDA_VISIBLE_DEVICES=`visible` (None: unset).
    As the driver reads it: comma-separated indices or GPU-/MIG- UUIDs, the list cut at the first
    entry that names no device (an index out of range, a repeat, or a malformed entry), so "" and
    "-1" hide every GPU.  A UUID counts as one device; the driver checks that it exists."""
    if visible is None:
        return host
    seen: set[str] = set()
    for entry in visible.split(","):
        entry = entry.strip()
        if entry.isdigit():
            key = str(int(entry))
            if int(entry) >= host:
                break
        elif re.fullmatch(r"(GPU|MIG)-[0-9A-Za-z/-]+", entry):
            key = entry
        else:
            break
        if key in seen:
            break
        seen.add(key)
    return len(seen)


def query(device_id: int = 0) -> DeviceInfo:
    """Read the properties of GPU `device_id` (needs a driver and a device)."""
    from cuda.core import Device
    dev = Device(device_id)
    dev.set_current()
    p = dev.properties
    cc = dev.compute_capability
    return DeviceInfo(
        name=dev.name,
        cc=(cc.major, cc.minor),
        sm_count=p.multiprocessor_count,
        max_threads_per_block=p.max_threads_per_block,
        max_threads_per_sm=p.max_threads_per_multiprocessor,
        regs_per_block=p.max_registers_per_block,
        regs_per_sm=p.max_registers_per_multiprocessor,
        smem_per_block=p.max_shared_memory_per_block,
        smem_per_block_optin=p.max_shared_memory_per_block_optin,
        smem_per_sm=p.max_shared_memory_per_multiprocessor,
        l2_bytes=p.l2_cache_size,
        warp_size=p.warp_size,
        driver_version=_driver_version(),
        cuda_version=nvrtc_version(),
    )


def host_description() -> str:
    return f"{platform.node()} ({platform.machine()}, Python {platform.python_version()})"
