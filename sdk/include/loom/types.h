/* Small value types shared by every plugin kind: tensors, devices, requests, batches, blocks. */
#ifndef LOOM_TYPES_H
#define LOOM_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types. Values 0..39 follow GGUF's ggml_type numbering so a file's tensor type maps
 * straight across; Loom-only types start at 1000. */
typedef enum loom_dtype {
  LOOM_DTYPE_F32 = 0,
  LOOM_DTYPE_F16 = 1,
  LOOM_DTYPE_Q4_0 = 2,
  LOOM_DTYPE_Q4_1 = 3,
  LOOM_DTYPE_Q5_0 = 6,
  LOOM_DTYPE_Q5_1 = 7,
  LOOM_DTYPE_Q8_0 = 8,
  LOOM_DTYPE_Q8_1 = 9,
  LOOM_DTYPE_Q2_K = 10,
  LOOM_DTYPE_Q3_K = 11,
  LOOM_DTYPE_Q4_K = 12,
  LOOM_DTYPE_Q5_K = 13,
  LOOM_DTYPE_Q6_K = 14,
  LOOM_DTYPE_Q8_K = 15,
  LOOM_DTYPE_IQ4_NL = 20,
  LOOM_DTYPE_IQ4_XS = 23,
  LOOM_DTYPE_I8 = 24,
  LOOM_DTYPE_I16 = 25,
  LOOM_DTYPE_I32 = 26,
  LOOM_DTYPE_I64 = 27,
  LOOM_DTYPE_F64 = 28,
  LOOM_DTYPE_BF16 = 30,
  LOOM_DTYPE_U8 = 1000,
  LOOM_DTYPE_FP8_E4M3 = 1001,
  LOOM_DTYPE_INVALID = -1
} loom_dtype;

typedef enum loom_device_type {
  LOOM_DEVICE_CPU = 0,
  LOOM_DEVICE_CUDA = 1
} loom_device_type;

typedef struct loom_device {
  loom_device_type type;
  int32_t index; /* CUDA ordinal; 0 for the CPU */
} loom_device;

#define LOOM_MAX_DIMS 4

/* A non-owning view of a dense tensor. shape[0] is the outermost dimension; strides are in
 * elements (for block-quantized dtypes the innermost dimension is counted in elements and the
 * row stride in elements too, rows being whole blocks). Unused dims have shape 1. */
typedef struct loom_tensor_view {
  void* data;
  loom_dtype dtype;
  int32_t ndim;
  int64_t shape[LOOM_MAX_DIMS];
  int64_t strides[LOOM_MAX_DIMS];
  loom_device device;
} loom_tensor_view;

/* A list of KV block ids; the memory belongs to whoever produced it and is valid until that
 * party's next mutating call. */
typedef struct loom_block_list {
  const int32_t* ids;
  int32_t count;
} loom_block_list;

/* What a scheduler or cache may know of one request. Token counts follow the "schedule tokens,
 * not phases" rule: a request has num_tokens (prompt + generated so far) and num_computed_tokens
 * (how many of them have K/V in the cache); a step closes part of the gap. */
typedef struct loom_request_view {
  uint32_t struct_size;
  uint64_t request_id;
  const int32_t* token_ids;     /* [num_tokens] prompt then generated tokens */
  int32_t num_tokens;
  int32_t num_prompt_tokens;
  int32_t num_computed_tokens;
  int32_t max_total_tokens;     /* prompt + max new tokens: the most this request can ever hold */
  int32_t priority;             /* larger = more urgent; 0 by default */
  int64_t arrival_time_us;      /* steady-clock microseconds at arrival */
  uint64_t cache_salt;          /* per-tenant isolation key for prefix sharing (0 = none) */
  /* --- scheduler interface 1.2: present when struct_size covers them (a host fills an older
   * plugin's shorter view only up to cache_salt) --- */
  int32_t ttft_target_ms;       /* time-to-first-token target, from arrival; 0 = none */
  int32_t tpot_target_ms;       /* time-per-output-token target; 0 = none */
  uint64_t tenant_id;           /* fair-share key (hash of the fairness id or user); 0 = none */
} loom_request_view;

/* The flat, unpadded batch of one step as attention sees it.
 * Region map over the token axis:
 *   [query_start[0], query_start[1])  -> tokens of sequence 0, ...
 * A sequence's tokens are its next query_start[i+1]-query_start[i] tokens, at positions
 * seq_lens[i]-n .. seq_lens[i]-1 (causal: token at position p attends to positions 0..p). */
typedef struct loom_attention_batch {
  uint32_t struct_size;
  int32_t num_seqs;
  int32_t num_tokens;
  const int32_t* query_start;   /* [num_seqs + 1] */
  const int32_t* seq_lens;      /* [num_seqs] context length after this step */
  const int32_t* positions;     /* [num_tokens] */
  const int32_t* slot_mapping;  /* [num_tokens] slot = block_id * block_size + offset to write K/V */
  const int32_t* block_tables;  /* [num_seqs, max_blocks_per_seq] row-major; unused entries -1 */
  int32_t max_blocks_per_seq;
  int32_t block_size;
} loom_attention_batch;

#ifdef __cplusplus
}
#endif

#endif /* LOOM_TYPES_H */
