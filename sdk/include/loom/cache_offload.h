/* Cache-offload plugins: a second tier (host RAM, SSD) for KV blocks: swap-out on preemption,
 * spill of evicted prefix blocks and their restore. Block contents move through copy functions
 * the host provides, so the plugin never touches the device pool directly.
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
#define LOOM_CACHE_OFFLOAD_IFACE_MINOR 0

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
} loom_cache_offload_create_args;

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
} loom_cache_offload_vtable;

#ifdef __cplusplus
}
#endif

#endif /* LOOM_CACHE_OFFLOAD_H */
