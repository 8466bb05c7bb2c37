// An attention plugin of interface 1.1: its vtable ends at forward_rope_k (1.2 added
// forward_window, sliding-window attention). forward writes out = 2 * q, forward_rope_k
// out = 3 * q; neither touches the pool, so a test can see which call ran.
#include "fixture.hpp"
#include "loom/types.h"

namespace {

struct AttentionCreateArgs11 {  // loom_attention_create_args at 1.1 (unchanged since 1.0)
  uint32_t struct_size;
  int32_t n_heads, n_kv_heads, head_dim;
  float scale;
  loom_dtype kv_dtype;
  int32_t block_size;
  loom_device device;
};

struct Rope11 {  // loom_rope at 1.1
  uint32_t struct_size;
  int32_t rope_dim, neox;
  const double* inv_freq;
  double attention_factor;
};

struct AttentionVtable11 {  // loom_attention_vtable at 1.1
  uint32_t struct_size;
  loom_status (*forward)(void* self, const loom_attention_batch* batch, const loom_tensor_view* q,
                         const loom_tensor_view* k, const loom_tensor_view* v, loom_tensor_view* k_cache,
                         loom_tensor_view* v_cache, loom_tensor_view* out, loom_error_buf* err);
  loom_status (*forward_rope_k)(void* self, const loom_attention_batch* batch, const Rope11* rope,
                                const loom_tensor_view* q, const loom_tensor_view* k, const loom_tensor_view* v,
                                loom_tensor_view* k_cache, loom_tensor_view* v_cache, loom_tensor_view* out,
                                loom_error_buf* err);
};

loom_status scaled(float factor, const loom_attention_batch* batch, const loom_tensor_view* q, loom_tensor_view* out,
                   loom_error_buf* err) {
  if (batch == nullptr || q == nullptr || out == nullptr) {
    loom_fixture::say(err, "null argument");
    return LOOM_ERR_INVALID_ARGUMENT;
  }
  const int64_t n = q->shape[0] * q->shape[1] * q->shape[2];
  for (int64_t i = 0; i < n; ++i) static_cast<float*>(out->data)[i] = factor * static_cast<const float*>(q->data)[i];
  return LOOM_OK;
}

loom_status forward(void*, const loom_attention_batch* batch, const loom_tensor_view* q, const loom_tensor_view*,
                    const loom_tensor_view*, loom_tensor_view*, loom_tensor_view*, loom_tensor_view* out,
                    loom_error_buf* err) {
  return scaled(2.0f, batch, q, out, err);
}

loom_status forward_rope_k(void*, const loom_attention_batch* batch, const Rope11*, const loom_tensor_view* q,
                           const loom_tensor_view*, const loom_tensor_view*, loom_tensor_view*, loom_tensor_view*,
                           loom_tensor_view* out, loom_error_buf* err) {
  return scaled(3.0f, batch, q, out, err);
}

const loom_fixture::Guarded<AttentionVtable11> kTable = {{sizeof(AttentionVtable11), &forward, &forward_rope_k},
                                                        reinterpret_cast<const void*>(&forward)};

struct Stateless {};

LOOM_FIXTURE_CREATE(AttentionCreateArgs11, Stateless, &kTable.vtable);

}  // namespace

LOOM_FIXTURE_PLUGIN(LOOM_KIND_ATTENTION, "old_minor", create, loom_fixture::destroy<Stateless>);
