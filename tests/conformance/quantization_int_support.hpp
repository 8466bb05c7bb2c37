// Shared by the int8/int4/fp8 conformance files: tensor views, one plugin instance driven
// through its C ABI, and the dequantized weights the linked-in format code gives (the reference
// a kernel must reproduce to rounding).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "core/plugin/plugin_host.hpp"
#include "common/quant_plugin.hpp"
#include "loom/quantization.h"

namespace loom::qint {

inline loom_tensor_view mat(const void* data, loom_dtype dtype, int64_t rows, int64_t cols) {
  return loom_quant::matrix_view(data, dtype, rows, cols, cols);
}

// One quantization plugin instance (name + JSON config) on the CPU.
class Quant {
 public:
  Quant(const PluginHost& host, const std::string& name, const std::string& config) {
    loom_quantization_create_args a{};
    a.struct_size = sizeof(a);
    a.device = loom_device{LOOM_DEVICE_CPU, 0};
    p_ = host.create(PluginSpec{LOOM_KIND_QUANTIZATION, name, "", config}, &a);
  }
  ~Quant() {
    for (void* h : handles_) p_->vtable<loom_quantization_vtable>().release_weight(p_->self(), h);
  }
  Quant(const Quant&) = delete;
  Quant& operator=(const Quant&) = delete;

  // Prepares W [out, in] stored as dtype; released with the instance.
  void* prepare(const void* w, loom_dtype dtype, int64_t out, int64_t in) {
    const loom_tensor_view wv = mat(w, dtype, out, in);
    void* h = nullptr;
    p_->call("prepare_weight", &loom_quantization_vtable::prepare_weight, &wv, &h);
    handles_.push_back(h);
    return h;
  }
  // y [n, out] = x [n, in] W^T.
  std::vector<float> linear(void* h, const float* x, int64_t n, int64_t in, int64_t out) {
    std::vector<float> y(static_cast<size_t>(n * out), -12345.0f);
    const loom_tensor_view xv = mat(x, LOOM_DTYPE_F32, n, in);
    loom_tensor_view yv = mat(y.data(), LOOM_DTYPE_F32, n, out);
    p_->call("linear", &loom_quantization_vtable::linear, h, &xv, &yv);
    return y;
  }
  void* self() const { return p_->self(); }

 private:
  std::unique_ptr<LoadedPlugin> p_;
  std::vector<void*> handles_;
};

// The dequantized weights [out, in] that `plugin` with `config` makes of the f32 weights w,
// computed by the format code compiled into the test (defined in conformance_quantization_int_formats.cpp).
std::vector<float> dequantized(const std::string& plugin, const std::string& config, const std::vector<float>& w,
                               int64_t out, int64_t in);

// Largest |w - dequant(w)| the format allows for element k of row o (an exact bound, not a
// statistic): half a step of its scale grid, or a step where asymmetric rounding stacks.
std::vector<float> error_bounds(const std::string& plugin, const std::string& config, const std::vector<float>& w,
                                int64_t out, int64_t in);

}  // namespace loom::qint
