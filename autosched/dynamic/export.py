"""A dynamic tuning result as files: the JSON artifact beside the database, and one standalone .cu.

The .cu holds the selected micro-kernels (the headers of their families, each once; one instantiation
a micro-kernel), the decision tree as C host code, the size of the split-K workspace, and a launcher
that dispatches on M and launches each micro-kernel as autosched.ops.HgemmDispatch does: a wgmma
family's three TMA maps encoded at each call by the driver (cuTensorMapEncodeTiled, from <cuda.h>:
link with -lcuda) over the caller's A, B and C and passed by value; a split-K micro-kernel's slice of
the caller's workspace at HgemmDispatch's offset.  The CUDA parts sit inside `#ifdef __CUDACC__`, so
the same file, compiled as C++ by a plain host compiler, is just the dispatch and workspace-size
functions: CI checks them against the Python dispatcher that way; nvcc builds the whole file.

    nvcc -arch=sm_90 -c hgemm_dyn_4096x4096.cu               # hgemm_dyn micro-kernels only
    nvcc -gencode arch=compute_90a,code=sm_90a -c hgemm_4096x4096.cu    # with wgmma ones; link -lcuda
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from autosched.atomic import replacing
from autosched.cuda_export import encode_map_call
from autosched.device import STATIC_SMEM_LIMIT
from autosched.dynamic.dispatch import c_dispatch_source
from autosched.dynamic.tune import DynamicResult
from autosched.templates.base import kernel_sources
from autosched.templates.hgemm_wgmma import a_box_rows
from autosched.templates.hgemm_wgmma_splitk import dynamic_workspace
from autosched.templates.micro_kernels import counter_region, micro_kernel
from autosched.workloads import Hgemm


def artifact_path(db_path, key: str, device_key: str) -> Path:
    """<database folder>/dynamic/<readable key>-<hash of key and device>.json"""
    db_path = Path(db_path)
    folder = (Path.cwd() if str(db_path) == ":memory:" else db_path.parent) / "dynamic"
    tag = hashlib.sha256(f"{key}|{device_key}".encode()).hexdigest()[:12]
    return folder / f"{re.sub(r'[^A-Za-z0-9]+', '_', key).strip('_')}-{tag}.json"


def save_result(result, db_path) -> Path:
    p = artifact_path(db_path, result.workload.key, result.device_key)
    with replacing(p) as tmp:
        tmp.write_text(json.dumps(result.to_json(), indent=1, sort_keys=True))
    return p


def load_result(db_path, key: str, device_key: str):
    p = artifact_path(db_path, key, device_key)
    return DynamicResult.from_json(json.loads(p.read_text())) if p.exists() else None


def c_name(result) -> str:
    dw = result.workload
    return f"autosched_hgemm_dyn_{dw.N}x{dw.K}_{dw.layout}"


def export_cu(result, out, device) -> Path:
    """The standalone .cu of a dynamic result: every micro-kernel's source (each header once), the
    decision tree as C, and a launcher that dispatches on M:

        cudaError_t NAME(const half* A, const half* B, half* C, int M, void* workspace, cudaStream_t stream)
        size_t NAME_workspace_bytes(void)

    Split-K micro-kernels (hgemm_wgmma_splitk, hgemm_stream, hgemm_wgmma_swap with split_k > 1) sum
    their slices through a workspace of tile counters and FP32 partials: the caller allocates
    NAME_workspace_bytes() once, zeroed, and passes it to every call of one stream (the kernels leave
    it zeroed; calls on two streams need two); NULL where that is 0.  Its layout is
    ops.HgemmDispatch's (the counters end at a fixed place, so every M leaves them zeroed), and its
    size covers M up to the range's top, so such a micro-kernel refuses a larger M.  Every family but
    hgemm_dyn is exported for B stored (N, K) (layout nt) and FP16, as HgemmDispatch serves them."""
    dw = result.workload
    fams = [getattr(k, "family", "hgemm_dyn") for k in result.kernels]
    ts = [micro_kernel(f) for f in fams]
    other = [i for i, t in enumerate(ts) if not t.exports_every_layout]
    if other and dw.layout != "nt":
        raise ValueError(f"export_cu: micro-kernels {other} of {dw.key} are {' and '.join(sorted({fams[i] for i in other}))}, "
                         f"exported for B stored (N, K) (layout nt) only, and this result is layout {dw.layout}")
    if other and dw.dtype != "fp16":
        raise ValueError(f"export_cu: {dw.key} is {dw.dtype}; the standalone .cu's launcher takes half pointers")
    name = c_name(result)
    b_col = int(dw.layout == "nt")
    layout = _workspace_layout(result, fams)
    tma = any(t.tma for t in ts)
    cases = [_served_case(i, fams[i], k.config, dw, device, layout) for i, k in enumerate(result.kernels)]
    build = "-gencode arch=compute_90a,code=sm_90a" if tma else f"-arch={device.arch}"   # wgmma needs sm_90a
    ver = "\n".join(f"//   M = {v['M']}: kernel {v['kernel']}, predicted {v['predicted_us']:.2f} us, measured "
                    f"{v['measured_us']:.2f} us" for v in result.verification)
    headers = ["hgemm_dyn.cuh"] + [micro_kernel(f).header for f in dict.fromkeys(fams)] + (
        ["tensormap_host.cuh"] if tma else [])
    sources = kernel_sources(headers).replace("#pragma once", "// (was: #pragma once)")
    text = f"""// Exported by autosched: {dw.key} ({dw.range_str}), dynamic tuning (DietCode)
// target: {device.name} ({device.arch}); runner: {result.runner}
// {len(result.kernels)} micro-kernels chosen by a decision tree on M; verification at the tuning instances:
{ver}
//
// nvcc {build} -c {Path(out).name}     builds everything{"; link with -lcuda" if tma else ""};
// a plain C++ compiler sees only {name}_dispatch and {name}_workspace_bytes (the CUDA parts are
// under __CUDACC__).
#ifdef __CUDACC__
#include <cuda_fp16.h>
// the kernels declare the dynamic shared array with the alignments they need (16 to 1024 bytes), which
// nvcc warns of in one file (#1886); those that need 1024 align their base themselves
#pragma nv_diag_suppress 1886
{sources}#endif  // __CUDACC__

#include <stddef.h>
#ifdef __cplusplus
extern "C" {{
#endif
// M -> index of the micro-kernel (the decision tree; M in {dw.lo}..{dw.hi})
{c_dispatch_source(result.dispatcher.nodes, name + "_dispatch")}
// bytes of the zeroed workspace the launcher's split-K micro-kernels share (0: pass NULL)
size_t {name}_workspace_bytes(void) {{ return {layout["bytes"]}; }}
#ifdef __cplusplus
}}
#endif

#ifdef __CUDACC__
// C (M, N) = A (M, K) . B{"^T, B stored (N, K)" if b_col else ", B (K, N)"}; N = {dw.N}, K = {dw.K}
extern "C" cudaError_t {name}(const half* A, const half* B, half* C, int M, void* workspace, cudaStream_t stream) {{
  if (M < 1) return cudaErrorInvalidValue;
  switch ({name}_dispatch(M)) {{
{chr(10).join(cases)}
    default:
      return cudaErrorInvalidValue;
  }}
  return cudaGetLastError();
}}
#endif  // __CUDACC__
"""
    out = Path(out)
    with replacing(out) as tmp:
        tmp.write_text(text)
    return out


def _workspace_layout(result, fams) -> dict:
    """{"region": where every launch's counters end (ops.HgemmDispatch's counter_region at the range's
    top), "bytes": what the launches of M in the range need at most}: 0 and 0 without split-K."""
    dw = result.workload
    split = {i for i, (f, k) in enumerate(zip(fams, result.kernels)) if micro_kernel(f).reads_workspace(k.config)}
    if not split:
        return {"region": 0, "bytes": 0, "kernels": split}
    tile = {i: micro_kernel(fams[i]).tile(result.kernels[i].config) for i in split}
    region = counter_region(dw.N, dw.hi, ((f, k.config) for f, k in zip(fams, result.kernels)))
    need = 0
    for m in range(dw.lo, dw.hi + 1):
        i = result.dispatcher(m)
        if i in split:
            need = max(need, dynamic_workspace(m, dw.N, *tile[i], result.kernels[i].config["split_k"], region)[1])
    return {"region": region, "bytes": need, "kernels": split}


def _served_case(i: int, family: str, c: dict, dw, device, layout: dict) -> str:
    """The launcher's case for micro-kernel i of `family`, launched as ops.HgemmDispatch launches it: its
    arguments in the order its template renders them (TMA maps encoded over A, B and C at each call,
    as the template describes them at M, checked here at Ms across the range; the workspace at its
    offset in the shared layout), its grid as the template's rule at M (its c_grid, checked against its
    grid at Ms across the range)."""
    t = micro_kernel(family)
    N, K = dw.N, dw.K
    b_col = int(dw.layout == "nt")
    probe = sorted({m for m in (dw.lo, dw.hi, 1, 7, 15, 16, 17, 63, 64, 65, 127, 128, 129, 300) if dw.lo <= m <= dw.hi})
    specs = {m: t.render(Hgemm(m, N, K, b_col=b_col), c, device) for m in probe}
    spec = specs[dw.hi]
    rows, cols = t.tile(c)
    sk = c.get("split_k", 1)
    c_grid = t.c_grid(c, N, device.sm_count)
    lines, names = [], []
    for a in spec.args:
        if a.role == "tensormap":
            names.append(_map_lines(i, a.name, t, c, dw, probe, lines))
        elif a.role in ("input", "output"):
            names.append(a.name)
        elif a.role == "workspace":
            names.append("ws")
        elif a.name in ("M", "N", "K"):
            names.append({"M": "M", "N": str(N), "K": str(K)}[a.name])
        else:
            raise ValueError(f"export_cu: {family} micro-kernel {i} takes an argument {a.name!r} ({a.role}) this "
                             "exporter does not write (please report it)")
    for m, sp in specs.items():          # what the case writes is what the template renders, whatever M
        if (sp.name_expression, sp.block, sp.smem_bytes) != (spec.name_expression, spec.block, spec.smem_bytes) or \
                sp.grid != t.grid(m, N, c, device.sm_count) or sp.cluster is not None:
            raise ValueError(f"export_cu: {family} micro-kernel {i} {c} of {dw.key} launches at M = {m} in a way "
                             "this exporter does not write (please report it)")
    if i in layout["kernels"]:
        # the counters of this launch's tiles end at the region's end (ops.HgemmDispatch.workspace)
        lines[:0] = [f"      if (M > {dw.hi} || workspace == nullptr) return cudaErrorInvalidValue;   "
                  "// the workspace covers the range",
                  f"      const long long tiles = (long long)((M + {rows - 1}) / {rows}) * {-(-N // cols)};",
                  f"      unsigned char* ws = (unsigned char*)workspace + {layout['region']} - (tiles * 4 + 255) / 256 * 256;"]
    elif any(a.role == "workspace" for a in spec.args):
        lines.insert(0, "      unsigned char* ws = nullptr;   // K not split: the kernel never reads it")
    if "units" in c_grid:
        lines.append(f"      const long long units = (long long)((M + {rows - 1}) / {rows}) * {-(-N // cols)} * {sk};")
    body = "".join(f"{x}\n" for x in lines)
    return (f"    case {i}: {{   // {family} {json.dumps(c, sort_keys=True)}\n{_optin(spec.name_expression, spec.smem_bytes)}"
            f"{body}      {spec.name_expression}<<<{c_grid}, dim3({spec.block[0]}, 1, 1), {spec.smem_bytes}, stream>>>"
            f"({', '.join(names)});\n      break;\n    }}")


def _map_lines(i: int, which: str, t, c: dict, dw, probe, lines: list) -> str:
    """Declares and encodes micro-kernel i's TMA map of `which` (A, B or C) into `lines`; its name.  A
    and C span M rows, B N; a box's outer extent is fixed, or follows M as hgemm_wgmma's A box does
    (a_box_rows: M rounded up to 16 below BM), which the maps at every M of `probe` must show."""
    var = {"A": "ma", "B": "mb", "C": "mc"}[which]
    k = "ABC".index(which)
    N, K = dw.N, dw.K
    at = {m: t.tensormaps(Hgemm(m, N, K, b_col=1), c)[k].params() for m in probe}
    p = at[dw.hi]
    outer = None if which == "B" else "M"
    boxes = {m: q["box"][1] for m, q in at.items()}
    box_outer = None
    if len(set(boxes.values())) > 1:
        bm = c.get("bm")
        if bm is None or any(b != a_box_rows(m, bm) for m, b in boxes.items()):
            raise ValueError(f"export_cu: micro-kernel {i} {c} of {dw.key} maps {which} with a box that follows M in "
                             "a way this exporter does not write (please report it)")
        box_outer = f"(M < {bm} ? (M + 15) / 16 * 16 : {bm})"
    for m, q in at.items():
        want = (N if which == "B" else m, 2 * (N if which == "C" else K))
        if (q["dims"][1], q["strides"][0]) != want:
            raise ValueError(f"export_cu: micro-kernel {i} {c} of {dw.key} maps {which} over {q['dims']} at M = {m}, "
                             "which this exporter does not write (please report it)")
    lines.append(f"      autosched_wgmma::TensorMap {var};")
    lines.append(f"      if (!{encode_map_call(p, var, which, outer, box_outer)}) return cudaErrorInvalidValue;")
    return var


def _optin(expr: str, smem: int) -> str:
    """A launcher case's one-time opt-in to `smem` bytes of dynamic shared memory (none at or under
    the 48 KB every launch gets)."""
    if smem <= STATIC_SMEM_LIMIT:
        return ""
    return (f"      static bool opted = false;   // over the {STATIC_SMEM_LIMIT} B every launch gets\n"
            f"      if (!opted) {{\n"
            f"        cudaError_t e = cudaFuncSetAttribute({expr}, "
            f"cudaFuncAttributeMaxDynamicSharedMemorySize, {smem});\n"
            f"        if (e != cudaSuccess) return e;\n        opted = true;\n      }}\n")
