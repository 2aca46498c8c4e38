"""What a template hands to the builder: a KernelSpec (source, entry, launch shape, arguments)."""

from __future__ import annotations

import hashlib
import numbers
import random
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


def kernel_source(filename: str, package: str = "autosched.kernels", _seen: frozenset = frozenset()) -> str:
    """Text of a .cuh file shipped in `package` (autosched/kernels), with its `#include "x.cuh"` lines
    replaced by those files (once each), so the source hash that keys the build cache covers them."""
    text = resources.files(package).joinpath(filename).read_text()
    out = []
    for line in text.splitlines(keepends=True):
        m = _LOCAL_INCLUDE.match(line)
        if m is None:
            out.append(line)
        elif m.group(1) not in _seen:
            out.append(kernel_source(m.group(1), package, _seen | {filename, m.group(1)}))
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
    kernel_package = "autosched.kernels"    # where `header` ships (a template of another package: its own)

    def source_hash(self) -> str:
        """sha256 of the kernel source render() hands NVRTC (the header with its local includes
        inlined).  A timing is only evidence for the source it timed: build.build_id pairs this
        with the NVRTC version to tell current measurements from stale ones.  Read once per
        instance: the tuner and benchmarks ask for it per run and per shape."""
        cached = self.__dict__.get("_source_hash")
        if cached is None:
            if not self.header:
                raise ValueError(f"template {self.family or type(self).__name__} names no header")
            text = kernel_source(self.header, self.kernel_package)
            cached = self._source_hash = hashlib.sha256(text.encode()).hexdigest()
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

    def sanitizer_picks(self, workload, device) -> list[dict]:
        """The configs a compute-sanitizer run covers (its extreme corners first); none by default."""
        return []


class MicroKernelTemplate(Template):
    """A template that is also a DietCode micro-kernel of a dynamic-M GEMM (autosched.dynamic,
    ops.HgemmDispatch): one binary serves every M, and what the dynamic tuner, the dispatcher, the
    synthetic runner and the .cu export need to know of it is asked here, never decided by its name.
    templates/micro_kernels.py lists them; a new one is its .cuh, its module and one line there."""

    tma = False              # takes TMA maps of X, W and Y (encoded per call) and walks a persistent grid
    workspace = False        # takes a workspace of tile counters and FP32 partials (ops lay one out for all Ms)
    persistent = False       # one CTA an SM at most: its compile report holds one block an SM if it fits
    on_wgmma = False         # runs on wgmma (sm_90 only)
    nt_only = False          # reads only a linear layer's layout (B stored (N, K))
    exports_every_layout = False    # the .cu export launches it for any layout (else FP16 nt only)
    switch: str | None = None       # the knobs switch that lets a dynamic run sample it and ops serve it
    template_code = 0.0      # the cost model's template feature (templates whose tiles behave alike share one)
    roof = (4e12, 48.0)      # (an SM's tensor-core FLOP/s, the tile intensity reaching it): ProbeModel's guess

    def sample(self, space, extents: tuple[int, int], rng, local_pad: int = 1) -> dict:
        """One micro-kernel of `space`, its tiles drawn jointly for the largest extents (M_max, N)."""
        raise NotImplementedError

    def mutate(self, space, config: dict, rng, extents: tuple[int, int]) -> dict | None:
        """A neighbour of `config` keeping the tiles bound to threads; None if none is found."""
        raise NotImplementedError

    def describe(self, config: dict) -> str:
        """The config in the words of a tuning log."""
        raise NotImplementedError

    def short(self, config: dict) -> str:
        """The config's short name, for ops.HgemmDispatch.describe and its ladder."""
        raise NotImplementedError

    def unroll(self, config: dict) -> int:
        """Tensor-core instructions a warp (or consumer) issues per K slice: derived, never drawn."""
        raise NotImplementedError

    def threads(self, config: dict) -> int:
        raise NotImplementedError

    def tile(self, config: dict) -> tuple[int, int]:
        """(rows of the output, columns) one tile (a CTA, or a persistent loop's step) covers."""
        raise NotImplementedError

    def reads_workspace(self, config: dict) -> bool:
        """Whether a launch of `config` reads its workspace (else it is passed a null pointer)."""
        return self.workspace

    def grid(self, M: int, N: int, config: dict, sm_count: int) -> tuple[int, int, int]:
        """The launch grid at M (what render gives; ops.HgemmDispatch asks per call)."""
        raise NotImplementedError

    def c_grid(self, config: dict, N: int, sm_count: int) -> str:
        """`grid` as the C expression of the exported launcher (M and, where it names them, `units`:
        work units at M, in scope)."""
        raise NotImplementedError(f"the .cu export writes no launcher of {self.family} micro-kernels")

    def ladder(self, space, N: int, m_max: int, sm_count: int) -> list[tuple[int, dict]]:
        """(largest M, config) rungs of the rule-based ladder ops.HgemmDispatch serves over 1..m_max where
        no dynamic result does (templates/hgemm_ladder.py); [] for a template without one."""
        return []

    def seeds(self, space, N: int, lo: int, hi: int, sm_count: int) -> list[tuple[int, int, dict]]:
        """(first M, last M, config) a dynamic search starts from: by default the ladder's rungs that
        serve some M of [lo, hi], clipped to it (a template without a ladder lists its measured best)."""
        out, prev = [], 0
        for top, cfg in self.ladder(space, N, hi, sm_count):
            first, last = max(prev + 1, lo), min(top, hi)
            if first <= last:
                out.append((first, last, cfg))
            prev = top
        return out

    def resources(self, config: dict, workload, device) -> tuple[int, int, int, int]:
        """(threads, registers, spills, shared memory) estimated from the tiles, where ptxas is not asked."""
        raise NotImplementedError

    def modelled(self, config: dict, M: int, N: int, K: int, spec, device) -> tuple[float, int]:
        """(time in us, registers) of the synthetic runner at M x N x K for `spec` (the rendered
        kernel), from templates/gemm_model.py's roofline: MODELLED, not measured; NaN us where the
        block does not fit."""
        raise NotImplementedError

    def probe_features(self, config: dict, workload, device) -> list[float]:
        """The probe model's features of an unmeasured config (dynamic/cost_model.ProbeModel)."""
        raise NotImplementedError


def default_and_random(template, workload, device, n: int = 2, seed: int = 2) -> list[dict]:
    """The default config, then `n` random ones of the space (a sanitizer run's ordinary cases)."""
    cfgs = template.space(workload, device).enumerate()
    picks = [template.default_config(workload, device)]
    return picks + random.Random(seed).sample(cfgs, min(n, len(cfgs)))


def distinct(picks: list[dict]) -> list[dict]:
    """`picks` with each config once, where it first comes (the pick functions list corners that may
    coincide on a small space)."""
    return [c for i, c in enumerate(picks) if c not in picks[:i]]
