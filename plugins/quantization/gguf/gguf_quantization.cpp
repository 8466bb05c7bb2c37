// quantization/gguf: weights in the GGUF block formats Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K,
// Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS, read in place from the (mmap'ed) model file, and y = x W^T as
// integer dot products on quantized activations. With the AVX2 kernels, the 32-value formats and
// the K-quants (Q2_K..Q6_K, IQ4_XS) are instead repacked at load into x8 layouts (8 rows interleaved, the file's
// bytes rearranged: gguf_repack.hpp for Q4_0/Q8_0, gguf_legacy_kernels.hpp for the other 32-value
// formats, gguf_kquant_x8.hpp for the K-quants), and the file's pages of
// a repacked tensor are given back (MADV_DONTNEED on a read-only file mapping), so resident
// memory stays about one copy of the weights.
//
// linear quantizes each activation row once per call (as llama.cpp pairs them: Q8_0 blocks for
// Q8_0/Q4_0/Q5_0/IQ4_NL weights, Q8_1 for Q4_1/Q5_1, Q8_K for the K-quants and IQ4_XS;
// linear_group once for all its weights, linear_experts once for all routed rows) into a scratch buffer the plugin
// keeps, then splits the output features into tiles across the host's threads; a tile (kTile rows, tens of KiB) stays in L2 while every
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
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gguf_kernels.hpp"
#include "gguf_kquant_x8.hpp"
#include "gguf_legacy_kernels.hpp"
#include "gguf_plain.hpp"
#include "common/quant_plugin.hpp"
#include "common/weight_pages.hpp"
#include "loom/quantization.h"
#include "loom/sdk.hpp"
#include "loom/sdk_dtype.hpp"
#include "loom/sdk_gguf_blocks.hpp"

namespace {

using loom::sdk::ConfigError;
using loom::sdk::Error;
namespace g = loom::sdk::gguf;

// Output features per work item: a multiple of every register block (1, 2, 4, 8 weight rows).
constexpr int64_t kTile = 32;

struct Options {
  int simd = loom_quant::kSimdAuto;  // "simd": "auto" (default), "avx2" or "portable" (quant_plugin.hpp)
};

// Q2_K..Q6_K, IQ4_XS: the K-quant kernel set (gguf_kernels_kquant.hpp), Q8_K activations.
bool is_kquant(loom_dtype t) {
  return t == LOOM_DTYPE_Q2_K || t == LOOM_DTYPE_Q3_K || t == LOOM_DTYPE_Q4_K || t == LOOM_DTYPE_Q5_K ||
         t == LOOM_DTYPE_Q6_K || t == LOOM_DTYPE_IQ4_XS;
}
bool is_block_format(loom_dtype t) {
  return t == LOOM_DTYPE_Q8_0 || t == LOOM_DTYPE_Q4_0 || is_kquant(t) || loom_gguf::is_legacy_format(t);
}
bool is_plain(loom_dtype t) { return t == LOOM_DTYPE_F32 || t == LOOM_DTYPE_F16 || t == LOOM_DTYPE_BF16; }

std::string unsupported_message(loom_dtype t) {
  return "quantization gguf: weights of type " + loom::sdk::type_name(t) +
         " are not supported (q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_xs are; "
         "f32/f16/bf16 on a plain path)";
}

// A prepared weight: where its rows live. Never owns the data.
struct Weight {
  loom_dtype dtype;
  int64_t out_features;
  int64_t in_features;
  int64_t row_bytes;  // bytes from one row to the next
  const uint8_t* data;  // the file's rows; not read once packed
  loom_gguf::PackedWeight packed{};  // under AVX2, every block format but the plain ones: x8 (owned)
};

class GgufQuantization {
 public:
  static constexpr const char* kName = "gguf";
  using WeightType = Weight;
  static const loom::sdk::ConfigSpec<Options>& config_spec() {
    static const auto spec = loom_quant::simd_spec<Options>("quantization gguf");
    return spec;
  }

  GgufQuantization(const loom::sdk::Host& host, const loom_quantization_create_args& args, const Options& opt)
      : host_(host), kernels_(loom_gguf::select_kernels(opt.simd != loom_quant::kSimdPortable)) {
    loom_quant::require_cpu(args, kName);
#ifdef LOOM_GGUF_HAVE_AVX2
    if (kernels_.name == std::string("avx2")) {
      // Same layout and bits either way; VNNI forms each block's sums in fewer instructions.
      const bool avx512 = opt.simd == loom_quant::kSimdAuto;
      const bool vnni = avx512 && loom_gguf::cpu_has_avx512_vnni();
      q4_0_x8_ = vnni ? loom_gguf::vnni_q4_0_x8_kernel() : loom_gguf::avx2_q4_0_x8_kernel();
      q8_0_x8_ = vnni ? loom_gguf::vnni_q8_0_x8_kernel() : loom_gguf::avx2_q8_0_x8_kernel();
      legacy_x8_ = vnni ? loom_gguf::vnni_legacy_x8_kernels() : loom_gguf::avx2_legacy_x8_kernels();
      // Every K-quant is repacked, so the file-layout K-quant sets run only without AVX2
      // (portable); the AVX-512 x8 set gives the AVX2 one's bits in fewer instructions.
      const bool kquant512 = avx512 && loom_gguf::cpu_has_avx512_kquant();
      kquant_x8_ = kquant512 ? loom_gguf::avx512_kquant_x8_kernels() : loom_gguf::avx2_kquant_x8_kernels();
      host_.log(LOOM_LOG_INFO, "quantization gguf: AVX2 kernels; 32-value blocks ", vnni ? "with AVX512-VNNI" : "AVX2",
                ", K-quants ", kquant512 ? "AVX-512" : "AVX2",
                opt.simd == loom_quant::kSimdAvx2 ? " (simd = \"avx2\": no AVX-512)" : "");
    }
#endif
    if (kernels_.name != std::string("avx2")) host_.log(LOOM_LOG_INFO, "quantization gguf: portable kernels");
  }

  // The block formats are this plugin's own; f32/f16/bf16 it reads as stored on a plain path
  // (quantization none's packed panels are the tuned one).
  loom::sdk::Reading reads(std::string_view, loom_dtype dtype) const {
    if (is_block_format(dtype)) return loom::sdk::Reading::native();
    if (is_plain(dtype)) return loom::sdk::Reading::as_stored();
    return loom::sdk::Reading::cannot(unsupported_message(dtype));
  }

  loom::sdk::Verdict supports(loom_dtype dtype) const {
    if (is_block_format(dtype) || is_plain(dtype)) return loom::sdk::Verdict::yes();
    return loom::sdk::Verdict::no(unsupported_message(dtype));
  }

  Weight* prepare_weight(const loom_tensor_view* w, const loom_weight_info*) const {
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
    auto* weight = new Weight{w->dtype, w->shape[0], in, w->strides[0] / geo.values * geo.bytes,
                              static_cast<const uint8_t*>(w->data)};
    const bool legacy = loom_gguf::is_legacy_format(w->dtype) && legacy_x8_.q4_1 != nullptr;
    const bool kquant = loom_gguf::is_kquant_x8_format(w->dtype) && kquant_x8_.q4_k != nullptr;
    if ((w->dtype == LOOM_DTYPE_Q4_0 && q4_0_x8_ != nullptr) || (w->dtype == LOOM_DTYPE_Q8_0 && q8_0_x8_ != nullptr) ||
        legacy || kquant) {
      // Repacked once; the file's copy is not read again, so its pages leave our resident set.
      const int64_t nb = in / geo.values;
      try {
        if (kquant) {
          // Every thread fills a share of the groups.
          weight->packed = loom_gguf::allocate_kquant(w->dtype, weight->out_features, nb);
          const int64_t groups = (weight->out_features + loom_gguf::kGroupRows - 1) / loom_gguf::kGroupRows;
          host_.parallel_for(groups, [&](int64_t g0, int64_t g1) {
            loom_gguf::pack_kquant_groups(w->dtype, weight->data, weight->row_bytes, &weight->packed, g0, g1);
          });
        } else {
          weight->packed =
              legacy ? loom_gguf::pack_legacy(w->dtype, weight->data, weight->row_bytes, weight->out_features, nb)
                     : (w->dtype == LOOM_DTYPE_Q4_0 ? &loom_gguf::pack_q4_0 : &loom_gguf::pack_q8_0)(
                           weight->data, weight->row_bytes, weight->out_features, nb);
        }
      } catch (...) {
        delete weight;
        throw;
      }
      loom_quant::release_file_pages(
          weight->data, static_cast<int64_t>((weight->out_features - 1) * weight->row_bytes + nb * geo.bytes));
    }
    return weight;
  }

  void linear(const Weight& w, const loom_tensor_view* x, loom_tensor_view* y) {
    void* handle = const_cast<Weight*>(&w);
    linear_group(&handle, 1, x, y);
  }

  // Quantization interface 1.2: linears on one x (a layer's Q, K and V; gate and up). x is
  // quantized once for all of them, and one pass of the threads takes the tiles of every
  // weight. A tile is computed as linear computes it, so each y gets linear's bits. Weights
  // that want different activations (Q8_0, Q8_1 or Q8_K blocks, or f32 for a plain tensor) go
  // one at a time.
  void linear_group(void* const* handles, int32_t count, const loom_tensor_view* x, loom_tensor_view* y) {
    if (handles == nullptr || y == nullptr || count <= 0)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization gguf: empty linear group");
    for (int32_t i = 0; i < count; ++i) {
      if (handles[i] == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "weight handle is null");
      const Weight& w = *static_cast<const Weight*>(handles[i]);
      loom_quant::check_linear(kName, w.in_features, w.out_features, x, &y[i]);
    }
    if (!one_activation_kind(handles, count)) {
      for (int32_t k = 0; k < count; ++k) linear_group(&handles[k], 1, x, &y[k]);
      return;
    }
    const int64_t n = x->shape[0];
    if (n == 0) return;
    group_.clear();
    for (int32_t i = 0; i < count; ++i)
      group_.push_back(target(*static_cast<const Weight*>(handles[i]), static_cast<float*>(y[i].data), y[i].strides[0], 0, n));
    multiply(*x);
  }

  // Quantization interface 1.4: a mixture-of-experts layer's expert GEMMs, rows grouped by
  // expert. The routed rows are quantized once, and one pass of the threads takes the tiles of
  // every expert that has rows, each tile reading only its expert's rows: in decode that is one
  // pass for the step's few active experts instead of one per expert. A row gets linear's bits.
  void linear_experts(void* const* handles, int32_t count, const int32_t* offsets, const loom_tensor_view* x,
                      loom_tensor_view* y) {
    if (handles == nullptr || offsets == nullptr || x == nullptr || y == nullptr || count <= 0 || offsets[0] != 0)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization gguf: linear_experts needs handles and offsets from 0");
    if (offsets[count] != x->shape[0])
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization gguf: linear_experts offsets end at " +
                                                 std::to_string(offsets[count]) + ", x has " +
                                                 std::to_string(x->shape[0]) + " rows");
    for (int32_t e = 0; e < count; ++e) {
      if (offsets[e + 1] < offsets[e])
        throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization gguf: linear_experts offsets decrease");
      if (handles[e] == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "weight handle is null");
      const Weight& w = *static_cast<const Weight*>(handles[e]);
      loom_quant::check_linear(kName, w.in_features, w.out_features, x, y);
    }
    auto* yd = static_cast<float*>(y->data);
    if (!one_activation_kind(handles, count)) {
      // Experts stored in different types (a GGUF file keeps them in one tensor, so not from a file).
      for (int32_t e = 0; e < count; ++e) {
        const int64_t lo = offsets[e], n = int64_t{offsets[e + 1]} - lo;
        if (n == 0) continue;
        loom_tensor_view xe = *x, ye = *y;
        xe.data = const_cast<float*>(static_cast<const float*>(x->data) + lo * x->strides[0]);
        ye.data = yd + lo * y->strides[0];
        xe.shape[0] = ye.shape[0] = n;
        linear_group(&handles[e], 1, &xe, &ye);
      }
      return;
    }
    group_.clear();
    for (int32_t e = 0; e < count; ++e) {
      const int64_t lo = offsets[e], n = int64_t{offsets[e + 1]} - lo;
      if (n > 0)
        group_.push_back(target(*static_cast<const Weight*>(handles[e]), yd + lo * y->strides[0], y->strides[0], lo, n));
    }
    if (!group_.empty()) multiply(*x);
  }

 private:
  // The activations a weight's kernels read.
  enum class Activations { f32, q8_0, q8_1, q8_k };
  static Activations activations_of(loom_dtype t) {
    if (is_plain(t)) return Activations::f32;
    if (loom_gguf::legacy_takes_q8_1(t)) return Activations::q8_1;
    return is_kquant(t) ? Activations::q8_k : Activations::q8_0;
  }
  // The file-layout kernel of a block format.
  loom_gguf::TileKernel tile_kernel(loom_dtype t) const {
    switch (t) {
      case LOOM_DTYPE_Q8_0: return kernels_.q8_0;
      case LOOM_DTYPE_Q4_0: return kernels_.q4_0;
      case LOOM_DTYPE_Q4_K: return kernels_.kquant.q4_k;
      case LOOM_DTYPE_Q6_K: return kernels_.kquant.q6_k;
      case LOOM_DTYPE_Q2_K: return kernels_.kquant.q2_k;
      case LOOM_DTYPE_Q3_K: return kernels_.kquant.q3_k;
      case LOOM_DTYPE_Q5_K: return kernels_.kquant.q5_k;
      case LOOM_DTYPE_IQ4_XS: return kernels_.kquant.iq4_xs;
      case LOOM_DTYPE_Q4_1: return legacy_.q4_1;
      case LOOM_DTYPE_Q5_0: return legacy_.q5_0;
      case LOOM_DTYPE_Q5_1: return legacy_.q5_1;
      case LOOM_DTYPE_IQ4_NL: return legacy_.iq4_nl;
      default: return nullptr;  // not a block format (prepare_weight refused it)
    }
  }
  // One linear of a group (or one expert): its weight, its rows [row0, row0 + rows) of x, where
  // they go (y points at the first), and its number of tiles.
  struct Target {
    const Weight* w;
    float* y;
    int64_t ys;
    int64_t row0, rows;
    int64_t tiles;
  };
  static Target target(const Weight& w, float* y, int64_t ys, int64_t row0, int64_t rows) {
    // Work items: tiles of kTile output rows (packed: kTile / 8 groups).
    const int64_t tiles = w.packed.data ? ((w.out_features + loom_gguf::kGroupRows - 1) / loom_gguf::kGroupRows +
                                           kTileGroups - 1) / kTileGroups
                                        : (w.out_features + kTile - 1) / kTile;
    return Target{&w, y, ys, row0, rows, tiles};
  }
  static bool one_activation_kind(void* const* handles, int32_t count) {
    const Activations kind = activations_of(static_cast<const Weight*>(handles[0])->dtype);
    for (int32_t i = 1; i < count; ++i)
      if (activations_of(static_cast<const Weight*>(handles[i])->dtype) != kind) return false;
    return true;
  }

  // group_'s targets (one activation kind, every in_features x's) over x [n, in]: the rows any
  // target reads are quantized once, then one pass of the threads runs every target's tiles.
  void multiply(const loom_tensor_view& x) {
    const Activations kind = activations_of(group_[0].w->dtype);
    const int64_t n = x.shape[0], in = x.shape[1];
    const int64_t xs = x.strides[0];
    const auto* xd = static_cast<const float*>(x.data);
    int64_t total = 0;
    bool any_packed = false, any_legacy = false, any_kquant = false;
    for (const Target& t : group_) {
      total += t.tiles;
      if (t.w->packed.data == nullptr) continue;
      const bool legacy = loom_gguf::is_legacy_format(t.w->dtype), kquant = loom_gguf::is_kquant_x8_format(t.w->dtype);
      any_packed = any_packed || (!legacy && !kquant);
      any_legacy = any_legacy || legacy;
      any_kquant = any_kquant || kquant;
    }
    // Calls run(target, first tile, end tile) over the group's tiles [begin, end).
    const auto for_tiles = [&](int64_t begin, int64_t end, auto&& run) {
      int64_t base = 0;
      for (const Target& t : group_) {
        const int64_t lo = std::max(begin, base), hi = std::min(end, base + t.tiles);
        if (lo < hi) run(t, lo - base, hi - base);
        base += t.tiles;
      }
    };

    if (kind == Activations::f32) {
      host_.parallel_for(total, [&](int64_t begin, int64_t end) {
        for_tiles(begin, end, [&](const Target& t, int64_t t0, int64_t t1) {
          const Weight& w = *t.w;
          for (int64_t tile = t0; tile < t1; ++tile) {
            const int64_t o0 = tile * kTile;
            loom_gguf::plain_tile(w.dtype, w.data + o0 * w.row_bytes, w.row_bytes, std::min(kTile, w.out_features - o0),
                                  xd + t.row0 * xs, xs, t.rows, in, t.y + o0, t.ys);
          }
        });
      });
      return;
    }

    // Quantize every activation row once: [n, in / block] blocks of Q8_0, Q8_1 or Q8_K.
    const bool k_quant = kind == Activations::q8_k, q8_1 = kind == Activations::q8_1;
    const int64_t xq_row_bytes = k_quant ? in / g::kQKK * static_cast<int64_t>(sizeof(g::BlockQ8_K))
                                 : q8_1  ? in / g::kQK * static_cast<int64_t>(sizeof(g::BlockQ8_1))
                                         : in / g::kQK * static_cast<int64_t>(sizeof(g::BlockQ8_0));
    if (xq_.size() < static_cast<size_t>(n * xq_row_bytes)) xq_.resize(static_cast<size_t>(n * xq_row_bytes));
    uint8_t* xq = xq_.data();
    auto quantize_rows = [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        if (k_quant) {
          g::quantize_q8_k(xd + t * xs, reinterpret_cast<g::BlockQ8_K*>(xq + t * xq_row_bytes), in / g::kQKK);
        } else if (q8_1) {
          loom_gguf::quantize_q8_1(kernels_.quantize_q8_0, xd + t * xs,
                                   reinterpret_cast<g::BlockQ8_1*>(xq + t * xq_row_bytes), in / g::kQK);
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
    const int64_t nb = in / g::kQK;  // 32-value activation blocks per row (the x8 kernels' side tables)
    loom_gguf::ActivationBlockInfo info{nullptr, nullptr};
    if (any_packed) {
      if (xd_.size() < static_cast<size_t>(n * nb)) {
        xd_.resize(static_cast<size_t>(n * nb));
        xoff_.resize(static_cast<size_t>(n * nb));
      }
      info = loom_gguf::ActivationBlockInfo{xd_.data(), xoff_.data()};
      loom_gguf::activation_block_info(xq, xq_row_bytes, n, nb, info);
    }
    loom_gguf::LegacyActivationInfo legacy_info{nullptr, nullptr, nullptr};
    if (any_legacy) {
      const auto blocks = static_cast<size_t>(n * nb);
      if (legacy_d_.size() < blocks) {
        legacy_d_.resize(blocks);
        legacy_s_.resize(blocks);
        legacy_off_.resize(blocks);
      }
      legacy_info = loom_gguf::LegacyActivationInfo{legacy_d_.data(), legacy_s_.data(), legacy_off_.data()};
      loom_gguf::legacy_activation_info(q8_1, xq, xq_row_bytes, n, nb, legacy_info);
    }

    const int64_t nbk = in / g::kQKK;  // Q8_K super-blocks per row (the K-quant x8 kernels' bsum pairs)
    if (any_kquant) {
      const auto entries = static_cast<size_t>(n * nbk * loom_gguf::kKQuantSide);
      if (kquant_side_.size() < entries) kquant_side_.resize(entries);
      loom_gguf::kquant_activation_info(xq, xq_row_bytes, n, nbk, kquant_side_.data());
    }

    host_.parallel_for(total, [&](int64_t begin, int64_t end) {
      for_tiles(begin, end, [&](const Target& t, int64_t t0, int64_t t1) {
        const Weight& w = *t.w;
        const uint8_t* txq = xq + t.row0 * xq_row_bytes;  // this target's first row, and its side tables
        const int64_t side = t.row0 * nb;
        if (w.packed.data && loom_gguf::is_kquant_x8_format(w.dtype)) {
          const loom_gguf::KQuantPackedKernel packed_kernel = kquant_x8_.of(w.dtype);
          const int32_t* rows = kquant_side_.data() + t.row0 * nbk * loom_gguf::kKQuantSide;
          const int64_t n_groups = (w.out_features + loom_gguf::kGroupRows - 1) / loom_gguf::kGroupRows;
          for (int64_t tile = t0; tile < t1; ++tile) {
            const int64_t g0 = tile * kTileGroups, g1 = std::min(g0 + kTileGroups, n_groups);
            packed_kernel(w.packed, g0, g1, txq, xq_row_bytes, rows, t.rows, t.y + g0 * loom_gguf::kGroupRows, t.ys);
          }
          return;
        }
        if (w.packed.data && loom_gguf::is_legacy_format(w.dtype)) {
          const loom_gguf::LegacyPackedKernel packed_kernel = legacy_x8_.of(w.dtype);
          const loom_gguf::LegacyActivationInfo rows{legacy_info.d + side, legacy_info.s + side,
                                                     legacy_info.offset + side};
          const int64_t n_groups = (w.out_features + loom_gguf::kGroupRows - 1) / loom_gguf::kGroupRows;
          for (int64_t tile = t0; tile < t1; ++tile) {
            const int64_t g0 = tile * kTileGroups, g1 = std::min(g0 + kTileGroups, n_groups);
            packed_kernel(w.packed, g0, g1, txq, xq_row_bytes, rows, t.rows, t.y + g0 * loom_gguf::kGroupRows, t.ys);
          }
          return;
        }
        if (w.packed.data) {
          const loom_gguf::PackedKernel packed_kernel = w.dtype == LOOM_DTYPE_Q4_0 ? q4_0_x8_ : q8_0_x8_;
          const loom_gguf::ActivationBlockInfo rows{info.d + side, info.offset + side};
          const int64_t n_groups = (w.out_features + loom_gguf::kGroupRows - 1) / loom_gguf::kGroupRows;
          for (int64_t tile = t0; tile < t1; ++tile) {
            const int64_t g0 = tile * kTileGroups, g1 = std::min(g0 + kTileGroups, n_groups);
            packed_kernel(w.packed, g0, g1, txq, xq_row_bytes, rows, t.rows, t.y + g0 * loom_gguf::kGroupRows, t.ys);
          }
          return;
        }
        const loom_gguf::TileKernel kernel = tile_kernel(w.dtype);
        for (int64_t tile = t0; tile < t1; ++tile) {
          const int64_t o0 = tile * kTile;
          kernel(w.data + o0 * w.row_bytes, w.row_bytes, std::min(kTile, w.out_features - o0), txq, xq_row_bytes,
                 t.rows, in, t.y + o0, t.ys);
        }
      });
    });
  }
  static constexpr int64_t kTileGroups = kTile / loom_gguf::kGroupRows;

  loom::sdk::Host host_;
  loom_gguf::Kernels kernels_;
  loom_gguf::PackedKernel q4_0_x8_ = nullptr;  // set with the AVX2 kernels
  loom_gguf::PackedKernel q8_0_x8_ = nullptr;
  loom_gguf::LegacyKernels legacy_ = loom_gguf::legacy_portable_kernels();  // file layout, no AVX2
  loom_gguf::LegacyPackedKernels legacy_x8_{};  // set with the AVX2 kernels
  loom_gguf::KQuantPackedKernels kquant_x8_{};  // set with the AVX2 kernels
  std::vector<uint8_t> xq_;  // quantized activations [n, in / block] blocks, reused across calls
  std::vector<float> xd_;     // x8 kernels: activation block scales [n, in / 32]
  std::vector<int32_t> xoff_;  // x8 kernels: 8 * activation block sums [n, in / 32]
  std::vector<float> legacy_d_, legacy_s_;  // legacy x8 kernels: activation d and Q8_1 s [n, in / 32]
  std::vector<int32_t> kquant_side_;  // K-quant x8 kernels: bsum pairs [n, in / 256, kKQuantSide]
  std::vector<int32_t> legacy_off_;  // legacy x8 kernels (Q8_0): 8 * activation block sums [n, in / 32]
  std::vector<Target> group_;  // the linears of the current call, reused
};

}  // namespace

LOOM_QUANTIZATION_PLUGIN(GgufQuantization, "gguf", "0.1.0",
                         "GGUF block formats Q8_0/Q4_0/Q4_1/Q5_0/Q5_1/IQ4_NL/Q2_K/Q3_K/Q4_K/Q5_K/Q6_K/IQ4_XS read "
                         "in place; integer dot products on quantized activations (AVX2, AVX-512/VNNI when "
                         "available)");
