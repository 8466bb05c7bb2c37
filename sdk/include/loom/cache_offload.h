/* Cache-offload plugins: a second tier (host RAM, SSD) for KV blocks: swap-out on preemption,
 * spill of evicted prefix blocks and their restore. Block contents move through copy functions
 * the host provides, so the plugin never touches the device pool directly. A block id passed to
 * save/load names host-visible KV memory of one block: a pool block, or one of the host's
 * staging buffers (ids past the pool) through which its copy thread spills and restores.
 * Interface 1.1 grows the create args (model fingerprint and KV layout, for tiers that persist
 * blocks) and the vtable (save_entry: save with the block's provenance). 1.0 plugins still load.
 *
 * Threads and lifetimes. Calls may come from the engine thread and from a host copy thread at the
 * same time: an instance serialises them itself (e.g. one mutex). The host calls destroy() once,
 * after every other call has returned. loom_kv_copy_ops (and its host_ctx) in the create args is
 * valid until destroy(); the plugin calls read_block/write_block only from inside save/load. The
 * error buffer and out-structs are valid for one call. */
#ifndef LOOM_CACHE_OFFLOAD_H
#define LOOM_CACHE_OFFLOAD_H

#include "loom/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_CACHE_OFFLOAD_IFACE_MAJOR 1
#define LOOM_CACHE_OFFLOAD_IFACE_MINOR 1

/* Copies between one pool block (all layers, K and V) and plain host memory of bytes_per_block. */
typedef struct loom_kv_copy_ops {
  uint32_t struct_size;
  void* host_ctx;
  int64_t bytes_per_block;
  loom_status (*read_block)(void* host_ctx, int32_t block_id, void* dst, loom_error_buf* err);
  loom_status (*write_block)(void* host_ctx, int32_t block_id, const void* src, loom_error_buf* err);
} loom_kv_copy_ops;

typedef struct loom_cache_offload_create_args {
  uint32_t struct_size;
  loom_kv_copy_ops copy;  /* valid until destroy */
  /* ---- 1.1 (present when struct_size covers them) ---- */
  /* Names the model and KV layout whose blocks this tier holds: a block written under another
   * fingerprint must never be loaded (a tier that persists blocks stores it beside each one).
   * NUL-terminated, valid until destroy. */
  const char* model_fingerprint;
  loom_dtype kv_dtype;
  int32_t n_layers;  /* layers one block holds: the model's, or one block-table group's (cache 1.5) */
  int32_t n_kv_heads;
  int32_t head_dim;
  int32_t block_size;  /* tokens per block */
} loom_cache_offload_create_args;

/* 1.1: where a saved block came from: its key, the chained hash of the prefix it ends, the
 * chain's cache_salt and the tokens it holds. */
typedef struct loom_offload_entry {
  uint32_t struct_size;
  uint64_t key;
  uint64_t prefix_hash;  /* 0 for swap entries, which are not prefix blocks */
  uint64_t salt;
  int32_t num_tokens;
} loom_offload_entry;

typedef struct loom_cache_offload_usage {
  uint32_t struct_size;
  int64_t capacity_bytes;
  int64_t used_bytes;
  int64_t num_entries;
} loom_cache_offload_usage;

typedef struct loom_cache_offload_vtable {
  uint32_t struct_size;
  /* Copies pool block `block_id` into the tier under `key` (replacing any entry of that key). */
  loom_status (*save)(void* self, uint64_t key, int32_t block_id, loom_error_buf* err);
  /* Copies the entry `key` back into pool block `block_id`. LOOM_ERR_NOT_FOUND when absent. */
  loom_status (*load)(void* self, uint64_t key, int32_t block_id, loom_error_buf* err);
  /* Sets *present to 1 when `key` is stored. */
  loom_status (*contains)(void* self, uint64_t key, int32_t* present, loom_error_buf* err);
  /* Drops the entry `key`; absent keys are not an error. */
  loom_status (*drop)(void* self, uint64_t key, loom_error_buf* err);
  /* Capacity and use of the tier. */
  loom_status (*usage)(void* self, loom_cache_offload_usage* out, loom_error_buf* err);
  /* ---- 1.1 (the host reads it only when struct_size covers it) ---- */
  /* (optional) save() with the entry's provenance, which a persisting tier records; NULL means
   * the host calls save(entry->key, block_id). */
  loom_status (*save_entry)(void* self, const loom_offload_entry* entry, int32_t block_id, loom_error_buf* err);
} loom_cache_offload_vtable;

#ifdef __cplusplus
}
#endif

#endif /* LOOM_CACHE_OFFLOAD_H */
