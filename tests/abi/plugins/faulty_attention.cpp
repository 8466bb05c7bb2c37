// attention "faults": a real attention plugin (`inner`, e.g. libloom-attention-naive.so) with one
// injected fault (fault_plan.hpp) in `forward`, called once per layer and step. "bad_value" lets
// the inner plugin compute, then writes NaN over the output rows of the batch's first sequence
// only: one request's numbers go bad, every other row stays exact.
// Only forward is offered (no forward_rope_k, no window): the host rotates K itself.
#include <limits>

#include "fault_plan.hpp"
#include "loom/attention.h"
#include "loom/sdk.hpp"

namespace {

using loom::fault::Fault;

class FaultyAttention
    : public loom::fault::Wrapper<loom_attention_vtable, loom_attention_create_args, LOOM_KIND_ATTENTION> {
 public:
  using Wrapper::Wrapper;

  loom_status forward(const loom_attention_batch* batch, const loom_tensor_view* q, const loom_tensor_view* k,
                      const loom_tensor_view* v, loom_tensor_view* k_cache, loom_tensor_view* v_cache,
                      loom_tensor_view* out) {
    const Fault f = plan_.at("forward");
    if (f == Fault::kError) return LOOM_ERR_INTERNAL;
    inner_.call(vt().forward, batch, q, k, v, k_cache, v_cache, out);
    if (f == Fault::kBadValue && batch->num_seqs > 0) {
      // out: [num_tokens, n_heads, head_dim] f32; the first sequence's tokens are rows
      // [query_start[0], query_start[1]).
      const int64_t row = out->shape[1] * out->shape[2];
      float* data = static_cast<float*>(out->data);
      for (int64_t i = batch->query_start[0] * row; i < batch->query_start[1] * row; ++i)
        data[i] = std::numeric_limits<float>::quiet_NaN();
    }
    return LOOM_OK;
  }
};

}  // namespace

LOOM_ATTENTION_PLUGIN(FaultyAttention, "faults", "0.1.0", "an attention plugin that fails on a chosen call (tests)");
