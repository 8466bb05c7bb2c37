/* Quantization plugins: weight formats and the linear (GEMM/GEMV) kernels on them. *
 * Threads and lifetimes. The host creates, calls and destroys an instance from one thread at a
 * time (start-up, then the engine thread), never concurrently, so an instance needs no lock of its
 * own; work it spreads with loom_host_api::parallel_for runs on the host's pool threads and is
 * done when parallel_for returns. Pointers passed into a call (views, batches, requests, output
 * structs, the error buffer) are valid for that call only; the loom_host_api, the create args and
 * their pointers until destroy().
 * prepare_weight runs at start-up (model load); a weight's memory (often the mmap'ed model file)
 * outlives every handle made from it, so a handle may point into it. A handle lives until
 * release_weight, which the host calls before destroy(). */
#ifndef LOOM_QUANTIZATION_H
#define LOOM_QUANTIZATION_H

#include "loom/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_QUANTIZATION_IFACE_MAJOR 1
#define LOOM_QUANTIZATION_IFACE_MINOR 5

typedef struct loom_quantization_create_args {
  uint32_t struct_size;
  loom_device device;
} loom_quantization_create_args;

/* What a weight matrix is for. Plugins may treat roles differently: GPTQ/AWQ-style INT4, for
 * one, leaves the output head at higher precision because its error reaches the logits directly. */
typedef enum loom_weight_role {
  LOOM_WEIGHT_OTHER = 0,
  LOOM_WEIGHT_ATTN_Q = 1,
  LOOM_WEIGHT_ATTN_K = 2,
  LOOM_WEIGHT_ATTN_V = 3,
  LOOM_WEIGHT_ATTN_OUTPUT = 4,
  LOOM_WEIGHT_FFN_GATE = 5,
  LOOM_WEIGHT_FFN_UP = 6,
  LOOM_WEIGHT_FFN_DOWN = 7,
  LOOM_WEIGHT_OUTPUT = 8, /* the classifier head (output.weight, or token_embd.weight when tied) */
  /* Minor 4: a mixture-of-experts router, [n_experts, dim] (ffn_gate_inp), or the [1, dim] gate of
   * a shared expert (ffn_gate_inp_shexp). Its outputs pick experts, a discrete choice, so a plugin
   * that trades precision for speed may keep it as stored. Expert matrices keep FFN_GATE/UP/DOWN. */
  LOOM_WEIGHT_FFN_ROUTER = 9
} loom_weight_role;

/* What the host knows of a weight beyond its bytes (minor version 1). */
typedef struct loom_weight_info {
  uint32_t struct_size;
  const char* name;        /* the model file's tensor name, e.g. "blk.3.attn_q.weight" */
  int32_t role;            /* loom_weight_role */
  int32_t layer;           /* block index; -1 outside the blocks */
  int64_t out_features;    /* logical shape of W; equals the view's shape for float and GGUF */
  int64_t in_features;     /* block formats, differs for packed storage (e.g. int4 in I32 words) */
  /* Looks up another tensor of the model file by its full name (e.g. the "<name>.scale" written
   * beside a pre-quantized weight). Returns 1 and fills *out (Loom order: [rows, cols], contiguous
   * rows) when it exists, else 0. The views live as long as the model file; NULL when the model
   * source cannot look tensors up. */
  int32_t (*find_tensor)(void* ctx, const char* name, loom_tensor_view* out);
  void* find_ctx;
  /* Minor 4 (read it only when struct_size covers it): the expert this matrix is, for one slice
   * [out, in] of a layer's experts tensor (name is then the whole tensor's, e.g.
   * "blk.3.ffn_up_exps.weight"); -1 for a dense weight. */
  int32_t expert;
} loom_weight_info;

/* How a plugin reads a stored weight type (minor 3's `reads`); "auto" prefers the higher. */
typedef enum loom_quant_reading {
  LOOM_QUANT_CANNOT_READ = 0,     /* refused; the reason goes to the error buffer */
  LOOM_QUANT_CONVERTS = 1,        /* read, then converted at load: the values change (quantized) */
  LOOM_QUANT_READS_AS_STORED = 2, /* the stored values, on a general (untuned) path */
  LOOM_QUANT_NATIVE = 3           /* the plugin's own format: the stored values on its tuned kernels */
} loom_quant_reading;

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
  /* Minor 1, optional (present when struct_size covers it and non-NULL): prepare_weight with the
   * weight's name, role and companions. A host that has the info calls this instead. */
  loom_status (*prepare_weight_info)(void* self, const loom_tensor_view* weight, const loom_weight_info* info,
                                     void** handle, loom_error_buf* err);
  /* Minor 2, optional: linears that read the same x, such as a layer's Q, K and V projections or
   * its gate and up projections: y[i] = x @ W_i^T for i < count, W_i = handles[i], all of the
   * same in_features.
   *   x: [n_tokens, in_features] f32, as for linear
   *   y: count views, y[i] [n_tokens, out_features of W_i] f32
   * The plugin prepares x once for the group (packs it, or quantizes it per token) and spreads
   * the work of every W_i over its threads in one pass. Each y[i] gets exactly the bits linear
   * would write to it. A host without this entry calls linear count times. */
  loom_status (*linear_group)(void* self, void* const* handles, int32_t count, const loom_tensor_view* x,
                              loom_tensor_view* y, loom_error_buf* err);
  /* Minor 3, optional: how this plugin reads stored weights of `dtype` in a model file whose
   * `loom.quantization.format` (the layout loom-convert --quantize wrote, e.g. "int8") is
   * `format`; "" for a file without one (a plain GGUF or safetensors model). Sets *reading to a
   * loom_quant_reading and, for LOOM_QUANT_CANNOT_READ, writes the reason to err (returning
   * LOOM_OK, as capability checks do). The host asks every quantization plugin about every weight
   * type of the file before loading any weight: to choose one for `plugin = "auto"`, and to refuse
   * an explicit choice that cannot read a tensor, naming the plugins that could. A plugin without
   * this entry is taken to convert what supports() accepts in a file without a format and to read
   * nothing in a file with one. */
  loom_status (*reads)(void* self, const char* format, loom_dtype dtype, int32_t* reading, loom_error_buf* err);
  /* Minor 4, optional: the expert GEMMs of a mixture-of-experts layer in one call, one pass over
   * each active expert's weight per step. The host groups the routed rows by expert: rows
   * [offsets[e], offsets[e + 1]) of x go through W_e = handles[e], for e < count; every W_e has
   * the same out_features and in_features, and an expert without rows is not read.
   *   offsets: count + 1 non-decreasing row indices, offsets[0] = 0
   *   x: [offsets[count], in_features] f32, as for linear
   *   y: [offsets[count], out_features] f32, row stride strides[0] (written, not accumulated)
   * Each row of y gets exactly the bits linear(W_e) would write for it, so a token's result does
   * not depend on which other tokens were routed with it. A host without this entry calls linear
   * once for each expert that has rows. */
  loom_status (*linear_experts)(void* self, void* const* handles, int32_t count, const int32_t* offsets,
                                const loom_tensor_view* x, loom_tensor_view* y, loom_error_buf* err);
  /* Minor 5, optional: a classifier head's selection for rows that sample from their largest
   * outputs alone (greedy, or top-k without logprobs), without handing every output back. For each
   * row t < n_tokens of x, the k largest outputs of y[t] = x[t] @ W^T, best first:
   *   x:      [n_tokens, in_features] f32, as for linear
   *   ids:    [n_tokens, k] output indices (written)
   *   values: [n_tokens, k] f32 (written)
   * values[t * k + i] holds exactly the bits linear would write to y[t][ids[t * k + i]], and the
   * order is the one loom::sdk::select_top_k (sdk_top_k.hpp) gives on linear's row: larger value
   * first, the lower index first among equal values, NaN below every number. 1 <= k <=
   * out_features. A plugin may find them without computing every output exactly, by screening
   * every output at lower precision under a rigorous error bound and computing the candidates
   * that bound cannot rule out exactly: the answer must be the selection from linear's row, bit
   * for bit. A host without this entry calls linear and selects. */
  loom_status (*linear_top_k)(void* self, void* handle, const loom_tensor_view* x, int32_t k, int32_t* ids,
                              float* values, loom_error_buf* err);
} loom_quantization_vtable;

#ifdef __cplusplus
}
#endif

#endif /* LOOM_QUANTIZATION_H */
