// quantization/int4: group-wise INT4 weights (int4_format.hpp), quantized at load from f32, f16
// or bf16 storage; y = x W^T with the weights dequantized in registers for a few input rows, into
// an L2 tile for many (../common/dequant_gemm.hpp): batch-invariant bit for bit.
// Keys: group_size (32, 64 or 128; default 128), zero_point (true: asymmetric with per-group zero
// points as AWQ/GPTQ, the default; false: symmetric), simd ("auto"/"portable").
#include <boost/dll/alias.hpp>
#include <memory>
#include <string>
#include <vector>

#include "../common/dequant_gemm.hpp"
#include "../common/quant_plugin.hpp"
#include "int4_format.hpp"

namespace loom_int4 {
namespace {

class Int4Quantization {
 public:
  static constexpr const char* kName = "int4";
  struct Options {
    bool simd = true;
    int64_t group = 128;
    bool zero_point = true;
  };

  static Options parse(const char* config_json) {
    Options o;
    loom_quant::parse_config(kName, config_json, [&](const std::string& key, const nlohmann::json& v, auto&& problem) {
      if (key == "simd") {
        o.simd = loom_quant::read_simd(v, o.simd, problem);
      } else if (key == "group_size") {
        if (v.is_number_integer() && (v == 32 || v == 64 || v == 128)) {
          o.group = v.get<int64_t>();
        } else {
          problem("\"group_size\" must be 32, 64 or 128, got " + v.dump());
        }
      } else if (key == "zero_point") {
        if (v.is_boolean()) {
          o.zero_point = v.get<bool>();
        } else {
          problem("\"zero_point\" must be true or false, got " + v.dump());
        }
      } else {
        problem("unknown key \"" + key + "\" (valid keys: group_size, zero_point, simd)");
      }
    });
    return o;
  }

  Int4Quantization(const loom_host_api* host, const Options& opt)
      : host_(host), opt_(opt), kernels_(select_kernels(opt.simd)) {
    tiles_.resize(static_cast<size_t>(host_.num_threads()));
  }

  void* prepare(const loom_tensor_view* view) const {
    const loom_quant::StoredWeight src = loom_quant::check_weight(kName, view);
    auto w = std::make_unique<Int4Weight>();
    w->out = src.out;
    w->in = src.in;
    w->group = opt_.group;
    w->shift = opt_.group == 32 ? 5 : opt_.group == 64 ? 6 : 7;
    w->words_per_row = (src.in + 7) / 8;
    w->n_groups = (src.in + opt_.group - 1) / opt_.group;
    w->packed.assign(static_cast<size_t>(w->out * w->words_per_row), 0);
    w->scale.assign(static_cast<size_t>(w->out * w->n_groups), 0.0f);
    w->zero.assign(static_cast<size_t>(w->out * w->n_groups), 0);
    Int4Weight& dst = *w;
    host_.parallel_for(src.out, [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(src.in));
      for (int64_t o = begin; o < end; ++o) {
        loom_quant::read_row(src, o, row.data());
        quantize_row(row.data(), opt_.zero_point, dst, o);
      }
    });
    return w.release();
  }

  void linear(void* handle, const loom_tensor_view* x, loom_tensor_view* y) {
    const Int4Weight& w = *static_cast<const Int4Weight*>(handle);
    const loom_quant::LinearArgs a = loom_quant::check_linear(kName, w.in, w.out, x, y);
    loom_quant::dequant_linear(host_, kernels_, w, w.in, w.out, a, tiles_);
  }

  static void release(void* handle) { delete static_cast<Int4Weight*>(handle); }

 private:
  loom::sdk::Host host_;
  Options opt_;
  loom_quant::DequantKernels<Int4Weight> kernels_;
  std::vector<std::vector<float>> tiles_;  // per thread: one dequantized tile
};

using Abi = loom_quant::PluginAbi<Int4Quantization>;

const loom_plugin_desc kDesc = {
    sizeof(loom_plugin_desc),
    LOOM_ABI_VERSION,
    LOOM_KIND_QUANTIZATION,
    LOOM_QUANTIZATION_IFACE_MAJOR,
    LOOM_QUANTIZATION_IFACE_MINOR,
    "int4",
    "0.1.0",
    "group-wise INT4 weights (group 32/64/128, optional zero points, GPTQ nibble order), quantized at load",
    nullptr,
    &Abi::validate,
    &Abi::create,
    &Abi::destroy};

}  // namespace
}  // namespace loom_int4

const loom_plugin_desc* loom_quantization_int4_entry() { return &loom_int4::kDesc; }
BOOST_DLL_ALIAS(loom_quantization_int4_entry, loom_plugin_entry_v1)
