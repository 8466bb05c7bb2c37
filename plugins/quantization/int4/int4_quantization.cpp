// quantization/int4: group-wise INT4 weights (int4_format.hpp), quantized at load from f32, f16
// or bf16 storage, or read pre-quantized from a GGUF written by loom-convert --quantize int4 (I32
// words with .scale/.zero companions, int4_prequantized.hpp); y = x W^T with the weights
// dequantized in registers for a few input rows, into an L2 tile for many
// (../common/dequant_gemm.hpp): batch-invariant bit for bit.
// The output head (LOOM_WEIGHT_OUTPUT: the classifier, token_embd.weight when tied) stays in its
// stored float form, as GPTQ and AWQ leave lm_head unquantized: its error reaches the logits
// directly (on the demo model a 4-bit head alone costs several percent of perplexity). A head
// stored pre-quantized is used as stored.
// Keys: group_size (32, 64 or 128; default 128), zero_point (true: asymmetric with per-group zero
// points as AWQ/GPTQ, the default; false: symmetric), scale_search (true, the default: the
// per-group scale/zero-point search of int4_format.hpp at load; false: plain min/max scales),
// quantize_output (false, the default; true: the output head in INT4 too, 4 bits like the rest),
// simd ("auto"/"portable"). A pre-quantized weight is used as stored, whatever these say.
#include <memory>
#include <string>
#include <vector>

#include "common/dequant_gemm.hpp"
#include "common/quant_plugin.hpp"
#include "int4_format.hpp"
#include "int4_prequantized.hpp"
#include "loom/sdk.hpp"

namespace loom_int4 {
namespace {

// A prepared weight: INT4, or (the output head) the stored float rows, read as they are.
struct Prepared {
  bool is_float = false;
  Int4Weight int4;
  loom_quant::StoredWeight stored{};  // is_float: points into the model file
};

// dst[j * in + k] = stored row o0 + j widened to f32: the float head's "dequantization".
void dequant_stored(const loom_quant::StoredWeight& w, int64_t o0, int64_t n_rows, float* dst) {
  for (int64_t j = 0; j < n_rows; ++j) loom_quant::read_row(w, o0 + j, dst + j * w.in);
}

class Int4Quantization {
 public:
  static constexpr const char* kName = "int4";
  struct Options {
    int simd = loom_quant::kSimdAuto;  // "simd" (quant_plugin.hpp); no AVX-512 kernels here
    int64_t group_size = RowQuant{}.group;
    bool zero_point = RowQuant{}.zero_point;
    bool scale_search = RowQuant{}.scale_search;
    bool quantize_output = false;
  };

  static const loom::sdk::ConfigSpec<Options>& config_spec() {
    static const auto spec =
        loom::sdk::ConfigSpec<Options>("quantization int4")
            .integer_choice("group_size", &Options::group_size, {int64_t{32}, int64_t{64}, int64_t{128}},
                            "weights per scale (and zero point)")
            .boolean("zero_point", &Options::zero_point, "asymmetric groups with zero points (AWQ/GPTQ); false: symmetric")
            .boolean("scale_search", &Options::scale_search, "search each group's scale at load; false: min/max")
            .boolean("quantize_output", &Options::quantize_output, "the output head in INT4 too (default: kept in float)")
            .choice("simd", &Options::simd, loom_quant::simd_values(), loom_quant::kSimdHelp);
    return spec;
  }

  Int4Quantization(const loom::sdk::Host& host, const loom_quantization_create_args& args, const Options& opt)
      : host_(host), opt_(opt), rows_{opt.group_size, opt.zero_point, opt.scale_search},
        kernels_(select_kernels(opt.simd != loom_quant::kSimdPortable)) {
    loom_quant::require_cpu(args, kName);
    float_kernels_ = {nullptr, dequant_stored, kernels_.tile_f32, kernels_.name};
    tiles_.resize(static_cast<size_t>(host_.num_threads()));
  }

  loom::sdk::Reading reads(std::string_view format, loom_dtype dtype) const {
    return loom_quant::reads_quantizing(kName, format, dtype, "int4", LOOM_DTYPE_I32);
  }

  loom::sdk::Verdict supports(loom_dtype dtype) const {
    if (loom_quant::is_float_dtype(dtype) || dtype == LOOM_DTYPE_I32) return loom::sdk::Verdict::yes();
    return loom::sdk::Verdict::no("quantization int4: weights of dtype " + loom_quant::dtype_label(dtype) +
                                  " are not supported (f32, f16 and bf16 are, quantized at load, and i32 "
                                  "words written by loom-convert --quantize int4)");
  }

  // info may be NULL (a host without weight info): then no weight is known to be the output head.
  void* prepare_weight(const loom_tensor_view* view, const loom_weight_info* info) const {
    auto p = std::make_unique<Prepared>();
    if (view != nullptr && view->dtype == LOOM_DTYPE_I32) {
      p->int4 = read_prequantized(view, info);
      return p.release();
    }
    const loom_quant::StoredWeight src = loom_quant::check_weight(kName, view);
    if (info != nullptr && info->role == LOOM_WEIGHT_OUTPUT && !opt_.quantize_output) {
      p->is_float = true;
      p->stored = src;
      return p.release();
    }
    p->int4 = make_weight(src.out, src.in, rows_.group);
    Int4Weight& dst = p->int4;
    host_.parallel_for(src.out, [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(src.in));
      for (int64_t o = begin; o < end; ++o) {
        loom_quant::read_row(src, o, row.data());
        quantize_row(row.data(), rows_, dst, o);
      }
    });
    return p.release();
  }

  void linear(void* handle, const loom_tensor_view* x, loom_tensor_view* y) {
    const Prepared& p = *static_cast<const Prepared*>(handle);
    if (p.is_float) {
      const loom_quant::LinearArgs a = loom_quant::check_linear(kName, p.stored.in, p.stored.out, x, y);
      loom_quant::dequant_linear(host_, float_kernels_, p.stored, p.stored.in, p.stored.out, a, tiles_);
      return;
    }
    const Int4Weight& w = p.int4;
    const loom_quant::LinearArgs a = loom_quant::check_linear(kName, w.in, w.out, x, y);
    loom_quant::dequant_linear(host_, kernels_, w, w.in, w.out, a, tiles_);
  }

  static void release_weight(void* handle) { delete static_cast<Prepared*>(handle); }

 private:
  loom::sdk::Host host_;
  Options opt_;
  RowQuant rows_;
  loom_quant::DequantKernels<Int4Weight> kernels_;
  loom_quant::DequantKernels<loom_quant::StoredWeight> float_kernels_{};
  std::vector<std::vector<float>> tiles_;  // per thread: one dequantized tile
};

}  // namespace
}  // namespace loom_int4

LOOM_QUANTIZATION_PLUGIN(loom_int4::Int4Quantization, "int4", "0.2.0",
                         "group-wise INT4 weights (group 32/64/128, optional zero points, GPTQ nibble order), "
                         "quantized at load with a scale search or read pre-quantized; the output head kept in float");
