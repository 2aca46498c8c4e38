"""CUDA runtime helpers: pointers, error checks, loading a cubin, launch configs, the dynamic
shared-memory opt-in past the device limit (STATIC_SMEM_LIMIT, in autosched.device).

The ground floor every layer that launches kernels shares (the measuring worker, the benchmarks,
the ops, the engine, the scripts).  cuda modules are imported inside the functions, so this module
imports on a machine without a GPU or a driver; from autosched it imports only autosched.device.
"""

from __future__ import annotations

import ctypes
import struct
import threading

import numpy as np

from autosched.device import STATIC_SMEM_LIMIT

# cuda.bindings and cuda.core are imported inside functions: optional / slow to import, a CPU install runs
# without them


def check(result):
    """cuda.bindings calls return (err, *values): raise on err, return the values."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        from cuda.bindings import driver
        _, name = driver.cuGetErrorName(err)
        raise RuntimeError(f"CUDA error {int(err)} ({name.decode() if name else '?'})")
    return rest[0] if len(rest) == 1 else rest


def ptr(x) -> np.uint64:
    """A kernel pointer argument from a cuda.core Buffer, a torch tensor or an int (cuda.core
    packs a numpy uint64 as 8 bytes, which is what a pointer parameter takes)."""
    if hasattr(x, "data_ptr"):
        return np.uint64(x.data_ptr())
    if hasattr(x, "handle"):
        return np.uint64(int(x.handle))
    return np.uint64(int(x))


# cuda.core sizes a scalar parameter by its numpy type, so each ArgSpec dtype maps to one
# (u64 also passes a null pointer: a kernel argument the workload leaves unused)
SCALAR_TYPES = {"i32": np.int32, "i64": np.int64, "u32": np.uint32, "u64": np.uint64, "f32": np.float32}


def scalar(arg):
    """The launch argument of a scalar ArgSpec: its value as the kernel parameter's type."""
    return SCALAR_TYPES[arg.dtype](arg.value)


def to_device(device, stream, host: np.ndarray):
    """A new device buffer (stream-ordered allocation) holding a C-contiguous copy of `host`, copied
    in once the allocation is ready."""
    from cuda.bindings import driver
    host = np.ascontiguousarray(host)
    buf = device.allocate(max(1, host.nbytes), stream=stream)
    stream.sync()
    check(driver.cuMemcpyHtoD(int(buf.handle), host.ctypes.data, host.nbytes))
    return buf


def load_kernel(spec, binary):
    """The cuda.core Kernel of `spec` from its built `binary` (needs a GPU); a binary that failed
    to build raises here, naming the kernel, rather than deep inside the driver."""
    if not binary.ok:
        raise RuntimeError(f"{spec.name_expression} failed to build:\n{binary.error}")
    from cuda.core import ObjectCode
    # NVRTC exports the instantiation under its mangled name; the mapping lets us ask by the
    # name expression the spec was rendered with
    mod = ObjectCode.from_cubin(binary.cubin, symbol_mapping={spec.name_expression: binary.symbol.encode()})
    return mod.get_kernel(spec.name_expression)


def launch_config(spec, pdl: bool, cooperative: bool = False):
    """The spec's launch shape; with `pdl`, launched with programmatic stream serialization (the
    kernel may start while its predecessor runs: see kernels/pdl.cuh); `cooperative`, launched
    cooperatively (cuda.core's is_cooperative: the driver refuses a grid whose blocks cannot all be
    resident at once, which a grid-wide barrier needs).  A spec with a `cluster` launches with the
    cluster attribute (thread-block clusters, sm_90)."""
    from cuda.core import LaunchConfig
    kw = {"programmatic_stream_serialization": True} if pdl else {}
    if cooperative:
        kw["is_cooperative"] = True
    grid, cluster = spec.grid, getattr(spec, "cluster", None)
    if cluster is not None:
        # cuda.core (>= 0.3; 1.2.2 here) counts the grid in clusters once a cluster is given and
        # multiplies it back into blocks for the driver; a KernelSpec's grid always counts blocks
        if any(g % c for g, c in zip(grid, cluster)):
            raise ValueError(f"grid {grid} is no multiple of the cluster {cluster}")
        kw["cluster"] = tuple(cluster)
        grid = tuple(g // c for g, c in zip(grid, cluster))
    return LaunchConfig(grid=grid, block=spec.block, shmem_size=spec.smem_bytes, **kw)


def allow_dynamic_smem(kernel, nbytes: int, device_id: int) -> None:
    """Opt `kernel` (a cuda.core Kernel) in to `nbytes` of dynamic shared memory where that is
    over the 48 KB every launch gets (the GPU's opt-in maximum bounds it: the space's rule)."""
    if nbytes <= STATIC_SMEM_LIMIT:
        return
    from cuda.bindings import driver
    attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    h = kernel.handle
    if isinstance(h, driver.CUfunction):
        check(driver.cuFuncSetAttribute(h, attr, nbytes))
    else:                              # a library kernel (CUkernel): set per device
        check(driver.cuKernelSetAttribute(attr, nbytes, h, driver.CUdevice(device_id)))


def pdl_supported() -> bool:
    try:
        from cuda.core import LaunchConfig
        LaunchConfig(grid=(1, 1, 1), block=(32, 1, 1), programmatic_stream_serialization=True)
        return True
    except TypeError:         # a cuda.core without the option: launch the ordinary way
        return False


# -- TMA tensor maps ------------------------------------------------------------------------------
# A KernelSpec argument of role "tensormap" is a CUtensorMap (128 opaque bytes) encoded on the host
# for the buffer it describes and passed by value: the kernel takes it as a __grid_constant__
# parameter.  Not a pointer to a device copy: a map in global memory that a host copy wrote must be
# fenced (fence.proxy.tensormap::generic.acquire.sys) before the copy engine reads it, which costs a
# short GEMM microseconds a launch (bench/results/checks/wgmma-prologue-fence-2026-11-26.json).
# cuda.core cannot pack 128 raw bytes as a parameter, so `launch` sends such launches through the
# driver (cuLaunchKernelEx) with the parameter array built here.

TENSORMAP_BYTES = 128


class TensorMapArg:
    """A launch argument holding an encoded CUtensorMap, passed by value (see `launch`).  Its bytes
    sit in a host buffer of their own for as long as it lives, so a launch points at them instead
    of copying them (maps are encoded once and passed at every launch)."""
    __slots__ = ("blob", "_host", "address")

    def __init__(self, blob: bytes):
        if len(blob) != TENSORMAP_BYTES:
            raise ValueError(f"a CUtensorMap is {TENSORMAP_BYTES} bytes, got {len(blob)}")
        self.blob = bytes(blob)
        self._host = ctypes.create_string_buffer(self.blob, TENSORMAP_BYTES)
        self.address = ctypes.addressof(self._host)

    def __repr__(self) -> str:
        return f"TensorMapArg({self.blob[:8].hex()}...)"


def launch(stream, config, kernel, *args) -> None:
    """cuda.core's launch, unless an argument is a TensorMapArg: then the driver's
    cuLaunchKernelEx with the same grid, block, shared memory, cluster, PDL and cooperative
    attributes as `config` (a cuda.core LaunchConfig), every argument copied by value."""
    if not any(type(a) is TensorMapArg for a in args):
        from cuda.core import launch as core_launch
        core_launch(stream, config, kernel, *args)
        return
    from cuda.bindings import driver
    params = pack_params(args)    # valid until this thread's next launch: the driver copies them now
    cfg = _driver_config(config)
    cfg.hStream = _cached(stream, lambda: driver.CUstream(int(stream.handle)))
    check(driver.cuLaunchKernelEx(cfg, _cached(kernel, lambda: _function(kernel)), params, 0))


def pack_params(args) -> int:
    """The void*[] kernelParams of `args` (numpy scalars and TensorMapArgs) as an address, valid while
    `args` live and until this thread packs another launch of the same argument types.  A map's
    pointer is its own host copy's; the scalars go into a buffer of the argument types' packing plan
    (one per thread and argument-type tuple, reused at every launch: the driver copies the
    parameters before cuLaunchKernelEx returns)."""
    key = tuple(type(a) for a in args)
    plans = _LOCAL.__dict__.setdefault("plans", {})
    plan = plans.get(key)
    if plan is None:
        plan = plans[key] = _ParamPlan(args)
    return plan.pack(args)


_LOCAL = threading.local()        # per thread: packing plans, and launch configs (their stream is set per launch)
_SCALAR_CODES = {np.dtype(np.int32): "i4x", np.dtype(np.uint32): "I4x", np.dtype(np.int64): "q",
                 np.dtype(np.uint64): "Q", np.dtype(np.float32): "f4x", np.dtype(np.float64): "d"}


class _ParamPlan:
    """Where each parameter of one argument-type tuple lives: scalars in 8-byte slots of one host
    buffer (a struct format packs them), maps at their own host copies."""

    def __init__(self, args):
        codes, self.scalars, self.maps = [], [], []
        for i, a in enumerate(args):
            if type(a) is TensorMapArg:
                self.maps.append(i)
            elif isinstance(a, np.generic) and a.dtype in _SCALAR_CODES:
                codes.append(_SCALAR_CODES[a.dtype])
                self.scalars.append(i)
            else:
                raise TypeError(f"kernel argument {i} ({a!r}, {type(a).__name__}) is neither a numpy scalar of "
                                f"{', '.join(sorted(str(d) for d in _SCALAR_CODES))} nor a TensorMapArg: pass "
                                "pointers through runtime.ptr, scalars as numpy scalars")
        self.format = struct.Struct("<" + "".join(codes))
        self.data = ctypes.create_string_buffer(max(self.format.size, 8))
        self.slots = (ctypes.c_void_p * max(1, len(args)))()
        base = ctypes.addressof(self.data)
        for j, i in enumerate(self.scalars):
            self.slots[i] = base + 8 * j
        self.address = ctypes.addressof(self.slots)

    def pack(self, args) -> int:
        self.format.pack_into(self.data, 0, *[args[i] for i in self.scalars])
        for i in self.maps:
            self.slots[i] = args[i].address
        return self.address


# Driver handles derived from cuda.core objects (a stream's CUstream, a kernel's CUfunction), kept
# per object and only while the object is kept with them: never keyed by a handle value, which a
# module loaded after another was unloaded may reuse (a tuning worker loads thousands).
_DERIVED: dict = {}
_CACHE_SIZE = 256


def _cached(obj, make):
    hit = _DERIVED.get(id(obj))
    if hit is not None and hit[0] is obj:
        return hit[1]
    if len(_DERIVED) >= _CACHE_SIZE:
        _DERIVED.clear()
    value = make()
    _DERIVED[id(obj)] = (obj, value)
    return value


def _function(kernel):
    """The CUfunction to launch `kernel` (a cuda.core Kernel: a library CUkernel or a CUfunction) in
    the current context."""
    from cuda.bindings import driver
    h = kernel.handle
    return h if isinstance(h, driver.CUfunction) else check(driver.cuKernelGetFunction(h))


def _dims(v) -> tuple[int, int, int]:
    v = (v,) if isinstance(v, int) else tuple(v or (1,))
    return tuple(int(x) for x in v) + (1,) * (3 - len(v))


def _driver_config(config):
    """A CUlaunchConfig (stream unset) equal to the cuda.core LaunchConfig `config`, kept per thread
    and config object (the object is kept too, so its id stays its own)."""
    configs = _LOCAL.__dict__.setdefault("configs", {})
    hit = configs.get(id(config))
    if hit is not None and hit[0] is config:
        return hit[1]
    from cuda.bindings import driver
    grid, block = _dims(config.grid), _dims(config.block)
    cluster = getattr(config, "cluster", None)
    attrs = []
    if cluster:
        cluster = _dims(cluster)
        grid = tuple(g * c for g, c in zip(grid, cluster))   # cuda.core counts the grid in clusters
        a = driver.CUlaunchAttribute()
        a.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z = cluster
        attrs.append(a)
    if getattr(config, "programmatic_stream_serialization", False):
        a = driver.CUlaunchAttribute()
        a.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        a.value.programmaticStreamSerializationAllowed = 1
        attrs.append(a)
    if getattr(config, "is_cooperative", False):
        a = driver.CUlaunchAttribute()
        a.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
        a.value.cooperative = 1
        attrs.append(a)
    cfg = driver.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
    cfg.sharedMemBytes = int(config.shmem_size or 0)
    cfg.attrs = attrs
    cfg.numAttrs = len(attrs)
    if len(configs) >= _CACHE_SIZE:
        configs.clear()
    configs[id(config)] = (config, cfg)
    return cfg


_TM_DTYPES = {"fp16": ("CU_TENSOR_MAP_DATA_TYPE_FLOAT16", 2), "bf16": ("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 2)}
_TM_SWIZZLES = {0: "CU_TENSOR_MAP_SWIZZLE_NONE", 32: "CU_TENSOR_MAP_SWIZZLE_32B",
                64: "CU_TENSOR_MAP_SWIZZLE_64B", 128: "CU_TENSOR_MAP_SWIZZLE_128B"}


def tensormap_request(params: dict, address: int) -> dict:
    """The arguments of cuTensorMapEncodeTiled for a tensormap ArgSpec's params (of, dtype, dims
    innermost first, strides in bytes of the outer dimensions, box, swizzle in bytes) over the
    device buffer at `address`, with the driver's rules checked here so that a bad one names the
    input (the driver answers only CUDA_ERROR_INVALID_VALUE).  Enums are given by name."""
    p = dict(params)
    if p.get("dtype") not in _TM_DTYPES:
        raise ValueError(f"tensormap dtype must be one of {', '.join(_TM_DTYPES)}, got {p.get('dtype')!r}")
    dtype, size = _TM_DTYPES[p["dtype"]]
    dims, strides, box = tuple(p.get("dims", ())), tuple(p.get("strides", ())), tuple(p.get("box", ()))
    swizzle = p.get("swizzle", 0)
    rank = len(dims)
    if not 1 <= rank <= 5 or len(box) != rank or len(strides) != rank - 1:
        raise ValueError(f"tensormap: dims {dims}, box {box} and strides {strides} must give a rank of 1 to 5 "
                         "(strides: one per outer dimension)")
    if any(not 1 <= d < 2**32 for d in dims):
        raise ValueError(f"tensormap dims {dims}: each must be in 1 .. 2^32 - 1")
    if any(s % 16 or not 0 < s < 2**40 for s in strides):
        raise ValueError(f"tensormap strides {strides} (bytes): each must be a positive multiple of 16 below 2^40")
    if address % 16:
        raise ValueError(f"tensormap address {address:#x} is not 16-byte aligned")
    if any(not 1 <= b <= 256 for b in box):
        raise ValueError(f"tensormap box {box}: each side must be 1 .. 256 elements")
    if swizzle not in _TM_SWIZZLES:
        raise ValueError(f"tensormap swizzle must be one of {sorted(_TM_SWIZZLES)} bytes, got {swizzle!r}")
    if (box[0] * size) % 16 or (swizzle and box[0] * size > swizzle):
        raise ValueError(f"tensormap box {box}: its inner side is {box[0] * size} bytes, which must be a multiple "
                         f"of 16" + (f" and at most the {swizzle}-byte swizzle" if swizzle else ""))
    return {"dtype": dtype, "rank": rank, "address": int(address), "dims": list(dims), "strides": list(strides),
            "box": list(box), "element_strides": [1] * rank, "interleave": "CU_TENSOR_MAP_INTERLEAVE_NONE",
            "swizzle": _TM_SWIZZLES[swizzle], "l2_promotion": "CU_TENSOR_MAP_L2_PROMOTION_L2_256B",
            "oob_fill": "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"}   # out-of-bounds elements read as zeros


def encode_tensormap(params: dict, address: int) -> bytes:
    """The 128 bytes of the CUtensorMap the driver encodes for `params` over the buffer at
    `address` (needs the driver; no context is touched)."""
    from cuda.bindings import driver
    r = tensormap_request(params, address)
    tmap = check(driver.cuTensorMapEncodeTiled(
        getattr(driver.CUtensorMapDataType, r["dtype"]), r["rank"], r["address"],
        [driver.cuuint64_t(d) for d in r["dims"]], [driver.cuuint64_t(s) for s in r["strides"]],
        [driver.cuuint32_t(b) for b in r["box"]], [driver.cuuint32_t(e) for e in r["element_strides"]],
        getattr(driver.CUtensorMapInterleave, r["interleave"]), getattr(driver.CUtensorMapSwizzle, r["swizzle"]),
        getattr(driver.CUtensorMapL2promotion, r["l2_promotion"]),
        getattr(driver.CUtensorMapFloatOOBfill, r["oob_fill"])))
    return ctypes.string_at(tmap.getPtr(), TENSORMAP_BYTES)
