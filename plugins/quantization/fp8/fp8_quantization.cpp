// quantization/fp8: E4M3 weights with per-output-channel scales (fp8_format.hpp), quantized at
// load from f32, f16 or bf16 storage; y = x (scale * W8)^T with E4M3 converted in registers for
// a few input rows, into an L2 tile for many (../common/dequant_gemm.hpp): batch-invariant bit
// for bit. Keys: simd ("auto"/"portable"). (The CUDA path comes with the CUDA work.)
#include <boost/dll/alias.hpp>
#include <memory>
#include <string>
#include <vector>

#include "../common/dequant_gemm.hpp"
#include "../common/quant_plugin.hpp"
#include "fp8_format.hpp"

namespace loom_fp8 {
namespace {

class Fp8Quantization {
 public:
  static constexpr const char* kName = "fp8";
  struct Options {
    bool simd = true;
  };

  static Options parse(const char* config_json) {
    Options o;
    loom_quant::parse_config(kName, config_json, [&](const std::string& key, const nlohmann::json& v, auto&& problem) {
      if (key == "simd") {
        o.simd = loom_quant::read_simd(v, o.simd, problem);
      } else {
        problem("unknown key \"" + key + "\" (valid keys: simd)");
      }
    });
    return o;
  }

  Fp8Quantization(const loom_host_api* host, const Options& opt) : host_(host), kernels_(select_kernels(opt.simd)) {
    tiles_.resize(static_cast<size_t>(host_.num_threads()));
  }

  void* prepare(const loom_tensor_view* view) const {
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

  static void release(void* handle) { delete static_cast<Fp8Weight*>(handle); }

 private:
  loom::sdk::Host host_;
  loom_quant::DequantKernels<Fp8Weight> kernels_;
  std::vector<std::vector<float>> tiles_;  // per thread: one dequantized tile
};

using Abi = loom_quant::PluginAbi<Fp8Quantization>;

const loom_plugin_desc kDesc = {
    sizeof(loom_plugin_desc),
    LOOM_ABI_VERSION,
    LOOM_KIND_QUANTIZATION,
    LOOM_QUANTIZATION_IFACE_MAJOR,
    LOOM_QUANTIZATION_IFACE_MINOR,
    "fp8",
    "0.1.0",
    "FP8 E4M3 weights with per-output-channel scales, quantized at load; converted in registers (AVX2)",
    nullptr,
    &Abi::validate,
    &Abi::create,
    &Abi::destroy};

}  // namespace
}  // namespace loom_fp8

const loom_plugin_desc* loom_quantization_fp8_entry() { return &loom_fp8::kDesc; }
BOOST_DLL_ALIAS(loom_quantization_fp8_entry, loom_plugin_entry_v1)
