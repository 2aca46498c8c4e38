"""A dynamic tuning result as files: the JSON artifact beside the database, and one standalone .cu.

The .cu holds the selected micro-kernels (hgemm_dyn.cuh and, where the result has hgemm_wgmma
micro-kernels, hgemm_wgmma.cuh, once each; one instantiation a micro-kernel), the decision tree as C
host code, and a launcher that dispatches on M.  A wgmma micro-kernel's three TMA maps are encoded
at each call by the driver (cuTensorMapEncodeTiled, from <cuda.h>: link with -lcuda) over the
caller's A, B and C and passed by value, as autosched.ops.HgemmDispatch passes them.  The CUDA parts
sit inside `#ifdef __CUDACC__`, so the same file, compiled as C++ by a plain host compiler, is just
the dispatch function: CI checks it against the Python dispatcher that way; nvcc builds the whole file.

    nvcc -arch=sm_90 -c hgemm_dyn_4096x4096.cu               # hgemm_dyn micro-kernels only
    nvcc -gencode arch=compute_90a,code=sm_90a -c hgemm_4096x4096.cu    # with wgmma ones; link -lcuda
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from autosched.cuda_export import encode_map_call
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
    """The standalone .cu of a result whose micro-kernels are hgemm_dyn and hgemm_wgmma (the latter
    for B stored (N, K), a linear layer's weight, as HgemmDispatch serves them).  hgemm_stream and
    hgemm_wgmma_splitk micro-kernels are refused by name: they take a workspace whose size follows M
    and whose tile counters must stay zeroed between launches (HgemmDispatch's WorkspaceCache), which
    a plain (A, B, C, M) launcher would have to allocate and lay out itself; such a result is served
    from its JSON artifact by autosched.ops.HgemmDispatch."""
    dw = result.workload
    fams = [getattr(k, "family", "hgemm_dyn") for k in result.kernels]
    scratch = [i for i, f in enumerate(fams) if f in ("hgemm_stream", "hgemm_wgmma_splitk")]
    if scratch:
        raise ValueError(f"export_cu: micro-kernels {scratch} of {dw.key} are "
                         f"{' and '.join(sorted({fams[i] for i in scratch}))}, which take a workspace of FP32 "
                         "partials and tile counters sized by M and kept zeroed between launches: the standalone "
                         ".cu exports hgemm_dyn and hgemm_wgmma micro-kernels only.  Serve this result from its JSON "
                         "artifact (autosched.ops.HgemmDispatch), or tune with templates=('hgemm_dyn', 'hgemm_wgmma')")
    other = [i for i, f in enumerate(fams) if f in ("hgemm_wgmma_swap", "hgemm_wgmma_sched")]
    if other:
        raise ValueError(f"export_cu: micro-kernels {other} of {dw.key} are "
                         f"{' and '.join(sorted({fams[i] for i in other}))}, whose launchers (their own tensor maps "
                         "and template arguments) the standalone .cu does not write yet: it exports "
                         "hgemm_dyn and hgemm_wgmma micro-kernels only.  Serve this result from its JSON artifact "
                         "(autosched.ops.HgemmDispatch), or tune with templates=('hgemm_dyn', 'hgemm_wgmma')")
    wg = [i for i, f in enumerate(fams) if f == "hgemm_wgmma"]
    if wg and dw.layout != "nt":
        raise ValueError(f"export_cu: micro-kernels {wg} of {dw.key} are hgemm_wgmma, exported for B stored (N, K) "
                         f"(layout nt) only, and this result is layout {dw.layout}")
    if wg and dw.dtype != "fp16":
        raise ValueError(f"export_cu: {dw.key} is {dw.dtype}; the standalone .cu's launcher takes half pointers")
    name = c_name(result)
    b_col = int(dw.layout == "nt")
    cases = []
    for i, k in enumerate(result.kernels):
        c = k.config
        if fams[i] == "hgemm_wgmma":
            cases.append(_wgmma_case(i, c, dw, device))
            continue
        values = {"B_COL": b_col, "BM": c["bm"], "BN": c["bn"], "BK": c["bk"], "WM": c["wm"], "WN": c["wn"],
                  "STAGES": c["stages"], "PAD": c["pad"], "LOCAL_PAD": c["local_pad"], "UNROLL": unroll(c)}
        expr = name_expression(values)
        smem = smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"], b_col)
        cases.append(f"    case {i}: {{   // {json.dumps(c, sort_keys=True)}\n{_optin(expr, smem)}"
                     f"      {expr}<<<dim3({-(-dw.N // c['bn'])}, (M + {c['bm'] - 1}) / {c['bm']}, 1), "
                     f"dim3({threads(c['bm'], c['bn'], c['wm'], c['wn'])}, 1, 1), {smem}, stream>>>"
                     f"(A, B, C, M, {dw.N}, {dw.K});\n      break;\n    }}")
    build = "-gencode arch=compute_90a,code=sm_90a" if wg else f"-arch={device.arch}"   # wgmma needs sm_90a
    ver = "\n".join(f"//   M = {v['M']}: kernel {v['kernel']}, predicted {v['predicted_us']:.2f} us, measured "
                    f"{v['measured_us']:.2f} us" for v in result.verification)
    text = f"""// Exported by autosched: {dw.key} ({dw.range_str}), dynamic tuning (DietCode)
// target: {device.name} ({device.arch}); runner: {result.runner}
// {len(result.kernels)} micro-kernels chosen by a decision tree on M; verification at the tuning instances:
{ver}
//
// nvcc {build} -c {Path(out).name}     builds everything{"; link with -lcuda" if wg else ""};
// a plain C++ compiler sees only {name}_dispatch (the CUDA parts are under __CUDACC__).
#ifdef __CUDACC__
{kernel_source("hgemm_dyn.cuh").replace("#pragma once", "// (was: #pragma once)")}
{_wgmma_prelude() if wg else ""}#endif  // __CUDACC__

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


def _wgmma_prelude() -> str:
    """hgemm_wgmma.cuh and the host helper that encodes its TMA maps (tensormap_host.cuh)."""
    return "".join(kernel_source(f).replace("#pragma once", "// (was: #pragma once)") + "\n"
                   for f in ("hgemm_wgmma.cuh", "tensormap_host.cuh"))


def _wgmma_case(i: int, c: dict, dw, device) -> str:
    """The launcher's case for hgemm_wgmma micro-kernel i: its maps over A (M, K), B (N, K), C (M, N)
    as HgemmWgmmaTemplate.tensormaps describes them at M (checked here at the range's ends), then a
    persistent grid of one CTA an SM at most."""
    from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate, a_box_rows
    t = HgemmWgmmaDynTemplate()
    spec = t.render(dw.at(dw.hi), c, device)
    N, K = dw.N, dw.K
    at = {m: [a.params() for a in t.tensormaps(dw.at(m), c)] for m in (dw.lo, dw.hi)}
    maps = at[dw.hi]
    bm = c["bm"]
    a_rows = f"(M < {bm} ? (M + 15) / 16 * 16 : {bm})"     # a_box_rows(M, bm): A's box follows M
    for m, got in at.items():           # the rule below is what the template encodes, whatever M
        want = [((K, m), 2 * K), ((K, N), 2 * K), ((N, m), 2 * N)]
        if ([(p["dims"], p["strides"][0]) for p in got] != want or spec.cluster is not None
                or got[0]["box"][1] != a_box_rows(m, bm)):
            raise ValueError(f"export_cu: hgemm_wgmma micro-kernel {i} {c} of {dw.key} maps its operands in a way "
                             "this exporter does not write (please report it)")
    smem, threads_ = spec.smem_bytes, spec.block[0]
    tiles_n = -(-N // c["bn"])
    optin = _optin(spec.name_expression, smem)
    return (f"    case {i}: {{   // hgemm_wgmma {json.dumps(c, sort_keys=True)}\n{optin}"
            f"      autosched_wgmma::TensorMap ma, mb, mc;\n"
            f"      if (!{encode_map_call(maps[0], 'ma', 'A', 'M', a_rows)} ||\n"
            f"          !{encode_map_call(maps[1], 'mb', 'B')} ||\n"
            f"          !{encode_map_call(maps[2], 'mc', 'C', 'M')})\n"
            f"        return cudaErrorInvalidValue;\n"
            f"      const int tiles = (M + {c['bm'] - 1}) / {c['bm']} * {tiles_n};   // a CTA an SM at most\n"
            f"      {spec.name_expression}<<<dim3(tiles < {device.sm_count} ? tiles : {device.sm_count}, 1, 1), "
            f"dim3({threads_}, 1, 1), {smem}, stream>>>(ma, mb, mc, M, {N}, {K});\n      break;\n    }}")
