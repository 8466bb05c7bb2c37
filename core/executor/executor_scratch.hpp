// Small helpers of the forward pass shared by its files (model_executor*.cpp): scratch buffers
// that grow and are reused, and f32 views of them for plugin calls.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "loom/types.h"

namespace loom {

// A contiguous f32 CPU view of `data` with `shape` (outermost first).
inline loom_tensor_view f32_view(float* data, std::initializer_list<int64_t> shape) {
  loom_tensor_view v{};
  v.data = data;
  v.dtype = LOOM_DTYPE_F32;
  v.ndim = static_cast<int32_t>(shape.size());
  v.device = loom_device{LOOM_DEVICE_CPU, 0};
  int32_t d = 0;
  for (int64_t s : shape) v.shape[d++] = s;
  for (; d < LOOM_MAX_DIMS; ++d) v.shape[d] = 1;
  for (d = 0; d < LOOM_MAX_DIMS; ++d) v.strides[d] = 1;
  for (d = v.ndim - 2; d >= 0; --d) v.strides[d] = v.strides[d + 1] * v.shape[d + 1];
  return v;
}

// Grows a scratch buffer to at least n elements; never shrinks, so steady state never allocates.
inline float* ensure(std::vector<float>& buf, int64_t n) {
  if (buf.size() < static_cast<size_t>(n)) buf.resize(static_cast<size_t>(n));
  return buf.data();
}

}  // namespace loom
