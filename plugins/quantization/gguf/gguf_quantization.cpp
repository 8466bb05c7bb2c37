// quantization/gguf: weights in the GGUF block formats Q8_0, Q4_0, Q4_K and Q6_K, read in place
// from the (mmap'ed) model file, and y = x W^T as integer dot products on quantized activations.
//
// linear quantizes each activation row once per call (Q8_0 blocks for Q8_0/Q4_0 weights, Q8_K
// for the K-quants) into a scratch buffer the plugin keeps, then splits the output features into
// tiles across the host's threads; a tile (kTile rows, tens of KiB) stays in L2 while every
// activation row streams past it, so each weight byte comes from memory once per call. The
// kernels (gguf_kernels.hpp: AVX2 when the CPU has it, key "simd") give each row the same bits
// alone or in any batch.
//
// f32/f16/bf16 weights (tensors a converter left unquantized because their rows are not whole
// blocks, e.g. the demo model's ffn_down with in = 172) take a plain float path, so one plugin
// serves a whole mixed file; it is correct and batch-invariant but not tuned: use quantization
// none for unquantized models.
// Written against the C ABI directly (not sdk.hpp) so supports() can give its reason while
// returning LOOM_OK with *ok = 0. linear is not reentrant (one scratch per plugin instance).
#include <boost/dll/alias.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gguf_kernels.hpp"
#include "gguf_plain.hpp"
#include "../common/quant_plugin.hpp"
#include "loom/quantization.h"
#include "loom/sdk_core.hpp"
#include "loom/sdk_gguf_blocks.hpp"

namespace {

using loom::sdk::ConfigError;
using loom::sdk::Error;
namespace g = loom::sdk::gguf;

// Output features per work item: a multiple of every register block (1, 2, 4, 8 weight rows).
constexpr int64_t kTile = 32;

struct Options {
  bool simd = true;  // "simd": "auto" (default) or "portable"
};

Options parse_config(const char* config_json) {
  Options o;
  loom_quant::parse_config("gguf", config_json, [&](const std::string& key, const nlohmann::json& v, auto&& problem) {
    if (key == "simd")
      o.simd = loom_quant::read_simd(v, o.simd, problem);
    else
      problem("unknown key \"" + key + "\" (valid keys: simd)");
  });
  return o;
}

bool is_block_format(loom_dtype t) {
  return t == LOOM_DTYPE_Q8_0 || t == LOOM_DTYPE_Q4_0 || t == LOOM_DTYPE_Q4_K || t == LOOM_DTYPE_Q6_K;
}
bool is_plain(loom_dtype t) { return t == LOOM_DTYPE_F32 || t == LOOM_DTYPE_F16 || t == LOOM_DTYPE_BF16; }

std::string unsupported_message(loom_dtype t) {
  return "quantization gguf: weights of ggml type " + std::to_string(static_cast<int>(t)) +
         " are not supported (q8_0, q4_0, q4_K, q6_K are; f32/f16/bf16 on a plain path)";
}

// A prepared weight: where its rows live. Never owns the data.
struct Weight {
  loom_dtype dtype;
  int64_t out_features;
  int64_t in_features;
  int64_t row_bytes;  // bytes from one row to the next
  const uint8_t* data;
};

class GgufQuantization {
 public:
  static constexpr const char* kName = "gguf";
  using WeightType = Weight;
  static Options parse(const char* config_json) { return parse_config(config_json); }

  GgufQuantization(const loom_host_api* host, const Options& opt)
      : host_(host), kernels_(loom_gguf::select_kernels(opt.simd)) {
  }

  void supports(loom_dtype dtype, int32_t* ok, loom_error_buf* err) const {
    *ok = is_block_format(dtype) || is_plain(dtype) ? 1 : 0;
    if (*ok == 0) loom::sdk::write_error(err, unsupported_message(dtype));
  }

  Weight* prepare(const loom_tensor_view* w) const {
    if (w == nullptr || w->data == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "weight is null");
    if (!is_block_format(w->dtype) && !is_plain(w->dtype)) throw Error(LOOM_ERR_UNSUPPORTED, unsupported_message(w->dtype));
    if (w->ndim != 2 || w->shape[0] <= 0 || w->shape[1] <= 0 || w->strides[1] != 1 || w->strides[0] < w->shape[1])
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization gguf: weight must be a 2-d [out, in] view with contiguous rows");
    const int64_t in = w->shape[1];
    if (is_plain(w->dtype)) {
      const int64_t esize = w->dtype == LOOM_DTYPE_F32 ? 4 : 2;
      return new Weight{w->dtype, w->shape[0], in, w->strides[0] * esize, static_cast<const uint8_t*>(w->data)};
    }
    const g::BlockGeometry geo = g::block_geometry(w->dtype);
    if (in % geo.values != 0 || w->strides[0] % geo.values != 0)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization gguf: in_features " + std::to_string(in) +
                                                 " is not a whole number of " + std::to_string(geo.values) +
                                                 "-value blocks");
    return new Weight{w->dtype, w->shape[0], in, w->strides[0] / geo.values * geo.bytes,
                      static_cast<const uint8_t*>(w->data)};
  }

  void linear(const Weight& w, const loom_tensor_view* x, loom_tensor_view* y) {
    if (x == nullptr || y == nullptr || x->data == nullptr || y->data == nullptr)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "x or y is null");
    if (x->dtype != LOOM_DTYPE_F32 || y->dtype != LOOM_DTYPE_F32)
      throw Error(LOOM_ERR_UNSUPPORTED, "quantization gguf: x and y must be f32");
    if (x->ndim != 2 || y->ndim != 2 || x->shape[1] != w.in_features || y->shape[1] != w.out_features ||
        x->shape[0] != y->shape[0] || x->strides[1] != 1 || y->strides[1] != 1)
      throw Error(LOOM_ERR_INVALID_ARGUMENT,
                  "quantization gguf: linear expects x [n, " + std::to_string(w.in_features) + "] and y [n, " +
                      std::to_string(w.out_features) + "], got x [" + std::to_string(x->shape[0]) + ", " +
                      std::to_string(x->shape[1]) + "] and y [" + std::to_string(y->shape[0]) + ", " +
                      std::to_string(y->shape[1]) + "]");
    const int64_t n = x->shape[0], in = w.in_features, out = w.out_features;
    const int64_t xs = x->strides[0], ys = y->strides[0];
    const auto* xd = static_cast<const float*>(x->data);
    auto* yd = static_cast<float*>(y->data);
    const int64_t n_tiles = (out + kTile - 1) / kTile;

    if (is_plain(w.dtype)) {
      host_.parallel_for(n_tiles, [&](int64_t begin, int64_t end) {
        for (int64_t tile = begin; tile < end; ++tile) {
          const int64_t o0 = tile * kTile;
          loom_gguf::plain_tile(w.dtype, w.data + o0 * w.row_bytes, w.row_bytes, std::min(kTile, out - o0), xd, xs, n,
                                in, yd + o0, ys);
        }
      });
      return;
    }

    // Quantize every activation row once: [n, in / block] blocks of Q8_0 or Q8_K.
    const bool k_quant = w.dtype == LOOM_DTYPE_Q4_K || w.dtype == LOOM_DTYPE_Q6_K;
    const int64_t xq_row_bytes = k_quant ? in / g::kQKK * static_cast<int64_t>(sizeof(g::BlockQ8_K))
                                         : in / g::kQK * static_cast<int64_t>(sizeof(g::BlockQ8_0));
    if (xq_.size() < static_cast<size_t>(n * xq_row_bytes)) xq_.resize(static_cast<size_t>(n * xq_row_bytes));
    uint8_t* xq = xq_.data();
    auto quantize_rows = [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        if (k_quant) {
          g::quantize_q8_k(xd + t * xs, reinterpret_cast<g::BlockQ8_K*>(xq + t * xq_row_bytes), in / g::kQKK);
        } else {
          kernels_.quantize_q8_0(xd + t * xs, reinterpret_cast<g::BlockQ8_0*>(xq + t * xq_row_bytes), in / g::kQK);
        }
      }
    };
    if (n < 4) {
      quantize_rows(0, n);
    } else {
      host_.parallel_for(n, quantize_rows);
    }

    const loom_gguf::TileKernel kernel = w.dtype == LOOM_DTYPE_Q8_0   ? kernels_.q8_0
                                         : w.dtype == LOOM_DTYPE_Q4_0 ? kernels_.q4_0
                                         : w.dtype == LOOM_DTYPE_Q4_K ? kernels_.q4_k
                                                                      : kernels_.q6_k;
    host_.parallel_for(n_tiles, [&](int64_t begin, int64_t end) {
      for (int64_t tile = begin; tile < end; ++tile) {
        const int64_t o0 = tile * kTile;
        kernel(w.data + o0 * w.row_bytes, w.row_bytes, std::min(kTile, out - o0), xq, xq_row_bytes, n, in, yd + o0, ys);
      }
    });
  }

 private:
  loom::sdk::Host host_;
  loom_gguf::Kernels kernels_;
  std::vector<uint8_t> xq_;  // quantized activations [n, in / block] blocks, reused across calls
};

// ---- C ABI ----------------------------------------------------------------------------------

using Abi = loom_quant::PluginAbi<GgufQuantization>;

const loom_plugin_desc kDesc = {
    sizeof(loom_plugin_desc), LOOM_ABI_VERSION, LOOM_KIND_QUANTIZATION, LOOM_QUANTIZATION_IFACE_MAJOR,
    LOOM_QUANTIZATION_IFACE_MINOR, "gguf", "0.1.0",
    "GGUF block formats Q8_0/Q4_0/Q4_K/Q6_K read in place; integer dot products on quantized activations "
    "(AVX2 when available)",
    nullptr, &Abi::validate, &Abi::create, &Abi::destroy};

}  // namespace

const loom_plugin_desc* loom_quantization_gguf_entry() { return &kDesc; }
BOOST_DLL_ALIAS(loom_quantization_gguf_entry, loom_plugin_entry_v1)
