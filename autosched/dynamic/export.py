"""A dynamic tuning result as files: the JSON artifact beside the database, and one standalone .cu.

The .cu holds the selected micro-kernels (hgemm_dyn.cuh once, one instantiation each), the decision
tree as C host code, and a launcher that dispatches on M.  The CUDA parts sit inside
`#ifdef __CUDACC__`, so the same file, compiled as C++ by a plain host compiler, is just the dispatch
function: CI checks it against the Python dispatcher that way; nvcc builds the whole file.

    nvcc -arch=sm_90 -c hgemm_dyn_4096x4096.cu
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from autosched.device import STATIC_SMEM_LIMIT
from autosched.dynamic.dispatch import c_dispatch_source
from autosched.templates.base import kernel_source
from autosched.templates.gemm_tiles import threads
from autosched.templates.hgemm_dyn import name_expression, unroll
from autosched.templates.hgemm_mma import smem_bytes


def artifact_path(db_path, key: str, device_key: str) -> Path:
    """<database folder>/dynamic/<readable key>-<hash of key and device>.json"""
    db_path = Path(db_path)
    folder = (Path.cwd() if str(db_path) == ":memory:" else db_path.parent) / "dynamic"
    tag = hashlib.sha256(f"{key}|{device_key}".encode()).hexdigest()[:12]
    return folder / f"{re.sub(r'[^A-Za-z0-9]+', '_', key).strip('_')}-{tag}.json"


def save_result(result, db_path) -> Path:
    p = artifact_path(db_path, result.workload.key, result.device_key)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(result.to_json(), indent=1, sort_keys=True))
    tmp.replace(p)
    return p


def load_result(db_path, key: str, device_key: str):
    from autosched.dynamic.tune import DynamicResult
    p = artifact_path(db_path, key, device_key)
    return DynamicResult.from_json(json.loads(p.read_text())) if p.exists() else None


def c_name(result) -> str:
    dw = result.workload
    return f"autosched_hgemm_dyn_{dw.N}x{dw.K}_{dw.layout}"


def export_cu(result, out, device) -> Path:
    """The standalone .cu of a result whose micro-kernels are all hgemm_dyn.  hgemm_wgmma ones are
    refused by name: they take TMA tensor maps, encoded per buffer on the host by the driver
    (cuTensorMapEncodeTiled), which a plain (A, B, C, M) launcher does not have; such a result is
    served from its JSON artifact by autosched.ops.HgemmDispatch (backend wgmma).  hgemm_wgmma_splitk
    ones are refused for that reason and one more: they take a workspace whose size follows M and
    whose tile counters must stay zeroed between launches (HgemmDispatch's WorkspaceCache), which a
    plain launcher would have to allocate and lay out itself."""
    dw = result.workload
    stream = [i for i, k in enumerate(result.kernels) if getattr(k, "family", "hgemm_dyn") == "hgemm_stream"]
    if stream:
        raise ValueError(f"export_cu: micro-kernels {stream} of {dw.key} are hgemm_stream, which take a workspace of "
                         "FP32 partials and tile counters sized by M and kept zeroed between launches: the standalone "
                         ".cu exports hgemm_dyn micro-kernels only.  Serve this result from its JSON artifact "
                         "(autosched.ops.HgemmDispatch), or tune with templates=('hgemm_dyn',)")
    wg = [i for i, k in enumerate(result.kernels) if getattr(k, "family", "hgemm_dyn") != "hgemm_dyn"]
    if wg:
        split = [i for i in wg if result.kernels[i].family == "hgemm_wgmma_splitk"]
        extra = (f" (and {split} are hgemm_wgmma_splitk, which also take a workspace of FP32 partials and tile "
                 "counters sized by M and kept zeroed between launches)") if split else ""
        raise ValueError(f"export_cu: micro-kernels {wg} of {dw.key} are hgemm_wgmma, whose operands are TMA "
                         f"tensor maps encoded per buffer on the host (cuTensorMapEncodeTiled){extra}: the standalone "
                         ".cu exports hgemm_dyn micro-kernels only.  Serve this result from its JSON artifact "
                         "(autosched.ops.HgemmDispatch, backend wgmma), or tune with templates=('hgemm_dyn',)")
    name = c_name(result)
    b_col = int(dw.layout == "nt")
    cases = []
    for i, k in enumerate(result.kernels):
        c = k.config
        values = {"B_COL": b_col, "BM": c["bm"], "BN": c["bn"], "BK": c["bk"], "WM": c["wm"], "WN": c["wn"],
                  "STAGES": c["stages"], "PAD": c["pad"], "LOCAL_PAD": c["local_pad"], "UNROLL": unroll(c)}
        expr = name_expression(values)
        smem = smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"], b_col)
        optin = ""
        if smem > STATIC_SMEM_LIMIT:
            optin = (f"      static bool opted = false;   // over the {STATIC_SMEM_LIMIT} B every launch gets\n"
                     f"      if (!opted) {{\n"
                     f"        cudaError_t e = cudaFuncSetAttribute({expr}, "
                     f"cudaFuncAttributeMaxDynamicSharedMemorySize, {smem});\n"
                     f"        if (e != cudaSuccess) return e;\n        opted = true;\n      }}\n")
        cases.append(f"    case {i}: {{   // {json.dumps(c, sort_keys=True)}\n{optin}"
                     f"      {expr}<<<dim3({-(-dw.N // c['bn'])}, (M + {c['bm'] - 1}) / {c['bm']}, 1), "
                     f"dim3({threads(c['bm'], c['bn'], c['wm'], c['wn'])}, 1, 1), {smem}, stream>>>"
                     f"(A, B, C, M, {dw.N}, {dw.K});\n      break;\n    }}")
    ver = "\n".join(f"//   M = {v['M']}: kernel {v['kernel']}, predicted {v['predicted_us']:.2f} us, measured "
                    f"{v['measured_us']:.2f} us" for v in result.verification)
    text = f"""// Exported by autosched: {dw.key} ({dw.range_str}), dynamic tuning (DietCode)
// target: {device.name} ({device.arch}); runner: {result.runner}
// {len(result.kernels)} micro-kernels chosen by a decision tree on M; verification at the tuning instances:
{ver}
//
// nvcc -arch={device.arch} -c {Path(out).name}     builds everything;
// a plain C++ compiler sees only {name}_dispatch (the CUDA parts are under __CUDACC__).
#ifdef __CUDACC__
{kernel_source("hgemm_dyn.cuh").replace("#pragma once", "// (was: #pragma once)")}
#endif  // __CUDACC__

#ifdef __cplusplus
extern "C" {{
#endif
// M -> index of the micro-kernel (the decision tree; M in {dw.lo}..{dw.hi})
{c_dispatch_source(result.dispatcher.nodes, name + "_dispatch")}
#ifdef __cplusplus
}}
#endif

#ifdef __CUDACC__
// C (M, N) = A (M, K) . B{"^T, B stored (N, K)" if b_col else ", B (K, N)"}; N = {dw.N}, K = {dw.K}
extern "C" cudaError_t {name}(const half* A, const half* B, half* C, int M, cudaStream_t stream) {{
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
    out.write_text(text)
    return out
