"""Host cost of one launch of a wgmma kernel: cuda.core's launch with pointer-sized arguments beside
the parts of runtime.launch's driver path for by-value tensor maps (packing, the function lookup,
the config, cuLaunchKernelEx / cuLaunchKernel), then a profile of runtime.launch.  Prints
microseconds per call (median of 5 x 2000).  (cuda.bindings' own (values, types) packing, tried
2026-11-26, was slower than runtime.pack_params: 11 us a cuLaunchKernelEx against 5.5.)"""
import statistics
import sys
import time


def per_call(fn, n=2000, rounds=5):
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(out)


def main():
    import numpy as np
    import torch
    from cuda.bindings import driver
    from cuda.core import Device, Stream
    from cuda.core import launch as core_launch

    from autosched import runtime as rt
    from autosched.build import Builder
    from autosched.device import query
    from autosched.launch import LoadedKernel
    from autosched.templates import HgemmWgmmaTemplate
    from autosched.workloads import Hgemm
    dev = Device(0)
    dev.set_current()
    torch.cuda.init()
    stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    info = query(0)
    w = Hgemm.from_shape("64x64x64_bt")
    t = HgemmWgmmaTemplate()
    spec = t.render(w, t.default_config(w, info), info)
    with Builder() as b:
        k = LoadedKernel(spec, b)
    a = torch.zeros((64, 64), device="cuda", dtype=torch.float16)
    maps = [rt.TensorMapArg(rt.encode_tensormap(arg.params(), a.data_ptr())) for arg in spec.args[:3]]
    args = (*maps, np.int32(64), np.int32(64), np.int32(64))
    ptr_args = (np.uint64(a.data_ptr()),) * 3 + args[3:]
    f = rt._function(k.kernel)
    cfg = rt._driver_config(k.config)
    params = rt.pack_params(args)
    h = driver.CUstream(int(stream.handle))
    rows = {
        "runtime.launch (driver path, whole)": lambda: rt.launch(stream, k.config, k.kernel, *args),
        "  pack_params": lambda: rt.pack_params(args),
        "  _function (cuKernelGetFunction)": lambda: rt._function(k.kernel),
        "  _driver_config (cached)": lambda: rt._driver_config(k.config),
        "  CUstream(int(handle))": lambda: driver.CUstream(int(stream.handle)),
        "  cuLaunchKernelEx only": lambda: driver.cuLaunchKernelEx(cfg, f, params, 0),
        "  cuLaunchKernel only": lambda: driver.cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, spec.smem_bytes, h, params, 0),
    }
    for name, fn in rows.items():
        us = per_call(fn)
        torch.cuda.synchronize()
        print(f"{us:8.2f} us  {name}", flush=True)
    import cProfile
    import pstats
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(2000):
        rt.launch(stream, k.config, k.kernel, *args)
    prof.disable()
    torch.cuda.synchronize()
    pstats.Stats(prof).sort_stats("tottime").print_stats(10)
    # cuda.core's launch of a kernel with only pointer/int args, for scale (an empty-ish kernel: the
    # same wgmma kernel would read garbage maps, so time core_launch on a trivial one instead)
    del ptr_args
    src = 'extern "C" __global__ void nop(unsigned long long a, unsigned long long b, unsigned long long c, int m, int n, int k) {}'
    from cuda.core import LaunchConfig, Program, ProgramOptions
    prog = Program(src, "c++", ProgramOptions(arch=f"sm_{info.cc[0]}{info.cc[1]}"))
    nop = prog.compile("cubin").get_kernel("nop")
    lc = LaunchConfig(grid=1, block=32)
    pa = (np.uint64(0),) * 3 + (np.int32(1),) * 3
    print(f"{per_call(lambda: core_launch(stream, lc, nop, *pa)):8.2f} us  cuda.core launch, 6 scalar args", flush=True)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
