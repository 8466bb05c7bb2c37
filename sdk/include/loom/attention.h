/* Attention plugins: attention math over the paged KV pool for a flat varlen batch. *
 * Threads and lifetimes. The host creates, calls and destroys an instance from one thread at a
 * time (start-up, then the engine thread), never concurrently, so an instance needs no lock of its
 * own; work it spreads with loom_host_api::parallel_for runs on the host's pool threads and is
 * done when parallel_for returns. Pointers passed into a call (views, batches, requests, output
 * structs, the error buffer) are valid for that call only; the loom_host_api, the create args and
 * their pointers until destroy().
 * The KV pool views (k_cache, v_cache) point into memory the core owns; the plugin writes this
 * step's K/V into them and keeps no pointer to them after forward returns. */
#ifndef LOOM_ATTENTION_H
#define LOOM_ATTENTION_H

#include "loom/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_ATTENTION_IFACE_MAJOR 1
#define LOOM_ATTENTION_IFACE_MINOR 2

/* Engine-wide facts an attention plugin is created with. */
typedef struct loom_attention_create_args {
  uint32_t struct_size;
  int32_t n_heads;        /* query heads */
  int32_t n_kv_heads;     /* K/V heads; n_heads % n_kv_heads == 0 (GQA/MQA when smaller) */
  int32_t head_dim;
  float scale;            /* softmax scale, usually 1/sqrt(head_dim) */
  loom_dtype kv_dtype;    /* element type of the KV pool */
  int32_t block_size;     /* tokens per KV block */
  loom_device device;
} loom_attention_create_args;

/* Rotary position embedding of one model (minor 1): pair i of each head's first rope_dim values is
 * rotated by the angle pos * inv_freq[i]; cos and sin are computed in double and scaled by
 * attention_factor before rounding to float (loom/sdk_rope.hpp has the reference code). */
typedef struct loom_rope {
  uint32_t struct_size;
  int32_t rope_dim;           /* rotated values per head: even, <= head_dim */
  int32_t neox;               /* 1: pairs (i, i + rope_dim/2), rotate_half; 0: adjacent (2i, 2i+1) */
  const double* inv_freq;     /* [rope_dim / 2], any scaling already applied */
  double attention_factor;    /* 1 unless the scaling says otherwise (yarn) */
} loom_rope;

typedef struct loom_attention_vtable {
  uint32_t struct_size;
  /* Writes this step's new K/V into the pool at batch->slot_mapping, then computes causal
   * attention of every query token over its sequence's context (positions 0..its own).
   *   q:       [num_tokens, n_heads, head_dim]     (RoPE already applied)
   *   k, v:    [num_tokens, n_kv_heads, head_dim]  new keys/values of this step
   *   k_cache, v_cache: [num_blocks, block_size, n_kv_heads, head_dim] this layer's pool
   *   out:     [num_tokens, n_heads, head_dim] */
  loom_status (*forward)(void* self, const loom_attention_batch* batch, const loom_tensor_view* q,
                         const loom_tensor_view* k, const loom_tensor_view* v,
                         loom_tensor_view* k_cache, loom_tensor_view* v_cache, loom_tensor_view* out,
                         loom_error_buf* err);
  /* Optional (minor 1; NULL or beyond struct_size when absent): forward, with k WITHOUT RoPE. The
   * plugin rotates each new K row by `rope` at its token's position as it writes the row to the
   * pool, saving the host a pass over k. The pool and out must be bit for bit what rotating k with
   * loom/sdk_rope.hpp and calling forward gives. q still arrives rotated. */
  loom_status (*forward_rope_k)(void* self, const loom_attention_batch* batch, const loom_rope* rope,
                                const loom_tensor_view* q, const loom_tensor_view* k, const loom_tensor_view* v,
                                loom_tensor_view* k_cache, loom_tensor_view* v_cache, loom_tensor_view* out,
                                loom_error_buf* err);
  /* Optional (minor 2): sliding-window attention, which a plugin declares by offering it. A query
   * token at position p attends to the keys at positions max(0, p - window + 1) .. p only (the
   * window counts the token itself, as Mistral's and Gemma's sliding_window do); window <= 0 means
   * no window (forward's full causal context). Blocks of the table wholly before every query's
   * window are never read, so the host may have released them (block table entry -1).
   * rope NULL: k arrives rotated, as for forward; rope not NULL: as forward_rope_k, which a plugin
   * offering both must then honour here too. A host runs a model with windowed layers (Gemma's
   * local layers) only on a plugin that offers this, and refuses the others naming the reason. */
  loom_status (*forward_window)(void* self, const loom_attention_batch* batch, int32_t window, const loom_rope* rope,
                                const loom_tensor_view* q, const loom_tensor_view* k, const loom_tensor_view* v,
                                loom_tensor_view* k_cache, loom_tensor_view* v_cache, loom_tensor_view* out,
                                loom_error_buf* err);
} loom_attention_vtable;

#ifdef __cplusplus
}
#endif

#endif /* LOOM_ATTENTION_H */
