// quantization "faults": a real quantization plugin (`inner`, e.g. libloom-quantization-none.so)
// with one injected fault (fault_plan.hpp). `linear` is the call that runs every step (each
// projection of each layer, then the output head); "bad_value" there lets the inner plugin
// compute, then writes NaN over the first row of y: the batch's first token, one request's.
// No linear_group: the host calls linear for each weight of a group (the same bits).
#include <limits>

#include "fault_plan.hpp"
#include "loom/quantization.h"
#include "loom/sdk.hpp"

namespace {

using loom::fault::Fault;

class FaultyQuantization : public loom::fault::Wrapper<loom_quantization_vtable, loom_quantization_create_args,
                                                        LOOM_KIND_QUANTIZATION> {
 public:
  using Wrapper::Wrapper;

  loom_status supports(loom_dtype dtype, int32_t* ok) {
    if (plan_.at("supports") == Fault::kError) return LOOM_ERR_INTERNAL;
    inner_.call(vt().supports, dtype, ok);
    return LOOM_OK;
  }
  loom::sdk::Reading reads(std::string_view format, loom_dtype dtype) const {
    if (vt().reads == nullptr) return loom::sdk::Reading::cannot("the inner plugin predates interface 1.3");
    const std::string text(format);
    int32_t how = LOOM_QUANT_CANNOT_READ;
    loom::sdk::ErrorBuffer err;
    loom::sdk::check(vt().reads(inner_.self(), text.c_str(), dtype, &how, err.buf()), err, "reads");
    return {static_cast<loom_quant_reading>(how), how == LOOM_QUANT_CANNOT_READ ? std::string(err.str()) : ""};
  }
  loom_status prepare_weight(const loom_tensor_view* weight, void** handle) {
    if (plan_.at("prepare_weight") == Fault::kError) return LOOM_ERR_INTERNAL;
    inner_.call(vt().prepare_weight, weight, handle);
    return LOOM_OK;
  }
  loom_status prepare_weight_info(const loom_tensor_view* weight, const loom_weight_info* info, void** handle) {
    if (plan_.at("prepare_weight") == Fault::kError) return LOOM_ERR_INTERNAL;
    if (vt().prepare_weight_info != nullptr)
      inner_.call(vt().prepare_weight_info, weight, info, handle);
    else
      inner_.call(vt().prepare_weight, weight, handle);
    return LOOM_OK;
  }
  loom_status linear(void* handle, const loom_tensor_view* x, loom_tensor_view* y) {
    const Fault f = plan_.at("linear");
    if (f == Fault::kError) return LOOM_ERR_INTERNAL;
    inner_.call(vt().linear, handle, x, y);
    if (f == Fault::kBadValue) {
      // y: [n_tokens, out_features] f32; row 0 is the batch's first token.
      float* row = static_cast<float*>(y->data);
      for (int64_t i = 0; i < y->shape[1]; ++i) row[i] = std::numeric_limits<float>::quiet_NaN();
    }
    return LOOM_OK;
  }
  void release_weight(void* handle) { vt().release_weight(inner_.self(), handle); }
};

}  // namespace

LOOM_QUANTIZATION_PLUGIN(FaultyQuantization, "faults", "0.1.0", "a quantization plugin that fails on a chosen call (tests)");
