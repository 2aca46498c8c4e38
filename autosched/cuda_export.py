"""A tuned kernel as a standalone .cu: the template, its instantiation, and a launcher that
carries the grid, block and shared memory the config needs."""

from __future__ import annotations

import json
from pathlib import Path

from autosched.atomic import replacing
from autosched.device import STATIC_SMEM_LIMIT
from autosched.runtime import tensormap_request
from autosched.space import config_hash
from autosched.templates.base import kernel_source


def encode_map_call(params: dict, out: str, base: str, outer: str | None = None, box_outer: str | None = None) -> str:
    """C++ (a bool expression) that encodes the TMA map a "tensormap" ArgSpec's `params` describe into
    the variable `out` over the buffer `base` (kernels/tensormap_host.cuh), as runtime.encode_tensormap
    does; `outer`: an expression for the outer dimension where it is a run-time M, `box_outer` one
    for the box's outer extent where that follows M."""
    r = tensormap_request(params, 0)        # validated, with the driver's enum names
    fixed = (2, "CU_TENSOR_MAP_INTERLEAVE_NONE", "CU_TENSOR_MAP_L2_PROMOTION_L2_256B",
             "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")               # what tensormap_host.cuh passes
    if (r["rank"], r["interleave"], r["l2_promotion"], r["oob_fill"]) != fixed:
        raise ValueError(f"tensormap {params}: tensormap_host.cuh encodes 2-d maps with no interleave, 256B L2 "
                         "promotion and zero fill only")
    (inner, rows), (row_bytes,), (box_inner, box_rows) = r["dims"], r["strides"], r["box"]
    return (f"autosched_tma::encode_map(&{out}, {r['dtype']}, {base}, {inner}, {outer or rows}, {row_bytes}, "
            f"{box_inner}, {box_outer or box_rows}, {r['swizzle']})")


def launch_text(spec, names: str) -> str:
    """The launcher's last lines: <<<grid, block, smem, stream>>>, or, for a kernel launched in
    thread-block clusters (which <<<>>> cannot ask for), cudaLaunchKernelEx with the cluster
    dimension attribute."""
    if spec.cluster is None:
        return (f"  {spec.name_expression}<<<dim3{spec.grid}, dim3{spec.block}, {spec.smem_bytes}, stream>>>({names});\n"
                "  return cudaGetLastError();\n")
    x, y, z = spec.cluster
    return (f"  // launched in thread-block clusters of {spec.cluster}: the kernel traps without them\n"
            "  cudaLaunchConfig_t config = {};\n"
            f"  config.gridDim = dim3{spec.grid};\n  config.blockDim = dim3{spec.block};\n"
            f"  config.dynamicSmemBytes = {spec.smem_bytes};\n  config.stream = stream;\n"
            "  cudaLaunchAttribute cluster[1];\n"
            "  cluster[0].id = cudaLaunchAttributeClusterDimension;\n"
            f"  cluster[0].val.clusterDim.x = {x};\n  cluster[0].val.clusterDim.y = {y};\n"
            f"  cluster[0].val.clusterDim.z = {z};\n"
            "  config.attrs = cluster;\n  config.numAttrs = 1;\n"
            f"  return cudaLaunchKernelEx(&config, {spec.name_expression}, {names});\n")


def export_cuda(workload, template, config: dict, device, out: Path, source: str = "") -> Path:
    """The config's kernel as a standalone .cu with an extern "C" launcher taking the workload's
    buffers.  A kernel that takes TMA maps (the wgmma family) gets them encoded over those buffers at
    each call by the driver (kernels/tensormap_host.cuh: link with -lcuda) and passed by value."""
    spec = template.render(workload, config, device)     # validates the config first
    maps = [a for a in spec.args if a.role == "tensormap"]
    scratch = [a.name for a in spec.args if a.role == "workspace"]
    if scratch:
        # the caller would have to allocate it zeroed once and keep it for every later launch
        raise ValueError(f"this {template.family} config takes a device workspace ({', '.join(scratch)}): "
                         "exporting it as a standalone .cu is not supported yet")
    tag = config_hash(dict(spec.config))
    layouts = "\n".join(f"//   {a.name}: {a.role}, layout {a.layout} {json.dumps(a.params())}"
                        + (f" (= {a.value})" if a.role == "scalar" else "") for a in spec.args)
    # a map's launcher parameter is the buffer it describes; the kernel gets the map (map_<name>)
    params = ", ".join((("const void* " if a.params().get("of") == "input" else "void* ") + a.name)
                       if a.role == "tensormap" else f"{a.ctype} {a.name}" for a in spec.args)
    kernel_params = ", ".join(a.ctype for a in spec.args)
    names = ", ".join(f"map_{a.name}" if a.role == "tensormap" else a.name for a in spec.args)
    encode = ""
    for a in maps:
        map_type = a.ctype.replace("const ", "").replace("__grid_constant__ ", "")
        encode += (f"  {map_type} map_{a.name};\n"
                   f"  if (!{encode_map_call(a.params(), f'map_{a.name}', a.name)}) return cudaErrorInvalidValue;\n")
    zero = ""
    if spec.output_init == "zero":
        outs = [a for a in spec.args if a.role == "output"]
        shape, dtype = workload.output_spec()
        nbytes = dtype.itemsize
        for d in shape:
            nbytes *= d
        zero = (f"  // this config accumulates into its output (split-K): it must start from zeros\n"
                f"  cudaMemsetAsync({outs[0].name}, 0, {nbytes}, stream);\n")
    optin = ""
    if spec.smem_bytes > STATIC_SMEM_LIMIT:
        # without the opt-in a launch asking for more than 48 KB of dynamic shared memory fails
        # (cudaErrorInvalidValue) however much the GPU has
        optin = (f"  // {spec.smem_bytes} B of dynamic shared memory is over the {STATIC_SMEM_LIMIT} B every launch "
                 f"gets: opt in first\n"
                 f"  cudaError_t optin = cudaFuncSetAttribute({spec.name_expression}, "
                 f"cudaFuncAttributeMaxDynamicSharedMemorySize, {spec.smem_bytes});\n"
                 f"  if (optin != cudaSuccess) return optin;\n")
    if maps:    # wgmma and TMA need the arch-specific target (sm_90a), which -arch=sm_90 is not
        build = f"-gencode arch={spec.arch.replace('sm_', 'compute_')},code={spec.arch}"
        # the launch instantiates the template (an explicit instantiation would repeat __grid_constant__)
        host = "\n" + kernel_source("tensormap_host.cuh").replace("#pragma once", "// (was: #pragma once)")
    else:
        build = f"-arch={device.arch}"
        host = f"\ntemplate __global__ void {spec.name_expression}({kernel_params});\n"
    cluster_note = "" if spec.cluster is None else f", thread-block clusters of {spec.cluster}"
    text = f"""// Exported by autosched: {workload.key}, template {template.family}
// config ({source}): {json.dumps(dict(spec.config), sort_keys=True)}
// target: {device.name} ({device.arch})
// launch: grid {spec.grid}, block {spec.block}, dynamic shared memory {spec.smem_bytes} B{cluster_note}
// arguments, in order (inputs must be laid out as named; see autosched/layouts.py):
{layouts}
//
// Build: nvcc {build} -c {Path(out).name}{"  (link with -lcuda: the launcher encodes TMA maps)" if maps else ""}
{spec.source.replace("#pragma once", "// (was: #pragma once)")}
{host}
extern "C" cudaError_t autosched_{template.family}_{tag}({params}, cudaStream_t stream) {{
{optin}{zero}{encode}{launch_text(spec, names)}}}
"""
    out = Path(out)
    with replacing(out) as tmp:
        tmp.write_text(text)
    return out
