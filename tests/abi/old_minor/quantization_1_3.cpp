// A quantization plugin of interface 1.3: its vtable ends at reads (1.4 added linear_experts, the
// grouped expert GEMMs of a mixture-of-experts layer). It keeps f32 weights as they are, computes
// y = x W^T plainly, and claims f32 in plain files.
#include <vector>

#include "fixture.hpp"
#include "loom/types.h"

namespace {

struct QuantizationCreateArgs13 {  // loom_quantization_create_args at 1.3
  uint32_t struct_size;
  loom_device device;
};

struct QuantizationVtable13 {  // loom_quantization_vtable at 1.3
  uint32_t struct_size;
  loom_status (*supports)(void* self, loom_dtype dtype, int32_t* ok, loom_error_buf* err);
  loom_status (*prepare_weight)(void* self, const loom_tensor_view* weight, void** handle, loom_error_buf* err);
  loom_status (*linear)(void* self, void* handle, const loom_tensor_view* x, loom_tensor_view* y,
                        loom_error_buf* err);
  void (*release_weight)(void* self, void* handle);
  loom_status (*prepare_weight_info)(void* self, const loom_tensor_view* weight, const void* info, void** handle,
                                     loom_error_buf* err);
  loom_status (*linear_group)(void* self, void* const* handles, int32_t count, const loom_tensor_view* x,
                              loom_tensor_view* y, loom_error_buf* err);
  loom_status (*reads)(void* self, const char* format, loom_dtype dtype, int32_t* reading, loom_error_buf* err);
};

loom_status supports(void*, loom_dtype dtype, int32_t* ok, loom_error_buf* err) {
  *ok = dtype == LOOM_DTYPE_F32 ? 1 : 0;
  if (*ok == 0) loom_fixture::say(err, "old_minor reads f32 only");
  return LOOM_OK;
}

loom_status prepare_weight(void*, const loom_tensor_view* w, void** handle, loom_error_buf*) {
  *handle = const_cast<loom_tensor_view*>(new loom_tensor_view(*w));
  return LOOM_OK;
}

loom_status prepare_weight_info(void* self, const loom_tensor_view* w, const void*, void** handle,
                                loom_error_buf* err) {
  return prepare_weight(self, w, handle, err);
}

loom_status linear(void*, void* handle, const loom_tensor_view* x, loom_tensor_view* y, loom_error_buf*) {
  const auto& w = *static_cast<const loom_tensor_view*>(handle);  // [out, in]
  const auto* wd = static_cast<const float*>(w.data);
  const auto* xd = static_cast<const float*>(x->data);
  auto* yd = static_cast<float*>(y->data);
  for (int64_t t = 0; t < x->shape[0]; ++t) {
    for (int64_t o = 0; o < w.shape[0]; ++o) {
      float s = 0;
      for (int64_t k = 0; k < w.shape[1]; ++k) s += xd[t * x->strides[0] + k] * wd[o * w.strides[0] + k];
      yd[t * y->strides[0] + o] = s;
    }
  }
  return LOOM_OK;
}

loom_status linear_group(void* self, void* const* handles, int32_t count, const loom_tensor_view* x,
                         loom_tensor_view* y, loom_error_buf* err) {
  for (int32_t i = 0; i < count; ++i) {
    const loom_status s = linear(self, handles[i], x, &y[i], err);
    if (s != LOOM_OK) return s;
  }
  return LOOM_OK;
}

// 2 = LOOM_QUANT_READS_AS_STORED, 0 = LOOM_QUANT_CANNOT_READ (the values of 1.3's enum).
loom_status reads(void*, const char* format, loom_dtype dtype, int32_t* reading, loom_error_buf* err) {
  const bool plain = format == nullptr || format[0] == '\0';
  *reading = plain && dtype == LOOM_DTYPE_F32 ? 2 : 0;
  if (*reading == 0) loom_fixture::say(err, "old_minor reads f32 in plain files only");
  return LOOM_OK;
}

void release_weight(void*, void* handle) { delete static_cast<loom_tensor_view*>(handle); }

const loom_fixture::Guarded<QuantizationVtable13> kTable = {
    {sizeof(QuantizationVtable13), &supports, &prepare_weight, &linear, &release_weight, &prepare_weight_info,
     &linear_group, &reads},
    reinterpret_cast<const void*>(&linear)};

struct Stateless {};

LOOM_FIXTURE_CREATE(QuantizationCreateArgs13, Stateless, &kTable.vtable);

}  // namespace

LOOM_FIXTURE_PLUGIN(LOOM_KIND_QUANTIZATION, "old_minor", create, loom_fixture::destroy<Stateless>);
