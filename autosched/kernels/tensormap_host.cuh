// Host side of the wgmma kernels' TMA maps, for the standalone launchers autosched exports
// (autosched/cuda_export.py, autosched/dynamic/export.py): encode a 2-d map over the caller's buffer
// the way autosched.runtime.encode_tensormap does, into the 128 bytes a kernel takes by value as a
// __grid_constant__ parameter.  Host code on the driver API: <cuda.h>, link with -lcuda.  No kernel
// includes it, so no build id depends on it.
#pragma once
#include <cstring>
#include <cuda.h>

namespace autosched_tma {

static_assert(sizeof(CUtensorMap) == 128, "a TMA map is 128 bytes");

// A 2-d tensor of `dtype` elements: `inner` of them a row, `outer` rows `row_bytes` apart, moved in
// boxes of box_inner x box_outer.  Elements outside it read as zeros and stores to them are dropped,
// which is what lets the kernels run ragged edges without predicates.  Writes the map's 128 bytes to
// `out`; false if the driver refuses the geometry (alignment, box or stride limits).
inline bool encode_map(void* out, CUtensorMapDataType dtype, const void* base, cuuint64_t inner, cuuint64_t outer,
                       cuuint64_t row_bytes, cuuint32_t box_inner, cuuint32_t box_outer, CUtensorMapSwizzle swizzle) {
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {row_bytes};
  const cuuint32_t box[2] = {box_inner, box_outer};
  const cuuint32_t steps[2] = {1, 1};
  CUtensorMap map;
  if (cuTensorMapEncodeTiled(&map, dtype, 2, const_cast<void*>(base), dims, strides, box, steps,
                             CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
    return false;
  std::memcpy(out, &map, sizeof map);
  return true;
}

}  // namespace autosched_tma
