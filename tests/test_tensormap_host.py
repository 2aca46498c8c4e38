"""kernels/tensormap_host.cuh (the exported launchers' TMA map encoding), compiled by a plain C++
compiler against a stand-in <cuda.h> whose cuTensorMapEncodeTiled records its arguments: the helper
hands the driver what autosched.runtime.encode_tensormap hands it for the same ArgSpec params, and
the C call the exporters write (cuda_export.encode_map_call) fills those params in."""

import re
import shutil
import subprocess

import pytest

from autosched.cuda_export import encode_map_call
from autosched.runtime import tensormap_request
from autosched.templates.base import kernel_source

FAKE_CUDA_H = r"""
#pragma once
#include <cstdint>
#include <cstdio>
typedef uint64_t cuuint64_t;
typedef uint32_t cuuint32_t;
typedef struct { alignas(64) unsigned char opaque[128]; } CUtensorMap;
typedef enum { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1 } CUresult;
#define ENUM(NAME, ...) typedef enum { __VA_ARGS__ } NAME;
ENUM(CUtensorMapDataType, CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9)
ENUM(CUtensorMapInterleave, CU_TENSOR_MAP_INTERLEAVE_NONE = 0)
ENUM(CUtensorMapSwizzle, CU_TENSOR_MAP_SWIZZLE_NONE = 0, CU_TENSOR_MAP_SWIZZLE_32B = 1,
     CU_TENSOR_MAP_SWIZZLE_64B = 2, CU_TENSOR_MAP_SWIZZLE_128B = 3)
ENUM(CUtensorMapL2promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3)
ENUM(CUtensorMapFloatOOBfill, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0)
// records the call and fills the map with a byte pattern, so the copy out can be checked
inline CUresult cuTensorMapEncodeTiled(CUtensorMap* m, CUtensorMapDataType t, cuuint32_t rank, void* base,
                                       const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                       const cuuint32_t* steps, CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                                       CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  std::printf("dtype=%d rank=%u base=%p dims=%llu,%llu stride=%llu box=%u,%u steps=%u,%u il=%d sw=%d l2=%d oob=%d\n",
              t, rank, base, (unsigned long long)dims[0], (unsigned long long)dims[1], (unsigned long long)strides[0],
              box[0], box[1], steps[0], steps[1], il, sw, l2, oob);
  for (int i = 0; i < 128; ++i) m->opaque[i] = (unsigned char)(i * 3);
  return box[0] == 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
"""

ENUMS = {"CU_TENSOR_MAP_DATA_TYPE_FLOAT16": 6, "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16": 9, "CU_TENSOR_MAP_SWIZZLE_NONE": 0,
         "CU_TENSOR_MAP_SWIZZLE_32B": 1, "CU_TENSOR_MAP_SWIZZLE_64B": 2, "CU_TENSOR_MAP_SWIZZLE_128B": 3}


def _run(tmp_path, body: str) -> str:
    cxx = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    (tmp_path / "cuda.h").write_text(FAKE_CUDA_H)
    src = tmp_path / "main.cc"
    # as the exporters paste it: into a file of its own (no #pragma once in a main file)
    src.write_text(kernel_source("tensormap_host.cuh").replace("#pragma once", "") + "\n#include <cstdio>\n" + body)
    exe = tmp_path / "main"
    subprocess.run([cxx, "-std=c++17", "-Wall", "-Werror", "-I", str(tmp_path), "-o", str(exe), str(src)],
                   check=True, capture_output=True, text=True)
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("params", [
    {"of": "input", "dtype": "fp16", "dims": (4096, 300), "strides": (8192,), "box": (64, 128), "swizzle": 128},
    {"of": "output", "dtype": "bf16", "dims": (264, 296), "strides": (528,), "box": (16, 64), "swizzle": 32},
])
def test_the_helper_hands_the_driver_what_runtime_does(tmp_path, params):
    call = encode_map_call(params, "map", "base")
    out = _run(tmp_path, "int main() {\n  unsigned char map[128] = {0};\n"
                         "  const void* base = reinterpret_cast<const void*>(0x7f0000001000);\n"
                         f"  if (!{call}) return 1;\n"
                         "  for (int i = 0; i < 128; ++i) if (map[i] != (unsigned char)(i * 3)) return 2;\n}\n")
    r = tensormap_request(params, 0x7F0000001000)
    want = (f"dtype={ENUMS[r['dtype']]} rank=2 base=0x7f0000001000 dims={r['dims'][0]},{r['dims'][1]} "
            f"stride={r['strides'][0]} box={r['box'][0]},{r['box'][1]} steps=1,1 il=0 "
            f"sw={ENUMS[r['swizzle']]} l2=3 oob=0")
    assert out.strip() == want


def test_a_run_time_outer_dimension_and_a_refused_map(tmp_path):
    params = {"of": "input", "dtype": "fp16", "dims": (4096, 1), "strides": (8192,), "box": (64, 64), "swizzle": 128}
    call = encode_map_call(params, "map", "base", outer="M")
    assert re.search(r"base, 4096, M, 8192, 64, 64, CU_TENSOR_MAP_SWIZZLE_128B\)$", call)
    # the stand-in driver refuses a box of 0: the helper says so and writes nothing
    out = _run(tmp_path, "int main() {\n  unsigned char map[128] = {0};\n  const void* base = nullptr;\n"
                         "  const int M = 77;\n"
                         f"  if (!{call}) return 1;\n"
                         "  unsigned char refused[128] = {0};\n"
                         "  if (autosched_tma::encode_map(refused, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, base,"
                         " 8, 8, 16, 0, 8, CU_TENSOR_MAP_SWIZZLE_NONE)) return 2;\n"
                         "  for (unsigned char b : refused) if (b) return 3;\n}\n")
    assert "dims=4096,77 " in out


def test_encode_map_call_refuses_what_the_helper_cannot_encode():
    with pytest.raises(ValueError, match="dims"):
        encode_map_call({"of": "input", "dtype": "fp16", "dims": (8, 8, 8), "strides": (16, 128), "box": (8, 8, 8),
                         "swizzle": 0}, "m", "b")
