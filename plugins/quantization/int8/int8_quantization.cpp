// quantization/int8: weights quantized at load to INT8 with one scale per output channel
// (int8_format.hpp), from f32, f16 or bf16 storage.
//   mode "w8a16" (default): activations stay f32; weights are dequantized in registers for a
//       few input rows, into an L2 tile for many (dequant_gemm.hpp); batch-invariant bit for bit.
//   mode "w8a8": each input row is quantized to INT8 on the fly (its own scale) and the dot
//       products are exact int32 sums, so the result depends on the row alone. Calibration
//       (int8_calibrate.h) adds SmoothQuant factors with strength "smoothquant_alpha".
// Keys: mode, smoothquant_alpha (w8a8 only, in [0, 1], default 0.5), simd ("auto"/"portable").
// Pre-quantized weights (`loom-convert --quantize int8`): a matrix N stored as I8 [out, in] with
// its companion N.scale F32 [out] (looked up through loom_weight_info::find_tensor) holds the
// q and scale this plugin computes at load from the float weights, bit for bit, so serving the
// converted file gives the float file's logits in either mode; only SmoothQuant calibration,
// which re-quantizes from the float weights, needs the float file. An optional companion
// N.smooth F32 [in] (`loom-convert --smoothquant`) holds SmoothQuant factors s already folded
// into the stored weights (W diag(s) quantized); linear() then divides x by s in either mode,
// which is what calibrate() does in w8a8 with the same s.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "common/dequant_gemm.hpp"
#include "common/prequantized.hpp"
#include "common/quant_plugin.hpp"
#include "int8_calibrate.h"
#include "int8_format.hpp"
#include "loom/sdk.hpp"

namespace loom_int8 {
namespace {

using loom_quant::Error;
using loom_quant::LinearArgs;

class Int8Quantization {
 public:
  static constexpr const char* kName = "int8";
  struct Options {
    int simd = loom_quant::kSimdAuto;  // "simd" (quant_plugin.hpp); no AVX-512 kernels here
    bool w8a8 = false;
    float alpha = 0.5f;
  };

  static const loom::sdk::ConfigSpec<Options>& config_spec() {
    using Spec = loom::sdk::ConfigSpec<Options>;
    static const auto spec =
        Spec("quantization int8")
            .choice("mode", &Options::w8a8, {{"w8a16", false}, {"w8a8", true}},
                    "\"w8a16\": weight-only, activations stay f32; \"w8a8\": activations quantized per row too")
            .number("smoothquant_alpha", &Options::alpha, "SmoothQuant strength (w8a8 only)", 0.0, 1.0)
            .choice("simd", &Options::simd, loom_quant::simd_values(), loom_quant::kSimdHelp)
            .rule([](const Options& o, const Spec::Given& given, std::vector<std::string>& problems) {
              if (given.count("smoothquant_alpha") != 0 && !o.w8a8)
                problems.push_back("\"smoothquant_alpha\" applies to \"mode\": \"w8a8\" only (weight-only w8a16 "
                                   "keeps activations in f32)");
            });
    return spec;
  }

  Int8Quantization(const loom::sdk::Host& host, const loom_quantization_create_args& args, const Options& opt)
      : host_(host), opt_(opt), kernels_(select_kernels(opt.simd != loom_quant::kSimdPortable)) {
    loom_quant::require_cpu(args, kName);
    const auto threads = static_cast<size_t>(host_.num_threads());
    tiles_.resize(threads);
    dots_.resize(threads);
  }

  loom::sdk::Reading reads(std::string_view format, loom_dtype dtype) const {
    return loom_quant::reads_quantizing(kName, format, dtype, "int8", LOOM_DTYPE_I8);
  }

  loom::sdk::Verdict supports(loom_dtype dtype) const {
    return loom_quant::float_or(kName, dtype, LOOM_DTYPE_I8, "; i8 is, as written by loom-convert --quantize int8");
  }

  // info may be NULL (a host without weight info): then I8 weights have no scales to find.
  void* prepare_weight(const loom_tensor_view* view, const loom_weight_info* info) const {
    if (view != nullptr && view->dtype == LOOM_DTYPE_I8) return prepare_prequantized(view, info);
    return prepare(view);
  }

  void* prepare(const loom_tensor_view* view) const {
    if (view != nullptr && view->dtype == LOOM_DTYPE_I8) return prepare_prequantized(view, nullptr);
    auto w = std::make_unique<Int8Weight>();
    w->source = loom_quant::check_weight(kName, view);
    w->out = w->source.out;
    w->in = w->source.in;
    w->in_pad = (w->in + kPad - 1) / kPad * kPad;
    w->q.assign(static_cast<size_t>(w->out * w->in_pad), 0);
    w->scale.assign(static_cast<size_t>(w->out), 0.0f);
    quantize(*w, nullptr);
    return w.release();
  }

  void linear(void* handle, const loom_tensor_view* x, loom_tensor_view* y) {
    const Int8Weight& w = *static_cast<const Int8Weight*>(handle);
    const LinearArgs a = loom_quant::check_linear(kName, w.in, w.out, x, y);
    if (!opt_.w8a8) {
      if (w.inv_smooth.empty()) {
        loom_quant::dequant_linear(host_, kernels_.w8a16, w, w.in, w.out, a, tiles_);
        return;
      }
      // x diag(1/s) with the smoothed weights W diag(s): [n, in], reused from call to call.
      xs_.resize(static_cast<size_t>(a.n * w.in));
      for (int64_t t = 0; t < a.n; ++t)
        for (int64_t k = 0; k < w.in; ++k)
          xs_[static_cast<size_t>(t * w.in + k)] = a.x[t * a.xs + k] * w.inv_smooth[static_cast<size_t>(k)];
      loom_quant::dequant_linear(host_, kernels_.w8a16, w, w.in, w.out, LinearArgs{a.n, xs_.data(), w.in, a.y, a.ys},
                                 tiles_);
      return;
    }
    linear_w8a8(w, a);
  }

  static void release_weight(void* handle) { delete static_cast<Int8Weight*>(handle); }

  void calibrate(Int8Weight& w, const float* act_absmax, int64_t in) const {
    if (!opt_.w8a8) throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization int8: calibration needs \"mode\": \"w8a8\"");
    if (!loom_quant::is_float_dtype(w.source.dtype))
      throw Error(LOOM_ERR_UNSUPPORTED,
                  "quantization int8: calibration re-quantizes from float weights; this one was stored pre-quantized");
    if (act_absmax == nullptr || in != w.in)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization int8: calibrate expects " + std::to_string(w.in) +
                                                 " activation maxima, got " + std::to_string(in));
    std::vector<float> w_absmax(static_cast<size_t>(in), 0.0f), row(static_cast<size_t>(in));
    for (int64_t o = 0; o < w.out; ++o) {
      loom_quant::read_row(w.source, o, row.data());
      for (int64_t j = 0; j < in; ++j)
        w_absmax[static_cast<size_t>(j)] =
            std::max(w_absmax[static_cast<size_t>(j)], std::fabs(row[static_cast<size_t>(j)]));
    }
    std::vector<float> s(static_cast<size_t>(in));
    smoothing_factors(act_absmax, w_absmax.data(), in, opt_.alpha, s.data());
    quantize(w, s.data());
    w.inv_smooth.resize(static_cast<size_t>(in));
    for (int64_t j = 0; j < in; ++j) w.inv_smooth[static_cast<size_t>(j)] = 1.0f / s[static_cast<size_t>(j)];
  }

 private:
  // I8 [out, in] + N.scale F32 [out], as loom-convert --quantize int8 writes them.
  void* prepare_prequantized(const loom_tensor_view* view, const loom_weight_info* info) const {
    loom_quant::check_prequantized(kName, view, info, LOOM_DTYPE_I8, info != nullptr ? info->in_features : 0);
    const loom_tensor_view sv = loom_quant::find_companion(kName, info, ".scale", LOOM_DTYPE_F32, {info->out_features});
    auto w = std::make_unique<Int8Weight>();
    w->out = info->out_features;
    w->in = info->in_features;
    w->in_pad = (w->in + kPad - 1) / kPad * kPad;
    w->q.assign(static_cast<size_t>(w->out * w->in_pad), 0);
    const auto* scale = static_cast<const float*>(sv.data);
    w->scale.assign(scale, scale + w->out);
    w->source = loom_quant::StoredWeight{LOOM_DTYPE_I8, w->out, w->in, w->in, view->data};
    const loom_tensor_view smooth =
        loom_quant::find_companion(kName, info, ".smooth", LOOM_DTYPE_F32, {info->in_features}, true);
    if (smooth.data != nullptr) {
      const auto* s = static_cast<const float*>(smooth.data);
      w->inv_smooth.resize(static_cast<size_t>(w->in));
      for (int64_t k = 0; k < w->in; ++k) {
        if (!(std::isfinite(s[k]) && s[k] > 0))
          throw Error(LOOM_ERR_INVALID_ARGUMENT, std::string("quantization int8: ") + info->name + ".smooth[" +
                                                     std::to_string(k) + "] is not a finite positive factor");
        w->inv_smooth[static_cast<size_t>(k)] = 1.0f / s[k];
      }
    }
    const auto* q = static_cast<const int8_t*>(view->data);
    for (int64_t o = 0; o < w->out; ++o) {
      if (!(std::isfinite(w->scale[static_cast<size_t>(o)]) && w->scale[static_cast<size_t>(o)] >= 0))
        throw Error(LOOM_ERR_INVALID_ARGUMENT, std::string("quantization int8: ") + info->name + ".scale[" +
                                                   std::to_string(o) + "] is not a finite non-negative scale");
      for (int64_t k = 0; k < w->in; ++k) {
        // -128 is never written: the w8a8 sign trick negates weights, and -(-128) overflows.
        if (q[o * w->in + k] == -128)
          throw Error(LOOM_ERR_INVALID_ARGUMENT, std::string("quantization int8: ") + info->name + " holds -128 at [" +
                                                     std::to_string(o) + ", " + std::to_string(k) +
                                                     "]; weights are in [-127, 127]");
        w->q[static_cast<size_t>(o * w->in_pad + k)] = q[o * w->in + k];
      }
    }
    return w.release();
  }

  // Quantizes every row of w.source (times smooth, when given) into w.q / w.scale.
  void quantize(Int8Weight& w, const float* smooth) const {
    host_.parallel_for(w.out, [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(w.in));
      for (int64_t o = begin; o < end; ++o) {
        loom_quant::read_row(w.source, o, row.data());
        quantize_row(row.data(), smooth, w.in, w.q.data() + o * w.in_pad, &w.scale[static_cast<size_t>(o)]);
      }
    });
  }

  void linear_w8a8(const Int8Weight& w, const LinearArgs& a) {
    // Activations: [n, in_pad] int8 and one scale per row; reused from call to call.
    xq_.resize(static_cast<size_t>(a.n * w.in_pad));
    xscale_.resize(static_cast<size_t>(a.n));
    const float* inv_smooth = w.inv_smooth.empty() ? nullptr : w.inv_smooth.data();
    host_.parallel_for(a.n, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t)
        xscale_[static_cast<size_t>(t)] =
            quantize_activation(a.x + t * a.xs, inv_smooth, w.in, w.in_pad, xq_.data() + t * w.in_pad);
    });
    const int64_t n_tiles = (w.out + loom_quant::kTile - 1) / loom_quant::kTile;
    host_.parallel_for(n_tiles, [&](int64_t begin, int64_t end, int32_t thread) {
      if (thread < 0 || static_cast<size_t>(thread) >= dots_.size())
        throw Error(LOOM_ERR_INTERNAL, "parallel_for thread index out of range");
      std::vector<int32_t>& acc = dots_[static_cast<size_t>(thread)];  // [n, kTile]
      acc.resize(static_cast<size_t>(a.n * loom_quant::kTile));
      const int8_t* rows[loom_quant::kTile];
      for (int64_t tile = begin; tile < end; ++tile) {
        const int64_t o0 = tile * loom_quant::kTile;
        const int64_t n_rows = std::min(loom_quant::kTile, w.out - o0);
        for (int64_t j = 0; j < n_rows; ++j) rows[j] = w.q.data() + (o0 + j) * w.in_pad;
        kernels_.dot(rows, n_rows, xq_.data(), w.in_pad, a.n, w.in_pad, acc.data(), loom_quant::kTile);
        for (int64_t t = 0; t < a.n; ++t)
          for (int64_t j = 0; j < n_rows; ++j)
            a.y[t * a.ys + o0 + j] = static_cast<float>(acc[static_cast<size_t>(t * loom_quant::kTile + j)]) *
                                     (xscale_[static_cast<size_t>(t)] * w.scale[static_cast<size_t>(o0 + j)]);
      }
    });
  }

  loom::sdk::Host host_;
  Options opt_;
  Kernels kernels_;
  std::vector<std::vector<float>> tiles_;   // per thread: one dequantized tile (w8a16)
  std::vector<std::vector<int32_t>> dots_;  // per thread: [n, kTile] int32 dot products (w8a8)
  std::vector<int8_t> xq_;                  // [n, in_pad] quantized activations (w8a8)
  std::vector<float> xscale_;               // [n]
  std::vector<float> xs_;                   // [n, in] smoothed activations (w8a16 with N.smooth)
};

}  // namespace
}  // namespace loom_int8

LOOM_QUANTIZATION_PLUGIN(loom_int8::Int8Quantization, "int8", "0.1.0",
                         "INT8 weights with per-output-channel scales, quantized at load or read pre-quantized "
                         "(loom-convert); w8a16 (default) or w8a8 with SmoothQuant");

extern "C" __attribute__((visibility("default"))) void loom_quantization_int8_smoothing_factors(const float* act_absmax,
                                                                                                const float* w_absmax,
                                                                                                int64_t n, float alpha,
                                                                                                float* s) {
  loom_int8::smoothing_factors(act_absmax, w_absmax, n, alpha, s);
}

extern "C" __attribute__((visibility("default"))) loom_status loom_quantization_int8_calibrate(void* self, void* handle,
                                                                                               const float* act_absmax,
                                                                                               int64_t in_features,
                                                                                               loom_error_buf* err) {
  return loom::sdk::detail::guarded(err, [&] {
    if (self == nullptr || handle == nullptr)
      throw loom_quant::Error(LOOM_ERR_INVALID_ARGUMENT, "quantization int8: calibrate needs an instance and a weight");
    static_cast<loom_int8::Int8Quantization*>(self)->calibrate(*static_cast<loom_int8::Int8Weight*>(handle), act_absmax,
                                                               in_features);
  });
}
