// Shared by the quantization plugins (quantization/common): the "simd" key, the CPU-only check,
// dtype names and refusals, the stored-weight and linear-argument checks, and widening a stored
// f32/f16/bf16 row. The C ABI comes from sdk.hpp (LOOM_QUANTIZATION_PLUGIN).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/quantization.h"
#include "loom/sdk_config.hpp"
#include "loom/sdk_core.hpp"
#include "loom/sdk_dtype.hpp"
#include "loom/sdk_quant_reading.hpp"
#include "loom/sdk_half.hpp"

namespace loom_quant {

using loom::sdk::ConfigError;
using loom::sdk::Error;

// A 2-d view [rows, cols] of `data` in `dtype`, rows `row_stride` elements apart.
inline loom_tensor_view matrix_view(const void* data, loom_dtype dtype, int64_t rows, int64_t cols,
                                    int64_t row_stride) {
  loom_tensor_view v{};
  v.data = const_cast<void*>(data);
  v.dtype = dtype;
  v.ndim = 2;
  v.shape[0] = rows;
  v.shape[1] = cols;
  v.shape[2] = v.shape[3] = 1;
  v.strides[0] = row_stride;
  v.strides[1] = v.strides[2] = v.strides[3] = 1;
  return v;
}

// The "simd" key every quantization plugin has: "auto" (the fastest kernels this CPU runs),
// "avx2" (the AVX2 kernels even where the CPU has AVX-512: they give the same bits, so this
// compares the two instruction sets on one machine, or avoids AVX-512's clock drop on CPUs that
// have one) or "portable" (the plain C++ ones), read with sdk_config's choice() into an int:
// non-zero means SIMD kernels, kSimdAuto also allows AVX-512 ones.
enum SimdLevel : int { kSimdPortable = 0, kSimdAvx2 = 1, kSimdAuto = 2 };
inline std::vector<std::pair<std::string, int>> simd_values() {
  return {{"auto", kSimdAuto}, {"avx2", kSimdAvx2}, {"portable", kSimdPortable}};
}
constexpr const char* kSimdHelp =
    "\"auto\": the fastest kernels this CPU runs; \"avx2\": no AVX-512 ones; \"portable\": the plain C++ ones";

// The config of a plugin whose only key is "simd" (Options has `int simd = kSimdAuto`).
template <class Options>
loom::sdk::ConfigSpec<Options> simd_spec(const std::string& who) {
  return loom::sdk::ConfigSpec<Options>(who).choice("simd", &Options::simd, simd_values(), kSimdHelp);
}

// These plugins run on the CPU only: refuses any other device named in the create args.
inline void require_cpu(const loom_quantization_create_args& args, const char* plugin) {
  if (args.device.type != LOOM_DEVICE_CPU)
    throw Error(LOOM_ERR_UNSUPPORTED, std::string("quantization ") + plugin +
                                          ": runs on the CPU only, not on device type " +
                                          std::to_string(args.device.type));
}

// "q4_K", "i8": the SDK's ggml type names.
inline std::string dtype_label(loom_dtype t) { return loom::sdk::type_name(t); }

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

// Whether weights of `t` can be read: float storage always (quantized at load), and
// `stored` when given (LOOM_DTYPE_INVALID: none), the pre-quantized form `how` describes.
inline loom::sdk::Verdict float_or(const std::string& plugin, loom_dtype t, loom_dtype stored = LOOM_DTYPE_INVALID,
                                   const std::string& how = "") {
  if (is_float_dtype(t) || (stored != LOOM_DTYPE_INVALID && t == stored)) return loom::sdk::Verdict::yes();
  return loom::sdk::Verdict::no(refusal(plugin, t) + how);
}

// reads() of a plugin that quantizes floats at load (int8, int4, fp8): f32/f16/bf16 are converted;
// `storage` (the tensor type its pre-quantized weights are kept in) is its own format only in a
// file loom-convert wrote with loom.quantization.format = `own_format`, since the same storage
// type means another layout under another format (int8 and fp8 both keep I8 bytes).
inline loom::sdk::Reading reads_quantizing(const std::string& plugin, std::string_view format, loom_dtype t,
                                           std::string_view own_format, loom_dtype storage) {
  if (is_float_dtype(t)) return loom::sdk::Reading::converts();
  if (t == storage && format == own_format) return loom::sdk::Reading::native();
  if (t == storage)
    return loom::sdk::Reading::cannot(
        "quantization " + plugin + ": " + dtype_label(t) + " weights are its own only in a file written by loom-convert " +
        "--quantize " + plugin + " (loom.quantization.format \"" + std::string(own_format) + "\"); this file's is " +
        (format.empty() ? std::string("not set") : "\"" + std::string(format) + "\""));
  return loom::sdk::Reading::cannot(refusal(plugin, t));
}

}  // namespace loom_quant
