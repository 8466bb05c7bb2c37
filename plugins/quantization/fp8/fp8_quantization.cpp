// quantization/fp8: E4M3 weights with per-output-channel scales (fp8_format.hpp), quantized at
// load from f32, f16 or bf16 storage; y = x (scale * W8)^T with E4M3 converted in registers for
// a few input rows, into an L2 tile for many (../common/dequant_gemm.hpp): batch-invariant bit
// for bit. Keys: simd ("auto"/"portable"). (The CUDA path comes with the CUDA work.)
// Pre-quantized weights (`loom-convert --quantize fp8`): a matrix N stored as I8 [out, in] holding
// the E4M3 codes, with its companion N.scale F32 [out] (looked up through
// loom_weight_info::find_tensor), is the codes and scales this plugin computes at load from the
// float weights, bit for bit, so serving the converted file gives the float file's logits.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "common/dequant_gemm.hpp"
#include "common/prequantized.hpp"
#include "common/quant_plugin.hpp"
#include "fp8_format.hpp"
#include "loom/sdk.hpp"

namespace loom_fp8 {
namespace {

class Fp8Quantization {
 public:
  static constexpr const char* kName = "fp8";
  struct Options {
    int simd = loom_quant::kSimdAuto;  // "simd" (quant_plugin.hpp); no AVX-512 kernels here
  };

  static const loom::sdk::ConfigSpec<Options>& config_spec() {
    static const auto spec = loom_quant::simd_spec<Options>("quantization fp8");
    return spec;
  }

  Fp8Quantization(const loom::sdk::Host& host, const loom_quantization_create_args& args, const Options& opt)
      : host_(host), kernels_(select_kernels(opt.simd != loom_quant::kSimdPortable)) {
    loom_quant::require_cpu(args, kName);
    tiles_.resize(static_cast<size_t>(host_.num_threads()));
  }

  loom::sdk::Reading reads(std::string_view format, loom_dtype dtype) const {
    return loom_quant::reads_quantizing(kName, format, dtype, "fp8_e4m3", LOOM_DTYPE_I8);
  }

  loom::sdk::Verdict supports(loom_dtype dtype) const {
    return loom_quant::float_or(kName, dtype, LOOM_DTYPE_I8, "; i8 E4M3 codes are, as written by loom-convert --quantize fp8");
  }

  // info may be NULL (a host without weight info): then I8 codes have no scales to find.
  void* prepare_weight(const loom_tensor_view* view, const loom_weight_info* info) const {
    if (view != nullptr && view->dtype == LOOM_DTYPE_I8) return prepare_prequantized(view, info);
    return prepare(view);
  }

  void* prepare(const loom_tensor_view* view) const {
    if (view != nullptr && view->dtype == LOOM_DTYPE_I8) return prepare_prequantized(view, nullptr);
    const loom_quant::StoredWeight src = loom_quant::check_weight(kName, view);
    auto w = std::make_unique<Fp8Weight>();
    w->out = src.out;
    w->in = src.in;
    w->q.assign(static_cast<size_t>(src.out * src.in), 0);
    w->scale.assign(static_cast<size_t>(src.out), 0.0f);
    Fp8Weight& dst = *w;
    host_.parallel_for(src.out, [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(src.in));
      for (int64_t o = begin; o < end; ++o) {
        loom_quant::read_row(src, o, row.data());
        quantize_row(row.data(), src.in, dst.q.data() + o * src.in, &dst.scale[static_cast<size_t>(o)]);
      }
    });
    return w.release();
  }

  void linear(void* handle, const loom_tensor_view* x, loom_tensor_view* y) {
    const Fp8Weight& w = *static_cast<const Fp8Weight*>(handle);
    const loom_quant::LinearArgs a = loom_quant::check_linear(kName, w.in, w.out, x, y);
    loom_quant::dequant_linear(host_, kernels_, w, w.in, w.out, a, tiles_);
  }

  static void release_weight(void* handle) { delete static_cast<Fp8Weight*>(handle); }

 private:
  // I8 [out, in] E4M3 codes + N.scale F32 [out], as loom-convert --quantize fp8 writes them.
  void* prepare_prequantized(const loom_tensor_view* view, const loom_weight_info* info) const {
    loom_quant::check_prequantized(kName, view, info, LOOM_DTYPE_I8, info != nullptr ? info->in_features : 0);
    const loom_tensor_view sv = loom_quant::find_companion(kName, info, ".scale", LOOM_DTYPE_F32, {info->out_features});
    auto w = std::make_unique<Fp8Weight>();
    w->out = info->out_features;
    w->in = info->in_features;
    const auto* codes = static_cast<const uint8_t*>(view->data);
    w->q.assign(codes, codes + w->out * w->in);
    const auto* scale = static_cast<const float*>(sv.data);
    w->scale.assign(scale, scale + w->out);
    for (int64_t o = 0; o < w->out; ++o)
      if (!(std::isfinite(w->scale[static_cast<size_t>(o)]) && w->scale[static_cast<size_t>(o)] >= 0))
        throw loom_quant::Error(LOOM_ERR_INVALID_ARGUMENT, std::string("quantization fp8: ") + info->name + ".scale[" +
                                                               std::to_string(o) + "] is not a finite non-negative scale");
    return w.release();
  }

  loom::sdk::Host host_;
  loom_quant::DequantKernels<Fp8Weight> kernels_;
  std::vector<std::vector<float>> tiles_;  // per thread: one dequantized tile
};

}  // namespace
}  // namespace loom_fp8

LOOM_QUANTIZATION_PLUGIN(loom_fp8::Fp8Quantization, "fp8", "0.1.0",
                         "FP8 E4M3 weights with per-output-channel scales, quantized at load or read pre-quantized "
                         "(loom-convert); converted in registers (AVX2)");
