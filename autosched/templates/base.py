"""What a template hands to the builder: a KernelSpec (source, entry, launch shape, arguments)."""

from __future__ import annotations

import hashlib
import numbers
import re
from dataclasses import dataclass, field
from importlib import resources

from autosched.device import MAX_BLOCK, MAX_GRID, MAX_THREADS_PER_BLOCK


class LaunchError(ValueError):
    """A rendered launch shape no CUDA GPU accepts: a template or workload bound let it through."""


@dataclass(frozen=True)
class ArgSpec:
    """One kernel argument, in launch order.

    role "input": the workload input `name`, transformed by `layout` (see autosched.layouts) and
    uploaded; role "output": the workload output, poisoned with NaN before the launch; role
    "scalar": the integer `value`, passed as `dtype` (i32, i64, u32); role "tensormap": the TMA map
    `layout_params` describe, passed by value (autosched.runtime.encode_tensormap, TensorMapArg);
    role "workspace": a pointer to `value` bytes of device scratch, allocated **zeroed once** per
    launchable and reused by every launch of it (the kernel leaves it zeroed again for the next
    launch, e.g. split-K's tile counters), never zeroed between launches.
    """
    name: str
    role: str
    layout: str = "identity"
    layout_params: tuple = ()     # sorted (key, value) pairs: hashable and picklable
    value: int = 0
    dtype: str = "i32"
    ctype: str = ""               # the kernel parameter's C++ type, for exported launchers

    def params(self) -> dict:
        return dict(self.layout_params)


@dataclass(frozen=True)
class KernelSpec:
    family: str
    workload_key: str
    config: tuple                 # sorted (knob, value) pairs of the validated config
    source: str                   # complete CUDA C++ translation unit
    name_expression: str          # the template instantiation NVRTC compiles and exports
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem_bytes: int               # dynamic shared memory per block
    args: tuple[ArgSpec, ...]
    arch: str
    options: tuple[str, ...] = field(default=())
    output_init: str = "nan"      # "zero" for kernels that accumulate into the output (split-K)
    # thread-block cluster shape in blocks (grid counts blocks and is a multiple of it per axis);
    # None: launched without the cluster attribute, as every kernel was before clusters
    cluster: tuple[int, int, int] | None = None

    def __post_init__(self):
        # every template builds its spec here, so one check keeps any config, of any template,
        # from reaching a launch (or an exported launcher) that the driver would refuse
        problem = launch_problem(self.grid, self.block, self.smem_bytes, self.cluster)
        if problem:
            raise LaunchError(f"{self.family} {self.workload_key} {dict(self.config)}: {problem}; the "
                              "template's space should have excluded this config (please report it)")

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def source_hash(self) -> str:
        blob = "\0".join([self.source, self.name_expression, self.arch, *self.options])
        return hashlib.sha256(blob.encode()).hexdigest()


MAX_CLUSTER_BLOCKS = 8    # the portable cluster size (16 is opt-in, non-portable, on sm_90)


def launch_problem(grid, block, smem_bytes, cluster=None) -> str | None:
    """Why CUDA would refuse to launch this grid, block, dynamic shared memory and cluster (None: it
    would not for these limits; the device's own shared-memory limit is the template's to check)."""
    for label, dims, limits in (("grid", grid, MAX_GRID), ("block", block, MAX_BLOCK)):
        if (not isinstance(dims, tuple) or len(dims) != 3
                or not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) for d in dims)):
            return f"{label} must be a tuple of 3 ints, got {dims!r}"
        for axis, d, most in zip("xyz", dims, limits):
            if not 1 <= d <= most:
                return f"{label}.{axis} = {d} is outside 1..{most}"
    if block[0] * block[1] * block[2] > MAX_THREADS_PER_BLOCK:
        return f"block {block} has {block[0] * block[1] * block[2]} threads, over {MAX_THREADS_PER_BLOCK}"
    if not isinstance(smem_bytes, numbers.Integral) or isinstance(smem_bytes, bool) or smem_bytes < 0:
        return f"dynamic shared memory must be an int >= 0, got {smem_bytes!r}"
    if cluster is not None:
        if (not isinstance(cluster, tuple) or len(cluster) != 3
                or not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 1 for d in cluster)):
            return f"cluster must be None or a tuple of 3 ints >= 1, got {cluster!r}"
        if cluster[0] * cluster[1] * cluster[2] > MAX_CLUSTER_BLOCKS:
            return f"cluster {cluster} has over {MAX_CLUSTER_BLOCKS} blocks (the portable limit)"
        for axis, g, c in zip("xyz", grid, cluster):
            if g % c:
                return f"grid.{axis} = {g} is no multiple of the cluster's {c}"
    return None


_LOCAL_INCLUDE = re.compile(r'\s*#include\s+"([\w.]+\.cuh)"')


def kernel_source(filename: str, _seen: frozenset = frozenset()) -> str:
    """Text of a .cuh file shipped in autosched/kernels, with its `#include "x.cuh"` lines replaced
    by those files (once each), so the source hash that keys the build cache covers them."""
    text = resources.files("autosched.kernels").joinpath(filename).read_text()
    out = []
    for line in text.splitlines(keepends=True):
        m = _LOCAL_INCLUDE.match(line)
        if m is None:
            out.append(line)
        elif m.group(1) not in _seen:
            out.append(kernel_source(m.group(1), _seen | {filename, m.group(1)}))
    return "".join(out)


def kernel_sources(filenames) -> str:
    """The .cuh files `filenames` as one text, each local include inlined once across all of them: a
    translation unit holding kernels of several families (an exported dispatcher), where
    kernel_source's per-file inlining would define a shared header twice."""
    seen: set = set()

    def one(filename: str) -> str:
        if filename in seen:
            return ""
        seen.add(filename)
        text = resources.files("autosched.kernels").joinpath(filename).read_text()
        return "".join(one(m.group(1)) if (m := _LOCAL_INCLUDE.match(line)) else line
                       for line in text.splitlines(keepends=True))
    return "".join(one(f) for f in filenames)


class Template:
    """A kernel family: its space for a workload and device, a rule-based default, and render."""

    family: str = ""
    workload_name: str = ""
    header: str = ""              # the .cuh in autosched/kernels that render() compiles
    # shapes (the family's syntax) whose configs identity.build_id compiles to name this template's
    # program, beside its family's sanitizer shapes: one for each layout or size range they miss
    probe_shapes: tuple[str, ...] = ()

    def source_hash(self) -> str:
        """sha256 of the kernel source render() hands NVRTC (the header with its local includes
        inlined).  A timing is only evidence for the source it timed: build.build_id pairs this
        with the NVRTC version to tell current measurements from stale ones.  Read once per
        instance: the tuner and benchmarks ask for it per run and per shape."""
        cached = self.__dict__.get("_source_hash")
        if cached is None:
            if not self.header:
                raise ValueError(f"template {self.family or type(self).__name__} names no header")
            cached = self._source_hash = hashlib.sha256(kernel_source(self.header).encode()).hexdigest()
        return cached

    def refuses(self, workload) -> str | None:
        """Why this template cannot serve `workload` (None: it can).  A workload may have several
        templates; one may serve only some of its shapes, layouts or dtypes."""
        if workload.name != self.workload_name:
            return f"{self.family} serves {self.workload_name}, not {workload.name}"
        return None

    def default_on(self, device) -> bool:
        """Whether this template's rule-based default should be its family's on `device`, ahead of
        the templates listed before it (selection.default_candidate): False unless a template knows
        it is the fastest where it runs."""
        return False

    def space(self, workload, device):
        raise NotImplementedError

    def default_config(self, workload, device) -> dict:
        raise NotImplementedError

    def render(self, workload, config: dict, device) -> KernelSpec:
        raise NotImplementedError

    def derived_features(self, config: dict, params: dict, device) -> dict[str, float]:
        """Cost-model features of a config on a shape (workload params) beyond its knobs: what the
        hardware sees (blocks, waves, occupancy, ...).  Values >= 0; none by default."""
        return {}
