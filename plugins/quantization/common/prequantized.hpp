// Weights that `loom-convert --quantize int8|int4|fp8` stored pre-quantized: the matrix N in
// integer words (I8, I32) and its companion tensors (N.scale, N.zero) beside it in the model
// file, found by name through loom_weight_info::find_tensor. The companions' shapes are checked
// against the weight's logical [out_features, in_features], so a file written for another
// format or group size is refused with the tensor's name instead of served wrong.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "quant_plugin.hpp"

namespace loom_quant {

inline std::string shape_label(const loom_tensor_view& v) {
  std::string s = "[";
  for (int32_t d = 0; d < v.ndim; ++d) s += (d ? ", " : "") + std::to_string(v.shape[d]);
  return s + "]";
}

inline std::string shape_label(std::initializer_list<int64_t> shape) {
  std::string s = "[";
  for (const int64_t n : shape) s += (s.size() > 1 ? ", " : "") + std::to_string(n);
  return s + "]";
}

// True when v is `dtype` with exactly `shape`, rows contiguous (as a GGUF tensor is).
inline bool has_layout(const loom_tensor_view& v, loom_dtype dtype, std::initializer_list<int64_t> shape) {
  if (v.data == nullptr || v.dtype != dtype || v.ndim != static_cast<int32_t>(shape.size())) return false;
  int32_t d = 0;
  for (const int64_t n : shape) {
    if (v.shape[d] != n) return false;
    ++d;
  }
  return v.ndim < 2 || (v.strides[1] == 1 && v.strides[0] == v.shape[1]);
}

// The pre-quantized matrix itself: `dtype`, [info->out_features, cols]. Needs the host's info.
inline void check_prequantized(const std::string& plugin, const loom_tensor_view* w, const loom_weight_info* info,
                               loom_dtype dtype, int64_t cols) {
  if (w == nullptr || w->data == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "weight is null");
  if (info == nullptr || info->name == nullptr || info->find_tensor == nullptr)
    throw Error(LOOM_ERR_UNSUPPORTED, "quantization " + plugin + ": a weight stored pre-quantized (" +
                                          dtype_label(w->dtype) +
                                          ") needs its companion tensors, which this host cannot look up "
                                          "(prepare_weight_info with find_tensor)");
  if (!has_layout(*w, dtype, {info->out_features, cols}))
    throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization " + plugin + ": " + info->name + " is " +
                                               dtype_label(w->dtype) + " " + shape_label(*w) + ", expected " +
                                               dtype_label(dtype) + " " + shape_label({info->out_features, cols}) +
                                               " for in_features " + std::to_string(info->in_features));
}

// The companion `<info->name><suffix>`: `dtype` of exactly `shape` (Loom order). When `optional`,
// a missing one gives a view with data == nullptr instead of an error.
inline loom_tensor_view find_companion(const std::string& plugin, const loom_weight_info* info, const char* suffix,
                                       loom_dtype dtype, std::initializer_list<int64_t> shape, bool optional = false) {
  const std::string name = std::string(info->name) + suffix;
  loom_tensor_view v{};
  if (info->find_tensor(info->find_ctx, name.c_str(), &v) == 0) {
    if (optional) return loom_tensor_view{};
    throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization " + plugin + ": " + info->name +
                                               " is stored pre-quantized but its companion tensor " + name +
                                               " is missing from the model file");
  }
  if (!has_layout(v, dtype, shape))
    throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization " + plugin + ": companion tensor " + name + " is " +
                                               dtype_label(v.dtype) + " " + shape_label(v) + ", expected " +
                                               dtype_label(dtype) + " " + shape_label(shape));
  return v;
}

}  // namespace loom_quant
