"""autosched.runtime on a machine without a GPU: error checks, pointer and scalar arguments, the
refusal to load a failed build, launch configs, and that the module sits on the ground floor (no
cuda import when it is imported, nothing above autosched.device imported, measure not importing
launch).  Loading a real cubin needs a GPU: the tests under tests/gpu load through load_kernel."""

import ast
import pathlib
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from cuda.bindings import driver

from autosched.build import Binary
from autosched.device import STATIC_SMEM_LIMIT
from autosched import runtime
from autosched.runtime import (SCALAR_TYPES, TensorMapArg, allow_dynamic_smem, check, launch_config, load_kernel,
                               pack_params, pdl_supported, ptr, scalar)

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _driver_library_loads() -> bool:
    try:
        driver.cuGetErrorName(driver.CUresult.CUDA_ERROR_INVALID_VALUE)
        return True
    except Exception:   # no libcuda here: cuda.bindings cannot look a name up without it
        return False


def test_check_returns_the_values_after_success():
    ok = driver.CUresult.CUDA_SUCCESS
    assert check((ok, 7)) == 7
    assert check((ok, 1, 2)) == [1, 2]
    assert check(ok) == []
    assert check((ok,)) == []


def test_check_raises_with_the_error_number_and_name(monkeypatch):
    # cuGetErrorName needs the driver library, absent on a machine without a GPU: a stand-in for the
    # lookup alone (given the real CUresult) checks what check makes of the name
    seen = []

    def name_of(err):
        seen.append(err)
        return driver.CUresult.CUDA_SUCCESS, b"CUDA_ERROR_INVALID_VALUE"

    monkeypatch.setattr(driver, "cuGetErrorName", name_of)
    err = driver.CUresult.CUDA_ERROR_INVALID_VALUE
    with pytest.raises(RuntimeError, match=r"^CUDA error 1 \(CUDA_ERROR_INVALID_VALUE\)$"):
        check((err, 123))
    with pytest.raises(RuntimeError, match=r"^CUDA error 1 \(CUDA_ERROR_INVALID_VALUE\)$"):
        check(err)
    assert seen == [err, err]


def test_check_without_a_name_says_so(monkeypatch):
    monkeypatch.setattr(driver, "cuGetErrorName", lambda err: (driver.CUresult.CUDA_ERROR_INVALID_VALUE, None))
    with pytest.raises(RuntimeError, match=r"^CUDA error 999 \(\?\)$"):
        check((driver.CUresult.CUDA_ERROR_UNKNOWN,))


@pytest.mark.skipif(not _driver_library_loads(), reason="no CUDA driver library to look error names up in")
def test_check_names_a_real_error():
    with pytest.raises(RuntimeError, match=r"^CUDA error 1 \(CUDA_ERROR_INVALID_VALUE\)$"):
        check((driver.CUresult.CUDA_ERROR_INVALID_VALUE, None))


def test_ptr_from_int_tensor_and_buffer():
    for p in (ptr(0xDEADBEEF00), ptr(SimpleNamespace(data_ptr=lambda: 0xDEADBEEF00)),
              ptr(SimpleNamespace(handle=0xDEADBEEF00))):
        assert type(p) is np.uint64 and p == 0xDEADBEEF00
    # a torch tensor is asked for data_ptr() even where it also has a handle-like attribute
    both = SimpleNamespace(data_ptr=lambda: 16, handle=32)
    assert ptr(both) == 16
    assert ptr(2**64 - 1) == np.uint64(2**64 - 1)


def test_scalar_gives_the_parameter_type():
    for dtype, t in SCALAR_TYPES.items():
        v = scalar(SimpleNamespace(dtype=dtype, value=3))
        assert type(v) is t and v == 3
    assert set(SCALAR_TYPES) == {"i32", "i64", "u32", "u64", "f32"}      # u64: a null pointer argument (gemv-dense)
    with pytest.raises(KeyError):
        scalar(SimpleNamespace(dtype="f16", value=1))


def test_load_kernel_refuses_a_failed_binary_naming_kernel_and_error():
    spec = SimpleNamespace(name_expression="gemv<4, 2>")
    with pytest.raises(RuntimeError) as e:
        load_kernel(spec, SimpleNamespace(ok=False, error="line 3: error: expected ';'"))
    assert str(e.value) == "gemv<4, 2> failed to build:\nline 3: error: expected ';'"
    failed = Binary(key="k", name_expression=spec.name_expression, error="static_assert failed")
    with pytest.raises(RuntimeError, match=r"^gemv<4, 2> failed to build:\nstatic_assert failed$"):
        load_kernel(spec, failed)


def test_launch_config_with_and_without_pdl():
    spec = SimpleNamespace(grid=(8, 2, 1), block=(128, 1, 1), smem_bytes=4096)
    plain, pdl = launch_config(spec, False), launch_config(spec, True)
    for c in (plain, pdl):
        assert c.grid == (8, 2, 1) and c.block == (128, 1, 1) and c.shmem_size == 4096
    assert not plain.programmatic_stream_serialization and pdl.programmatic_stream_serialization
    assert pdl_supported() is True      # the installed cuda.core has the option


def test_launch_config_passes_a_cluster_and_counts_the_grid_in_clusters(monkeypatch):
    """cuda.core's LaunchConfig takes the grid in clusters once `cluster` is given (and asks the
    driver whether clusters exist, so it is faked here); a spec's grid counts blocks.  A spec without
    a cluster, or with None, launches exactly as before: no cluster keyword at all."""
    import cuda.core
    made = []

    class FakeLaunchConfig:
        def __init__(self, **kw):
            made.append(kw)
    monkeypatch.setattr(cuda.core, "LaunchConfig", FakeLaunchConfig)
    launch_config(SimpleNamespace(grid=(132, 1, 1), block=(384, 1, 1), smem_bytes=4096, cluster=(2, 1, 1)), False)
    assert made[-1] == {"grid": (66, 1, 1), "block": (384, 1, 1), "shmem_size": 4096, "cluster": (2, 1, 1)}
    launch_config(SimpleNamespace(grid=(132, 1, 1), block=(384, 1, 1), smem_bytes=4096, cluster=None), False)
    launch_config(SimpleNamespace(grid=(132, 1, 1), block=(384, 1, 1), smem_bytes=4096), True)
    assert made[-2] == {"grid": (132, 1, 1), "block": (384, 1, 1), "shmem_size": 4096}
    assert made[-1] == {**made[-2], "programmatic_stream_serialization": True}
    with pytest.raises(ValueError, match="no multiple of the cluster"):
        launch_config(SimpleNamespace(grid=(131, 1, 1), block=(384, 1, 1), smem_bytes=0, cluster=(2, 1, 1)), False)


def test_loaded_kernel_keeps_the_cluster_on_another_grid(monkeypatch):
    """LoadedKernel.launch(grid) (a grid known only at the call) keeps the spec's cluster."""
    import dataclasses

    import autosched.launch as launch_mod
    from autosched.templates.base import KernelSpec
    seen = []
    monkeypatch.setattr(launch_mod, "launch_config", lambda spec, pdl, coop: seen.append(spec) or spec.grid)
    spec = KernelSpec(family="f", workload_key="w", config=(), source="", name_expression="k", grid=(4, 1, 1),
                      block=(128, 1, 1), smem_bytes=0, args=(), arch="sm_90a", cluster=(2, 1, 1))
    k = object.__new__(launch_mod.LoadedKernel)
    k.spec, k.pdl, k.cooperative, k._grids, k.kernel = spec, False, False, {}, None
    import cuda.core
    monkeypatch.setattr(cuda.core, "launch", lambda *a: None)
    k.launch(None, (8, 1, 1))
    assert seen[-1] == dataclasses.replace(spec, grid=(8, 1, 1)) and seen[-1].cluster == (2, 1, 1)


def test_pack_params_copies_each_argument_by_value_at_its_pointer():
    import ctypes
    blob = bytes(range(128))
    args = (TensorMapArg(blob), np.int32(-7), np.uint64(0x7F0000001234), np.float32(1.5), TensorMapArg(blob[::-1]))
    address = pack_params(args)
    slots = (ctypes.c_void_p * len(args)).from_address(address)
    assert ctypes.string_at(slots[0], 128) == blob and ctypes.string_at(slots[4], 128) == blob[::-1]
    assert ctypes.c_int32.from_address(slots[1]).value == -7
    assert ctypes.c_uint64.from_address(slots[2]).value == 0x7F0000001234
    assert ctypes.c_float.from_address(slots[3]).value == 1.5
    assert all(p % 8 == 0 for p in slots)              # every parameter's copy 8-byte aligned
    # the next launch of the same argument types reuses the plan's buffers with its own values
    other = TensorMapArg(bytes(128))
    again = pack_params((other, np.int32(5), np.uint64(9), np.float32(-2.0), TensorMapArg(blob)))
    slots = (ctypes.c_void_p * len(args)).from_address(again)
    assert ctypes.string_at(slots[0], 128) == bytes(128) and ctypes.c_int32.from_address(slots[1]).value == 5
    assert ctypes.c_uint64.from_address(slots[2]).value == 9 and ctypes.c_float.from_address(slots[3]).value == -2.0
    with pytest.raises(TypeError, match=r"kernel argument 1 \(3, int\) is neither a numpy scalar"):
        pack_params((TensorMapArg(blob), 3))


def test_each_thread_packs_into_its_own_buffers():
    import ctypes
    import threading
    seen, both = {}, threading.Barrier(2)

    def pack(v):
        address = pack_params((np.int32(v), np.int32(v)))
        seen[v] = ctypes.c_void_p.from_address(address).value
        both.wait()              # both threads (and their buffers) alive at once
    threads = [threading.Thread(target=pack, args=(v,)) for v in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen[1] != seen[2]


def test_a_tensor_map_is_128_bytes():
    with pytest.raises(ValueError, match="128 bytes, got 127"):
        TensorMapArg(bytes(127))


def test_driver_config_counts_blocks_and_carries_the_attributes():
    cfg = SimpleNamespace(grid=(3, 1, 1), cluster=(2, 1, 1), block=(384, 1, 1), shmem_size=214144,
                          programmatic_stream_serialization=True, is_cooperative=True)
    d = runtime._driver_config(cfg)
    assert (d.gridDimX, d.gridDimY, d.gridDimZ) == (6, 1, 1)        # cuda.core counts clusters, the driver blocks
    assert (d.blockDimX, d.sharedMemBytes, d.numAttrs) == (384, 214144, 3)
    ids = driver.CUlaunchAttributeID
    assert [a.id for a in d.attrs] == [ids.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
                                      ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
                                      ids.CU_LAUNCH_ATTRIBUTE_COOPERATIVE]
    assert d.attrs[0].value.clusterDim.x == 2 and d.attrs[1].value.programmaticStreamSerializationAllowed == 1
    assert runtime._driver_config(cfg) is d                             # kept per config object
    plain = runtime._driver_config(SimpleNamespace(grid=(5,), cluster=None, block=256, shmem_size=None))
    assert (plain.gridDimX, plain.blockDimX, plain.sharedMemBytes, plain.numAttrs) == (5, 256, 0, 0)


def test_launch_without_tensor_maps_is_cuda_cores(monkeypatch):
    import cuda.core
    calls = []
    monkeypatch.setattr(cuda.core, "launch", lambda *a: calls.append(a))
    runtime.launch("stream", "config", "kernel", np.uint64(1), np.int32(2))
    assert calls == [("stream", "config", "kernel", np.uint64(1), np.int32(2))]


def test_launch_with_tensor_maps_goes_through_the_driver_with_every_parameter(monkeypatch):
    import ctypes
    calls = []

    def fake_launch(cfg, f, params, extra):
        slots = (ctypes.c_void_p * 3).from_address(params)
        calls.append((cfg.gridDimX, cfg.blockDimX, cfg.sharedMemBytes, int(cfg.hStream), int(f), extra,
                      ctypes.string_at(slots[0], 128), ctypes.c_int32.from_address(slots[1]).value,
                      ctypes.c_uint64.from_address(slots[2]).value))
        return (driver.CUresult.CUDA_SUCCESS,)
    monkeypatch.setattr(driver, "cuLaunchKernelEx", fake_launch)
    kernel = SimpleNamespace(handle=driver.CUfunction(0x1234))
    stream = SimpleNamespace(handle=driver.CUstream(0x5678))
    cfg = SimpleNamespace(grid=(132, 1, 1), cluster=None, block=(384, 1, 1), shmem_size=200000)
    blob = bytes(range(128))
    for m in (7, 300):
        runtime.launch(stream, cfg, kernel, TensorMapArg(blob), np.int32(m), np.uint64(0xABC))
    assert calls == [(132, 384, 200000, 0x5678, 0x1234, 0, blob, m, 0xABC) for m in (7, 300)]


def test_derived_handles_are_kept_per_object_not_per_value():
    made = []
    a, b = object(), object()
    assert runtime._cached(a, lambda: made.append("a") or "A") == "A"
    assert runtime._cached(a, lambda: made.append("a2") or "A2") == "A"       # the same object: kept
    assert runtime._cached(b, lambda: made.append("b") or "B") == "B"
    assert made == ["a", "b"] and runtime._DERIVED[id(a)][0] is a            # the object is held with it


def test_allow_dynamic_smem_leaves_a_kernel_within_the_limit_alone():
    # no opt-in (and so no driver call) up to what every launch gets: None would fail any use
    allow_dynamic_smem(None, STATIC_SMEM_LIMIT, 0)
    allow_dynamic_smem(None, 0, 0)
    assert STATIC_SMEM_LIMIT == 48 * 1024


def _autosched_imports(path: pathlib.Path) -> tuple[set[str], set[str]]:
    """The autosched modules `path` imports (inside functions too), and the other packages it
    imports at module level (what importing it loads)."""
    tree = ast.parse(path.read_text())
    ours, top_level = set(), set()
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
        for n in names:
            if n.startswith("autosched"):
                ours.add(n)
            elif node in tree.body:
                top_level.add(n.split(".")[0])
    return ours, top_level


def test_runtime_is_the_ground_floor():
    ours, top_level = _autosched_imports(ROOT / "autosched" / "runtime.py")
    assert ours == {"autosched.device"}
    assert "cuda" not in top_level
    ours, top_level = _autosched_imports(ROOT / "autosched" / "device.py")
    assert ours == set() and "cuda" not in top_level
    # and importing it loads no cuda module (a fresh interpreter: this one has cuda.bindings)
    code = ("import sys, autosched.runtime; "
            "bad = [m for m in sys.modules if m.split('.')[0] == 'cuda']; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT,
                   env={"PYTHONPATH": str(ROOT), "PATH": ""})


def test_measure_and_templates_import_nothing_that_launches():
    for pkg in ("measure", "templates"):
        for path in (ROOT / "autosched" / pkg).glob("*.py"):
            ours, _ = _autosched_imports(path)
            assert not {m for m in ours if m.startswith(("autosched.launch", "autosched.engine",
                                                          "autosched.ops", "autosched.benchmarks"))}, path
            if pkg == "templates":
                assert not {m for m in ours if m.startswith(("autosched.runtime", "autosched.measure"))}, path
