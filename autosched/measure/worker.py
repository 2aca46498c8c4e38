"""The process that owns one GPU: loads binaries, checks them, times them.

It is started (spawn) and fed by GpuRunner over a pipe.  Anything that can poison a CUDA context
(a faulting kernel) makes it answer with the error and exit; GpuRunner starts a fresh one.  A
kernel that hangs is killed from outside.

Inputs are drawn with a fresh random seed for each workload a worker sees (recorded with every
measurement); the float64 reference is computed once per workload on the host.  GEMMs whose A is
stored row-major share one row family per K, layout and dtype (row_family.py): every shape's inputs,
reference and bound are the first M rows and N columns of the family's, drawn with the family's
seed (the one recorded) and computed only for rows and columns no earlier shape needed, their
float64 products on the GPU (reference_gpu.py).  The family in use is mirrored on the GPU
(_FamilyMirror: its A rows, B^T rows, reference and bound, uploaded once each time it grows), and a
member's inputs and check read their corner of it in place: a dynamic tuning's hundred probe shapes
uploaded each shape's own copies before (2026-11-26: 1.6 s of a 4096 x 4096 run's worker time, against
1.4 s of timing).  Before each config runs its output is poisoned with NaN, and it is checked both
before and after timing.
"""

from __future__ import annotations

import cProfile
import os
import secrets
import time
import traceback

import numpy as np

from autosched import layouts
from autosched import knobs
from autosched.device import STATIC_SMEM_LIMIT, query
from autosched.measure.protocol import Protocol, Timer
from autosched.measure.reference_gpu import CHECK_KINDS, GpuChecker, GpuProducts, host_products, host_reference_forced
from autosched.measure.relayout_gpu import GpuRelayout
from autosched.measure.result import Measurement, Status, summarize
from autosched.measure.row_family import RowFamily
from autosched.runtime import (TensorMapArg, allow_dynamic_smem, check, encode_tensormap, launch,
                               launch_config, load_kernel, ptr, scalar, to_device)
from autosched.templates.base import ArgSpec
from autosched.workloads import workload_from_key

# cuda.bindings and cuda.core are imported inside functions: optional / slow to import, a CPU install runs
# without them


class _FamilyMirror:
    """Device copies of one row family's arrays as far as it has grown: A's rows and B^T's rows in
    the stored dtype, the float64 reference and bound (rows x cols, row stride cols).  A member's A
    and (B stored (N, K)) B are prefixes of them, its reference and bound their top-left corner, so
    its kernels and checks use them where they lie.  `sync` uploads again after the family grew (a
    few times a run: rows at least double); the buffers a member was given are closed then, and a
    worker holds one member's state at a time, made after the sync."""

    def __init__(self, device, stream, family: RowFamily):
        self.device, self.stream, self.family = device, stream, family
        self.rows = self.cols = -1
        self.bufs: dict[str, object] = {}

    def sync(self, family: RowFamily) -> None:
        if (family.rows, family.cols) == (self.rows, self.cols):
            return
        self.close()
        arrays = family.device_arrays()
        self.bufs = {name: to_device(self.device, self.stream, arr) for name, arr in arrays.items()}
        self.rows, self.cols = family.rows, family.cols

    def close(self) -> None:
        for b in self.bufs.values():
            b.close()
        self.bufs = {}
        self.rows = self.cols = -1


class _WorkloadState:
    def __init__(self, device, stream, workload, family: RowFamily | None = None, relayout=None,
                 mirror: _FamilyMirror | None = None):
        self.workload = workload
        self.relayout = relayout        # a GpuRelayout: the layouts it handles are made on the GPU
        # device addresses this state reads but does not own (its family mirror's): input name ->
        # address, and the reference and bound's with their row stride
        self.borrowed: dict[str, int] = {}
        self.ref_ld: tuple[int, int, int] | None = None
        if family is not None:
            # a member of a row family: views of rows the family drew and checked against already
            self.seed = family.seed
            self.inputs, self.reference, self.bound = family.view(workload)
            if mirror is not None:
                mirror.sync(family)
                for name, arr in family.prefix_inputs(workload).items():
                    self.borrowed[name] = int(mirror.bufs[arr].handle)
                self.ref_ld = (int(mirror.bufs["ref"].handle), int(mirror.bufs["bound"].handle), mirror.cols)
        else:
            self.seed = secrets.randbits(31)
            self.inputs = workload.inputs(self.seed)
            self.reference = workload.reference(self.inputs)
            # workloads whose tolerance depends on the inputs (fp32 GEMM: sum |a||b|) give it once
            self.bound = workload.error_bound(self.inputs) if hasattr(workload, "error_bound") else None
        shape, dtype = workload.output_spec()
        self.out_host = np.empty(shape, dtype=dtype)
        self.out = device.allocate(max(1, self.out_host.nbytes), stream=stream)
        self.stream = stream
        self.packed: dict = {}          # (arg, layout, params) -> device Buffer
        self.maps: dict = {}            # (arg, "tensormap", params) -> TensorMapArg (host bytes)
        self.device = device
        self.ref_dev = self.bound_dev = None    # the GPU check's copies (Worker._check_output)

    def check(self, out):
        if self.bound is None:
            return self.workload.check(out, self.reference)
        return self.workload.check(out, self.reference, self.bound)

    def arg_buffer(self, arg):
        """The input `arg` names in the layout it asks for, uploaded once per workload: made on the
        GPU from the natural input where the state's GpuRelayout handles the layout, else on the host
        (layouts.apply)."""
        if arg.layout == "identity" and arg.name in self.borrowed:
            return self.borrowed[arg.name]
        key = (arg.name, arg.layout, arg.layout_params)
        buf = self.packed.get(key)
        if buf is None:
            host = self.inputs[arg.name]
            relayout = self.relayout
            if relayout is not None and arg.layout != "identity" and relayout.handles(arg.layout, arg.params(), host):
                natural = self.arg_buffer(ArgSpec(arg.name, "input"))
                buf = relayout(arg.layout, arg.params(), natural, host.shape, host.dtype.itemsize)
            else:
                buf = to_device(self.device, self.stream, layouts.apply(arg.layout, arg.params(), host))
            self.packed[key] = buf
        return buf

    def tensormap_arg(self, arg):
        """The TMA map `arg` describes, over the input buffer of the same name (identity layout) or
        the output, as the TensorMapArg a launch passes by value; encoded once per workload, like
        the packed inputs."""
        key = (arg.name, "tensormap", arg.layout_params)
        buf = self.maps.get(key)
        if buf is None:
            of = arg.params().get("of")
            if of not in ("input", "output"):
                raise ValueError(f"tensormap argument {arg.name}: 'of' must be input or output, got {of!r}")
            data = self.out if of == "output" else self.arg_buffer(ArgSpec(arg.name, "input"))
            buf = self.maps[key] = TensorMapArg(encode_tensormap(arg.params(), int(ptr(data))))
        return buf


def kernel_arg(arg, st: _WorkloadState, workspaces: dict | None = None):
    """One launch argument: a device pointer for buffers and workspaces, a TMA map by value, a
    sized integer for scalars."""
    if arg.role == "scalar":
        return scalar(arg)
    if arg.role == "tensormap":
        return st.tensormap_arg(arg)
    if arg.role == "workspace":
        return ptr(workspaces[arg.name])
    return ptr(st.out if arg.role == "output" else st.arg_buffer(arg))


def zeroed_workspaces(args, allocate, zero) -> dict:
    """A buffer for each "workspace" argument, from `allocate(nbytes)`, zeroed by `zero(buffer,
    nbytes)`: once per measured config, then shared by its check, timing and re-check launches (the
    kernel resets what it used).  Never shared between configs: one that failed may leave it dirty."""
    out = {}
    for a in args:
        if a.role != "workspace":
            continue
        if a.value < 1:
            raise ValueError(f"workspace argument {a.name}: {a.value} bytes")
        out[a.name] = buf = allocate(a.value)
        zero(buf, a.value)
    return out


# row families a worker keeps besides the one in use: at most this many, and no more host memory
# than FAMILY_BYTES in all (a 4096 x 4096 family of 1,024 rows holds ~0.3 GB: B in float64, |B|, rows)
MAX_FAMILIES = 6
FAMILY_BYTES = 4 << 30
SCREEN_RUNS = 3      # timed runs (after one warm-up) that decide whether a config is screened out


class Worker:
    def __init__(self, device_id: int, protocol: Protocol):
        from cuda.core import Device
        self.device = Device(device_id)
        self.device.set_current()
        self.stream = self.device.create_stream()
        self.timer = Timer(self.device, self.stream, protocol)
        self.states: dict[str, _WorkloadState] = {}
        self.families: dict[str, RowFamily] = {}      # by key, least recently used first
        self.info = query(device_id)
        # a row family's float64 products on this GPU (seconds on the host at thousands of rows)
        # and the checks too (tens of milliseconds each on the host at millions of outputs)
        host = host_reference_forced()
        self.products = host_products if host else GpuProducts(self.device, self.stream, self.info.arch)
        self.checker = None if host else GpuChecker(self.device, self.stream, self.info.sm_count, self.info.arch)
        # the q4 weight layouts too (relayout_gpu.py): every GPU of a host packed each one on the host
        self.relayout = None if host else GpuRelayout(self.device, self.stream, self.info.sm_count, self.info.arch)
        self.mirror: _FamilyMirror | None = None       # the row family in use, on the GPU (checked there)

    def state(self, workload_key: str) -> _WorkloadState:
        st = self.states.get(workload_key)
        if st is None:
            # one workload's buffers at a time: a record or tune run moves through shapes in order
            self._release_states()
            w = workload_from_key(workload_key)
            fam = self._family_of(w)
            st = _WorkloadState(self.device, self.stream, w, fam, self.relayout, self._mirror_of(fam, w))
            self.states[workload_key] = st
        return st

    def _family_of(self, workload) -> RowFamily | None:
        """The row family of `workload`, or None where its rows are not a family's (row_family.py).
        The MAX_FAMILIES used last are kept (one K, layout and dtype each: every M and N of a dynamic
        tuning's probes and instances is one family's corner)."""
        key = workload.row_family_key() if hasattr(workload, "row_family_key") else None
        if key is None:
            return None
        fam = self.families.pop(key, None)
        if fam is None:
            while len(self.families) >= MAX_FAMILIES:     # the old arrays go before new ones are drawn
                self.families.pop(next(iter(self.families)))
            fam = RowFamily(workload, secrets.randbits(31), self.products)
        # the least recently used go first while the others (not this one) pass the memory budget
        need = fam.bytes_after(workload)
        while self.families and need + sum(f.nbytes for f in self.families.values()) > FAMILY_BYTES:
            self.families.pop(next(iter(self.families)))
        self.families[key] = fam
        return fam

    def _mirror_of(self, fam: RowFamily | None, workload) -> _FamilyMirror | None:
        """The device mirror of `fam` (one family's at a time: switching family frees the last's), or
        None where the check is the host's or the output's check would not be the GPU's."""
        if fam is None or self.checker is None:
            return None
        shape, dtype = workload.output_spec()
        if np.dtype(dtype) not in CHECK_KINDS or len(shape) != 2:
            return None
        if self.mirror is not None and self.mirror.family is not fam:     # another family, or redrawn
            self.mirror.close()
            self.mirror = None
        if self.mirror is None:
            self.mirror = _FamilyMirror(self.device, self.stream, fam)
        return self.mirror

    def _release_states(self) -> None:
        for old in self.states.values():
            for b in [*old.packed.values(), old.ref_dev, old.bound_dev]:
                if b is not None:
                    b.close()
            old.out.close()
        self.states.clear()

    def forget(self) -> None:
        """Drop every input, reference and family: the next measurement starts as a fresh worker's."""
        self._release_states()
        self.families.clear()
        if self.mirror is not None:
            self.mirror.close()
            self.mirror = None

    def _check_output(self, st: _WorkloadState):
        """The Check of the output the last launch left: on the GPU where the checker handles it
        (a per-element bound: the GEMMs), else on the host."""
        c = self.checker
        if c is not None and st.ref_ld is not None:
            ref, bound, ld = st.ref_ld
            cols = st.out_host.shape[1]
            return c(st.out, st.out_host.dtype, st.out_host.size, ref, bound, cols=cols, ld=ld)
        if c is not None and c.handles(st.out_host, st.reference, st.bound):
            if st.ref_dev is None:
                st.ref_dev, st.bound_dev = c.upload(st.reference), c.upload(st.bound)
            return c(st.out, st.out_host.dtype, st.out_host.size, st.ref_dev, st.bound_dev)
        return st.check(self._read_output(st))

    def _read_output(self, st: _WorkloadState) -> np.ndarray:
        from cuda.bindings import driver
        self.stream.sync()
        check(driver.cuMemcpyDtoH(st.out_host.ctypes.data, int(st.out.handle), st.out_host.nbytes))
        return st.out_host

    def measure(self, spec, binary, screen_over_us: float | None = None) -> Measurement:
        """Check, time, check again.  With `screen_over_us`, a few runs come first: a config whose
        median of them is above it is recorded from those runs alone (it cannot win; the check after
        timing, which guards a winner against races, is skipped for it)."""
        from cuda.bindings import driver
        st = self.state(spec.workload_key)
        res = binary.resources
        base = dict(registers=res.registers, smem_bytes=res.smem_static + spec.smem_bytes,
                    spills=res.spills, extra={"seed": st.seed})
        if res.registers * spec.threads > self.info.regs_per_block:
            return Measurement(Status.LAUNCH_ERROR, error=f"{res.registers} registers x "
                               f"{spec.threads} threads > {self.info.regs_per_block} per block", **base)
        # over 48 KB of dynamic shared memory a kernel opts in, up to the GPU's opt-in maximum
        smem_limit = (self.info.smem_per_block_optin if spec.smem_bytes > STATIC_SMEM_LIMIT
                      else self.info.smem_per_block)
        if res.smem_static + spec.smem_bytes > smem_limit:
            return Measurement(Status.LAUNCH_ERROR, error=f"{res.smem_static + spec.smem_bytes} B of "
                               f"shared memory > {smem_limit} per block", **base)
        kernel = load_kernel(spec, binary)
        try:
            allow_dynamic_smem(kernel, spec.smem_bytes, self.device.device_id)
        except Exception as e:      # refused before anything ran: the context is fine, go on
            return Measurement(Status.LAUNCH_ERROR, error=f"opting in to {spec.smem_bytes} B of dynamic "
                               f"shared memory: {type(e).__name__}: {e}"[:2000], **base)
        workspaces = zeroed_workspaces(
            spec.args, lambda n: self.device.allocate(n, stream=self.stream),
            lambda buf, n: check(driver.cuMemsetD8Async(int(buf.handle), 0, n, int(self.stream.handle))))
        try:
            return self._measure(spec, st, kernel, workspaces, screen_over_us, base)
        finally:
            if workspaces:
                # after a fault the context is gone and these raise: the measurement already says
                # what happened, and the worker is replaced on a sticky error anyway
                try:
                    self.stream.sync()
                    for buf in workspaces.values():
                        buf.close()
                except Exception:
                    pass

    def _measure(self, spec, st, kernel, workspaces, screen_over_us, base) -> Measurement:
        from cuda.bindings import driver
        args = [kernel_arg(a, st, workspaces) for a in spec.args]
        cfg = launch_config(spec, pdl=False)

        zero_first = spec.output_init == "zero"

        def run():
            if zero_first:
                check(driver.cuMemsetD8Async(int(st.out.handle), 0, st.out_host.nbytes, int(self.stream.handle)))
            launch(self.stream, cfg, kernel, *args)

        def poisoned_run_and_check():
            # 0xFF bytes are NaN in fp16/fp32: an output element the kernel never writes fails.
            # A kernel that accumulates into its output (split-K) starts from zeros instead.
            fill = 0x00 if spec.output_init == "zero" else 0xFF
            check(driver.cuMemsetD8Async(int(st.out.handle), fill, st.out_host.nbytes,
                                         int(self.stream.handle)))
            run()
            return self._check_output(st)

        first = poisoned_run_and_check()
        if not first.ok:
            return Measurement(Status.WRONG, max_abs_err=first.max_abs_err, error=first.message, **base)
        if screen_over_us is not None:
            early = self.timer.time(run, repeat=SCREEN_RUNS, warmup=1)
            if float(np.median(early)) > screen_over_us:
                s = summarize(early)
                return Measurement(Status.OK, s["min_us"], s["median_us"], s["spread_us"], first.max_abs_err,
                                   runs=len(early), **base)
        times = self.timer.time(run)
        again = poisoned_run_and_check()   # a race can hide in one run and show in the next
        if not again.ok:
            return Measurement(Status.WRONG, max_abs_err=again.max_abs_err,
                               error="after timing: " + again.message, **base)
        s = summarize(times)
        return Measurement(Status.OK, s["min_us"], s["median_us"], s["spread_us"],
                           max(first.max_abs_err, again.max_abs_err), runs=len(times), **base)


def worker_main(device_id: int, conn, protocol: Protocol) -> None:
    """Serve requests until told to stop: ("prepare", key), ("measure", spec, binary[, screen_over_us]),
    ("forget",).  With AUTOSCHED_WORKER_PROFILE=DIR in the environment, the worker runs under cProfile
    and leaves DIR/worker-gpu<id>-<pid>.prof when it stops (where a measurement's time goes)."""
    prof_dir = knobs.WORKER_PROFILE.get()
    if not prof_dir:
        return _serve(device_id, conn, protocol)
    prof = cProfile.Profile()
    try:
        prof.runcall(_serve, device_id, conn, protocol)
    finally:
        os.makedirs(prof_dir, exist_ok=True)
        prof.dump_stats(os.path.join(prof_dir, f"worker-gpu{device_id}-{os.getpid()}.prof"))


def _serve(device_id: int, conn, protocol: Protocol) -> None:
    try:
        w = Worker(device_id, protocol)
    except Exception:
        conn.send(("failed", traceback.format_exc()))
        return
    conn.send(("ready", w.info.to_json()))
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        kind = msg[0]
        try:
            if kind == "prepare":
                t0 = time.perf_counter()
                w.state(msg[1])
                conn.send(("prepared", time.perf_counter() - t0))
            elif kind == "measure":
                conn.send(("result", w.measure(*msg[1:])))
            elif kind == "forget":
                w.forget()
                conn.send(("forgotten", None))
            else:
                conn.send(("error", f"unknown request {kind!r}"))
        except Exception as e:
            # a CUDA error may leave the context unusable: answer, then end this process
            conn.send(("fatal", Measurement(Status.LAUNCH_ERROR, error=f"{type(e).__name__}: {e}"[:2000])))
            conn.close()
            os._exit(3)
