/* Quantization plugins: weight formats and the linear (GEMM/GEMV) kernels on them. */
#ifndef LOOM_QUANTIZATION_H
#define LOOM_QUANTIZATION_H

#include "loom/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_QUANTIZATION_IFACE_MAJOR 1
#define LOOM_QUANTIZATION_IFACE_MINOR 0

typedef struct loom_quantization_create_args {
  uint32_t struct_size;
  loom_device device;
} loom_quantization_create_args;

typedef struct loom_quantization_vtable {
  uint32_t struct_size;
  /* Sets *ok to 1 when this plugin can consume stored weights of `dtype`, else 0 (and says why). */
  loom_status (*supports)(void* self, loom_dtype dtype, int32_t* ok, loom_error_buf* err);
  /* Turns a stored weight into the plugin's own form, once, at load.
   *   weight: [out_features, in_features] in its stored dtype; its memory (often the mmap'ed
   *           model file) outlives the handle, so a plugin may keep pointing into it.
   * *handle is opaque to the host and released with release_weight. */
  loom_status (*prepare_weight)(void* self, const loom_tensor_view* weight, void** handle,
                                loom_error_buf* err);
  /* y = x @ W^T.
   *   x: [n_tokens, in_features] f32, row stride strides[0]
   *   y: [n_tokens, out_features] f32, row stride strides[0] (written, not accumulated) */
  loom_status (*linear)(void* self, void* handle, const loom_tensor_view* x, loom_tensor_view* y,
                        loom_error_buf* err);
  /* Frees what prepare_weight made. */
  void (*release_weight)(void* self, void* handle);
} loom_quantization_vtable;

#ifdef __cplusplus
}
#endif

#endif /* LOOM_QUANTIZATION_H */
