// quantization/none: weights kept as stored (f32, f16 or bf16) and y = x W^T on them.
//
// prepare_weight only records where the weight lives: f32 weights are used straight from the
// (mmap'ed) model file, f16/bf16 rows are widened to f32 on the fly, one tile at a time.
// linear splits the output features into tiles across the host's threads; a tile (kTile rows,
// at most a few hundred KiB) stays in L2 while every input row streams past it, so each weight
// byte comes from memory once per call whatever the batch size. The kernels (none_gemm.hpp,
// AVX2+FMA when the CPU has it, key "simd") reduce every output element in one fixed order, so
// results do not depend on the batch size: batched == alone, bit for bit.
// Written against the C ABI directly (not sdk.hpp) because supports() must give its reason in the
// error buffer while returning LOOM_OK with *ok = 0, which sdk.hpp's supports(dtype, ok) cannot.
#include <boost/dll/alias.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../common/quant_plugin.hpp"
#include "loom/quantization.h"
#include "loom/sdk_core.hpp"
#include "none_gemm.hpp"

namespace {

using loom::sdk::ConfigError;
using loom::sdk::Error;

// Below this many input rows f16/bf16 weights are widened in registers (each weight is used by
// so few rows that writing and re-reading a widened tile costs more than it saves).
constexpr int64_t kWidenInRegistersBelow = 4;

// Output features per work item: a multiple of every register block (3, 4, 6, 12 rows), small
// enough that the tile (48 rows x 8 KiB at in = 2048) stays in L2.
constexpr int64_t kTile = 48;

struct Options {
  bool simd = true;  // "simd": "auto" (default: the fastest kernel the CPU runs) or "portable"
};

Options parse_config(const char* config_json) {
  Options o;
  loom_quant::parse_config("none", config_json, [&](const std::string& key, const nlohmann::json& v, auto&& problem) {
    if (key == "simd")
      o.simd = loom_quant::read_simd(v, o.simd, problem);
    else
      problem("unknown key \"" + key + "\" (valid keys: simd)");
  });
  return o;
}

const char* dtype_label(loom_dtype t) {
  switch (t) {
    case LOOM_DTYPE_F32: return "f32";
    case LOOM_DTYPE_F16: return "f16";
    case LOOM_DTYPE_BF16: return "bf16";
    case LOOM_DTYPE_Q4_0: return "q4_0";
    case LOOM_DTYPE_Q4_1: return "q4_1";
    case LOOM_DTYPE_Q5_0: return "q5_0";
    case LOOM_DTYPE_Q5_1: return "q5_1";
    case LOOM_DTYPE_Q8_0: return "q8_0";
    case LOOM_DTYPE_Q8_1: return "q8_1";
    case LOOM_DTYPE_Q2_K: return "q2_K";
    case LOOM_DTYPE_Q3_K: return "q3_K";
    case LOOM_DTYPE_Q4_K: return "q4_K";
    case LOOM_DTYPE_Q5_K: return "q5_K";
    case LOOM_DTYPE_Q6_K: return "q6_K";
    case LOOM_DTYPE_Q8_K: return "q8_K";
    case LOOM_DTYPE_I8: return "i8";
    case LOOM_DTYPE_I16: return "i16";
    case LOOM_DTYPE_I32: return "i32";
    case LOOM_DTYPE_I64: return "i64";
    case LOOM_DTYPE_F64: return "f64";
    case LOOM_DTYPE_U8: return "u8";
    case LOOM_DTYPE_FP8_E4M3: return "fp8_e4m3";
    default: return "unknown";
  }
}

bool is_supported(loom_dtype t) {
  return t == LOOM_DTYPE_F32 || t == LOOM_DTYPE_F16 || t == LOOM_DTYPE_BF16;
}

// A prepared weight: where it lives and how to read it. Never owns the data.
struct Weight {
  loom_dtype dtype;
  int64_t out_features;
  int64_t in_features;
  int64_t row_stride;  // elements
  const void* data;
};

class NoneQuantization {
 public:
  static constexpr const char* kName = "none";
  using WeightType = Weight;
  static Options parse(const char* config_json) { return parse_config(config_json); }

  NoneQuantization(const loom_host_api* host, const Options& opt)
      : host_(host), kernels_(loom_none::select_kernels(opt.simd)) {
    scratch_.resize(static_cast<size_t>(host_.num_threads()));
  }

  void supports(loom_dtype dtype, int32_t* ok, loom_error_buf* err) const {
    *ok = is_supported(dtype) ? 1 : 0;
    if (*ok == 0)
      loom::sdk::write_error(err, std::string("quantization none: weights of dtype ") + dtype_label(dtype) +
                                      " are not supported (f32, f16 and bf16 are)");
  }

  Weight* prepare(const loom_tensor_view* w) const {
    if (w == nullptr || w->data == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "weight is null");
    if (!is_supported(w->dtype))
      throw Error(LOOM_ERR_UNSUPPORTED, std::string("quantization none: weights of dtype ") +
                                            dtype_label(w->dtype) + " are not supported (f32, f16 and bf16 are)");
    if (w->ndim != 2 || w->shape[0] <= 0 || w->shape[1] <= 0 || w->strides[1] != 1 ||
        w->strides[0] < w->shape[1])
      throw Error(LOOM_ERR_INVALID_ARGUMENT,
                  "quantization none: weight must be a 2-d [out, in] view with contiguous rows");
    return new Weight{w->dtype, w->shape[0], w->shape[1], w->strides[0], w->data};
  }

  void linear(const Weight& w, const loom_tensor_view* x, loom_tensor_view* y) {
    if (x == nullptr || y == nullptr || x->data == nullptr || y->data == nullptr)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "x or y is null");
    if (x->dtype != LOOM_DTYPE_F32 || y->dtype != LOOM_DTYPE_F32)
      throw Error(LOOM_ERR_UNSUPPORTED, "quantization none: x and y must be f32");
    if (x->ndim != 2 || y->ndim != 2 || x->shape[1] != w.in_features || y->shape[1] != w.out_features ||
        x->shape[0] != y->shape[0] || x->strides[1] != 1 || y->strides[1] != 1)
      throw Error(LOOM_ERR_INVALID_ARGUMENT,
                  "quantization none: linear expects x [n, " + std::to_string(w.in_features) + "] and y [n, " +
                      std::to_string(w.out_features) + "], got x [" + std::to_string(x->shape[0]) + ", " +
                      std::to_string(x->shape[1]) + "] and y [" + std::to_string(y->shape[0]) + ", " +
                      std::to_string(y->shape[1]) + "]");
    const int64_t n = x->shape[0], in = w.in_features, out = w.out_features;
    const int64_t xs = x->strides[0], ys = y->strides[0];
    const auto* xd = static_cast<const float*>(x->data);
    auto* yd = static_cast<float*>(y->data);
    const int64_t n_tiles = (out + kTile - 1) / kTile;

    host_.parallel_for(n_tiles, [&](int64_t begin, int64_t end, int32_t thread) {
      if (thread < 0 || static_cast<size_t>(thread) >= scratch_.size())
        throw Error(LOOM_ERR_INTERNAL, "parallel_for thread index out of range");
      std::vector<float>& widened = scratch_[static_cast<size_t>(thread)];  // [kTile, in]
      std::array<const float*, kTile> rows{};
      std::array<const uint16_t*, kTile> rows16{};
      const int64_t elem_bytes = w.dtype == LOOM_DTYPE_F32 ? 4 : 2;
      const bool half_direct = w.dtype != LOOM_DTYPE_F32 && kernels_.tile_half != nullptr && n < kWidenInRegistersBelow;
      const int64_t row_bytes = w.row_stride * elem_bytes;
      for (int64_t tile = begin; tile < end; ++tile) {
        const int64_t o0 = tile * kTile;
        const int64_t n_rows = std::min(kTile, out - o0);
        // The next tile's weight rows, [next_rows, in] strided: the kernel prefetches them.
        const int64_t next_rows = tile + 1 < end ? std::min(kTile, out - o0 - kTile) : 0;
        const void* next = next_rows > 0 ? static_cast<const char*>(w.data) + (o0 + kTile) * row_bytes : nullptr;
        const int64_t next_bytes = next_rows > 0 ? (next_rows - 1) * row_bytes + in * elem_bytes : 0;
        if (half_direct) {
          for (int64_t j = 0; j < n_rows; ++j)
            rows16[static_cast<size_t>(j)] = static_cast<const uint16_t*>(w.data) + (o0 + j) * w.row_stride;
          kernels_.tile_half(rows16.data(), w.dtype == LOOM_DTYPE_BF16, n_rows, xd, xs, n, in, yd + o0, ys, next,
                             next_bytes);
          continue;
        }
        load_tile(w, o0, n_rows, widened, rows);
        kernels_.tile(rows.data(), n_rows, xd, xs, n, in, yd + o0, ys, next, next_bytes);
      }
    });
  }

 private:
  // Points rows[j] at weight row o0 + j as f32: straight into the weight when it is f32, else
  // into `widened` after converting.
  void load_tile(const Weight& w, int64_t o0, int64_t n_rows, std::vector<float>& widened,
                 std::array<const float*, kTile>& rows) const {
    const int64_t in = w.in_features;
    if (w.dtype == LOOM_DTYPE_F32) {
      for (int64_t j = 0; j < n_rows; ++j)
        rows[static_cast<size_t>(j)] = static_cast<const float*>(w.data) + (o0 + j) * w.row_stride;
      return;
    }
    if (widened.size() < static_cast<size_t>(kTile * in)) widened.resize(static_cast<size_t>(kTile * in));
    for (int64_t j = 0; j < n_rows; ++j) {
      const uint16_t* src = static_cast<const uint16_t*>(w.data) + (o0 + j) * w.row_stride;
      float* dst = widened.data() + j * in;
      kernels_.widen(src, dst, in, w.dtype == LOOM_DTYPE_BF16);
      rows[static_cast<size_t>(j)] = dst;
    }
  }

  loom::sdk::Host host_;
  loom_none::Kernels kernels_;
  std::vector<std::vector<float>> scratch_;  // per thread: one widened tile, reused
};

// ---- C ABI ----------------------------------------------------------------------------------

using Abi = loom_quant::PluginAbi<NoneQuantization>;

const loom_plugin_desc kDesc = {
    sizeof(loom_plugin_desc), LOOM_ABI_VERSION, LOOM_KIND_QUANTIZATION, LOOM_QUANTIZATION_IFACE_MAJOR,
    LOOM_QUANTIZATION_IFACE_MINOR, "none", "0.1.0",
    "unquantized f32/f16/bf16 weights; threaded, cache-blocked GEMM (AVX2+FMA when available)",
    nullptr, &Abi::validate, &Abi::create, &Abi::destroy};

}  // namespace

const loom_plugin_desc* loom_quantization_none_entry() { return &kDesc; }
BOOST_DLL_ALIAS(loom_quantization_none_entry, loom_plugin_entry_v1)
