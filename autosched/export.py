"""A tuned kernel as a standalone .cu: the template, its instantiation, and a launcher that
carries the grid, block and shared memory the config needs."""

from __future__ import annotations

import json
from pathlib import Path

from autosched.space import config_hash


def export_cuda(workload, template, config: dict, device, out: Path, source: str = "") -> Path:
    spec = template.render(workload, config, device)     # validates the config first
    tag = config_hash(dict(spec.config))
    layouts = "\n".join(f"//   {a.name}: {a.role}, layout {a.layout} {json.dumps(a.params())}" for a in spec.args)
    text = f"""// Exported by autosched: {workload.key}, template {template.family}
// config ({source}): {json.dumps(dict(spec.config), sort_keys=True)}
// target: {device.name} ({device.arch})
// launch: grid {spec.grid}, block {spec.block}, dynamic shared memory {spec.smem_bytes} B
// arguments, in order (inputs must be packed as the layout says; see autosched/layouts.py):
{layouts}
//
// Build: nvcc -arch={device.arch} -c {out.name}
{spec.source}

template __global__ void {spec.name_expression}(const u32* __restrict__, const half* __restrict__,
                                                 const half* __restrict__, half* __restrict__);

extern "C" cudaError_t autosched_{template.family}_{tag}(const void* {spec.args[0].name}, const void* {spec.args[1].name},
                                                     const void* {spec.args[2].name}, void* {spec.args[3].name},
                                                     cudaStream_t stream) {{
  {spec.name_expression}<<<dim3{spec.grid}, dim3{spec.block}, {spec.smem_bytes}, stream>>>(
      static_cast<const u32*>({spec.args[0].name}), static_cast<const half*>({spec.args[1].name}),
      static_cast<const half*>({spec.args[2].name}), static_cast<half*>({spec.args[3].name}));
  return cudaGetLastError();
}}
"""
    out = Path(out)
    out.write_text(text)
    return out
