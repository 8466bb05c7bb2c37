// Shared by the quantizing plugins (int8, int4, fp8): config reading, the stored-weight and
// linear-argument checks, widening a stored f32/f16/bf16 row, and the C ABI glue. Header-only:
// each plugin is its own .so and compiles its own copy.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "loom/quantization.h"
#include "loom/sdk_core.hpp"
#include "loom/sdk_half.hpp"

namespace loom_quant {

using loom::sdk::ConfigError;
using loom::sdk::Error;

// Reads config_json as an object and calls on_key(key, value, problem) for each item, where
// problem(text) records one complaint; every complaint is reported together, prefixed by the
// plugin's name ("quantization int8: ...").
template <class OnKey>
void parse_config(const std::string& plugin, const char* config_json, OnKey&& on_key) {
  const std::string text = config_json == nullptr ? "" : config_json;
  nlohmann::json j = nlohmann::json::object();
  if (!text.empty()) {
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      throw ConfigError("quantization " + plugin + ": config is not valid JSON: " + e.what());
    }
  }
  if (!j.is_object()) throw ConfigError("quantization " + plugin + ": config must be a JSON object");
  std::string problems;
  auto problem = [&](const std::string& p) {
    problems += (problems.empty() ? "" : "; ") + ("quantization " + plugin + ": " + p);
  };
  for (const auto& item : j.items()) on_key(item.key(), item.value(), problem);
  if (!problems.empty()) throw ConfigError(problems);
}

// "simd": "auto" (the fastest kernels this CPU runs) or "portable". Returns the value, or
// `current` after recording a problem.
template <class Problem>
bool read_simd(const nlohmann::json& v, bool current, Problem&& problem) {
  if (v == "auto") return true;
  if (v == "portable") return false;
  problem("\"simd\" must be \"auto\" or \"portable\", got " + v.dump());
  return current;
}

inline std::string dtype_label(loom_dtype t) {
  switch (t) {
    case LOOM_DTYPE_F32:
      return "f32";
    case LOOM_DTYPE_F16:
      return "f16";
    case LOOM_DTYPE_BF16:
      return "bf16";
    case LOOM_DTYPE_Q4_0:
      return "q4_0";
    case LOOM_DTYPE_Q8_0:
      return "q8_0";
    case LOOM_DTYPE_Q4_K:
      return "q4_K";
    case LOOM_DTYPE_Q6_K:
      return "q6_K";
    case LOOM_DTYPE_I8:
      return "i8";
    case LOOM_DTYPE_I32:
      return "i32";
    case LOOM_DTYPE_U8:
      return "u8";
    case LOOM_DTYPE_FP8_E4M3:
      return "fp8_e4m3";
    default:
      return "loom_dtype " + std::to_string(static_cast<int>(t));
  }
}

// The stored dtypes these plugins quantize from at load.
inline bool is_float_dtype(loom_dtype t) { return t == LOOM_DTYPE_F32 || t == LOOM_DTYPE_F16 || t == LOOM_DTYPE_BF16; }

inline std::string refusal(const std::string& plugin, loom_dtype t) {
  return "quantization " + plugin + ": weights of dtype " + dtype_label(t) +
         " are not supported (f32, f16 and bf16 are, quantized at load)";
}

// A stored weight as the model file holds it: [out, in], rows row_stride elements apart.
struct StoredWeight {
  loom_dtype dtype;
  int64_t out;
  int64_t in;
  int64_t row_stride;
  const void* data;
};

inline StoredWeight check_weight(const std::string& plugin, const loom_tensor_view* w) {
  if (w == nullptr || w->data == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "weight is null");
  if (!is_float_dtype(w->dtype)) throw Error(LOOM_ERR_UNSUPPORTED, refusal(plugin, w->dtype));
  if (w->ndim != 2 || w->shape[0] <= 0 || w->shape[1] <= 0 || w->strides[1] != 1 || w->strides[0] < w->shape[1])
    throw Error(LOOM_ERR_INVALID_ARGUMENT,
                "quantization " + plugin + ": weight must be a 2-d [out, in] view with contiguous rows");
  return StoredWeight{w->dtype, w->shape[0], w->shape[1], w->strides[0], w->data};
}

// dst[k] = stored row `row` as f32, exactly, k < in.
inline void read_row(const StoredWeight& w, int64_t row, float* dst) {
  if (w.dtype == LOOM_DTYPE_F32) {
    const float* src = static_cast<const float*>(w.data) + row * w.row_stride;
    for (int64_t k = 0; k < w.in; ++k) dst[k] = src[k];
    return;
  }
  const uint16_t* src = static_cast<const uint16_t*>(w.data) + row * w.row_stride;
  if (w.dtype == LOOM_DTYPE_BF16) {
    for (int64_t k = 0; k < w.in; ++k) dst[k] = loom::sdk::bf16_to_f32(src[k]);
  } else {
    for (int64_t k = 0; k < w.in; ++k) dst[k] = loom::sdk::f16_to_f32(src[k]);
  }
}

// x [n, in] and y [n, out], f32, contiguous rows.
struct LinearArgs {
  int64_t n;
  const float* x;
  int64_t xs;  // x row stride, elements
  float* y;
  int64_t ys;
};

inline LinearArgs check_linear(const std::string& plugin, int64_t in, int64_t out, const loom_tensor_view* x,
                               const loom_tensor_view* y) {
  if (x == nullptr || y == nullptr || x->data == nullptr || y->data == nullptr)
    throw Error(LOOM_ERR_INVALID_ARGUMENT, "x or y is null");
  if (x->dtype != LOOM_DTYPE_F32 || y->dtype != LOOM_DTYPE_F32)
    throw Error(LOOM_ERR_UNSUPPORTED, "quantization " + plugin + ": x and y must be f32");
  if (x->ndim != 2 || y->ndim != 2 || x->shape[1] != in || y->shape[1] != out || x->shape[0] != y->shape[0] ||
      x->strides[1] != 1 || y->strides[1] != 1)
    throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization " + plugin + ": linear expects x [n, " + std::to_string(in) +
                                               "] and y [n, " + std::to_string(out) + "], got x [" +
                                               std::to_string(x->shape[0]) + ", " + std::to_string(x->shape[1]) +
                                               "] and y [" + std::to_string(y->shape[0]) + ", " +
                                               std::to_string(y->shape[1]) + "]");
  return LinearArgs{x->shape[0], static_cast<const float*>(x->data), x->strides[0], static_cast<float*>(y->data),
                    y->strides[0]};
}

// The C ABI of a quantization plugin over a C++ class P, which provides:
//   static constexpr const char* kName;  static Options parse(const char* config);
//   P(const loom_host_api*, const Options&)  (CPU only: the glue refuses other devices)
//   prepare(const loom_tensor_view*) -> a new handle;  and either
//     void linear(void* handle, x, y) + static void release(void* handle), or
//     using WeightType = W; void linear(const W&, x, y)  (handles are W*, deleted on release).
// supports() answers from is_float_dtype (the reason in err while returning LOOM_OK) unless P
// has its own void supports(loom_dtype, int32_t* ok, loom_error_buf* err) const.
template <class P>
struct PluginAbi {
  static P& self_of(void* self) { return *static_cast<P*>(self); }

  static loom_status supports([[maybe_unused]] void* self, loom_dtype dtype, int32_t* ok, loom_error_buf* err) {
    return loom::sdk::detail::guarded(err, [&] {
      if constexpr (requires(const P& p) { p.supports(dtype, ok, err); }) {
        self_of(self).supports(dtype, ok, err);
      } else {
        *ok = is_float_dtype(dtype) ? 1 : 0;
        if (*ok == 0) loom::sdk::write_error(err, refusal(P::kName, dtype));
      }
    });
  }
  static loom_status prepare_weight(void* self, const loom_tensor_view* weight, void** handle, loom_error_buf* err) {
    return loom::sdk::detail::guarded(err, [&] { *handle = self_of(self).prepare(weight); });
  }
  // P may take the weight's name, role and companion tensors: prepare(weight, info).
  static loom_status prepare_weight_info(void* self, const loom_tensor_view* weight, const loom_weight_info* info,
                                         void** handle, loom_error_buf* err) {
    return loom::sdk::detail::guarded(err, [&] {
      if constexpr (requires(P& p) { p.prepare(weight, info); })
        *handle = self_of(self).prepare(weight, info);
      else
        *handle = self_of(self).prepare(weight);
    });
  }
  static loom_status linear(void* self, void* handle, const loom_tensor_view* x, loom_tensor_view* y,
                            loom_error_buf* err) {
    return loom::sdk::detail::guarded(err, [&] {
      if (handle == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "weight handle is null");
      if constexpr (requires { typename P::WeightType; })
        self_of(self).linear(*static_cast<const typename P::WeightType*>(handle), x, y);
      else
        self_of(self).linear(handle, x, y);
    });
  }
  // Quantization interface 1.2, where P has void linear_group(void* const* handles, int32_t count,
  // x, y): several linears on one x.
  static constexpr bool kGroups =
      requires(P& p, void* const* h, const loom_tensor_view* x, loom_tensor_view* y) { p.linear_group(h, 1, x, y); };
  static loom_status linear_group(void* self, void* const* handles, int32_t count, const loom_tensor_view* x,
                                  loom_tensor_view* y, loom_error_buf* err) {
    return loom::sdk::detail::guarded(err, [&] {
      if constexpr (kGroups) self_of(self).linear_group(handles, count, x, y);
    });
  }
  static void release_weight(void*, void* handle) {
    if constexpr (requires { typename P::WeightType; })
      delete static_cast<typename P::WeightType*>(handle);
    else
      P::release(handle);
  }

  static constexpr loom_quantization_vtable kVtable = {sizeof(loom_quantization_vtable), &supports, &prepare_weight,
                                                       &linear, &release_weight, &prepare_weight_info,
                                                       kGroups ? &linear_group : nullptr};

  static loom_status validate(const char* config_json, loom_error_buf* err) {
    return loom::sdk::detail::guarded(err, [&] { P::parse(config_json); });
  }
  static loom_status create(const loom_host_api* host, const void* create_args, const char* config_json, void** self,
                            const void** vtable, loom_error_buf* err) {
    return loom::sdk::detail::guarded(err, [&] {
      const auto opt = P::parse(config_json);
      const auto* args = static_cast<const loom_quantization_create_args*>(create_args);
      if (args == nullptr || args->struct_size < sizeof(loom_quantization_create_args))
        throw Error(LOOM_ERR_INVALID_ARGUMENT,
                    std::string("quantization ") + P::kName + ": missing or too old create args");
      if (args->device.type != LOOM_DEVICE_CPU)
        throw Error(LOOM_ERR_UNSUPPORTED, std::string("quantization ") + P::kName +
                                              ": runs on the CPU only, not on device type " +
                                              std::to_string(args->device.type));
      *self = new P(host, opt);
      *vtable = &kVtable;
    });
  }
  static void destroy(void* self) { delete static_cast<P*>(self); }
};

}  // namespace loom_quant
