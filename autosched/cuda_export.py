"""A tuned kernel as a standalone .cu: the template, its instantiation, and a launcher that
carries the grid, block and shared memory the config needs."""

from __future__ import annotations

import json
from pathlib import Path

from autosched.device import STATIC_SMEM_LIMIT
from autosched.space import config_hash


def export_cuda(workload, template, config: dict, device, out: Path, source: str = "") -> Path:
    spec = template.render(workload, config, device)     # validates the config first
    maps = [a.name for a in spec.args if a.role == "tensormap"]
    if maps:
        # the launcher would have to encode each TMA map on the host (cuTensorMapEncodeTiled, linking
        # libcuda) and pass it by value: not written yet
        raise ValueError(f"{template.family} takes TMA tensor maps ({', '.join(maps)}): exporting it as a "
                         "standalone .cu is not supported yet; export a config of a template without "
                         "tensor maps (e.g. hgemm_mma)")
    scratch = [a.name for a in spec.args if a.role == "workspace"]
    if scratch:
        # the caller would have to allocate it zeroed once and keep it for every later launch
        raise ValueError(f"this {template.family} config takes a device workspace ({', '.join(scratch)}): "
                         "exporting it as a standalone .cu is not supported yet")
    if spec.cluster is not None:
        # <<<grid, block>>> cannot carry the cluster attribute: cudaLaunchKernelEx would
        raise ValueError(f"this {template.family} config launches in thread-block clusters of {spec.cluster}: "
                         "exporting it as a standalone .cu is not supported yet")
    tag = config_hash(dict(spec.config))
    layouts = "\n".join(f"//   {a.name}: {a.role}, layout {a.layout} {json.dumps(a.params())}"
                        + (f" (= {a.value})" if a.role == "scalar" else "") for a in spec.args)
    params = ", ".join(f"{a.ctype} {a.name}" for a in spec.args)
    kernel_params = ", ".join(a.ctype for a in spec.args)
    names = ", ".join(a.name for a in spec.args)
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
    text = f"""// Exported by autosched: {workload.key}, template {template.family}
// config ({source}): {json.dumps(dict(spec.config), sort_keys=True)}
// target: {device.name} ({device.arch})
// launch: grid {spec.grid}, block {spec.block}, dynamic shared memory {spec.smem_bytes} B
// arguments, in order (inputs must be laid out as named; see autosched/layouts.py):
{layouts}
//
// Build: nvcc -arch={device.arch} -c {Path(out).name}
{spec.source.replace("#pragma once", "// (was: #pragma once)")}

template __global__ void {spec.name_expression}({kernel_params});

extern "C" cudaError_t autosched_{template.family}_{tag}({params}, cudaStream_t stream) {{
{optin}{zero}  {spec.name_expression}<<<dim3{spec.grid}, dim3{spec.block}, {spec.smem_bytes}, stream>>>({names});
  return cudaGetLastError();
}}
"""
    out = Path(out)
    out.write_text(text)
    return out
