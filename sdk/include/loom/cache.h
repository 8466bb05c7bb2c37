/* KV-cache plugins: the logical side of the KV pool (block ids, tables, refcounts, prefix reuse,
 * eviction). The core owns the physical pool; it asks the plugin how many blocks of which size
 * it wants, allocates them, and passes block ids around. The interface is query-then-commit:
 * match_prefix -> can_allocate -> allocate -> append -> free.
 * Interface 1.1 adds fork/take_block_copies (sequences sharing blocks, copy-on-write) and the
 * prefix-cache miss counters; 1.2 adds the create args' bytes_per_block_extra; 1.3 adds trim
 * (speculative decoding's rollback of rejected draft tokens); 1.4 adds take_evicted, block_hashes
 * and evict_cached (the host spills evicted prefix blocks to a cache_offload tier and restores
 * them); 1.5 adds block-table groups (create args' n_groups/group_windows, group_block_table): a
 * hybrid sliding-window model's local layers keep only their window's blocks; 1.6 adds
 * group_block_hashes (a cache_offload tier restores the prefix blocks of every group). Older
 * plugins' shorter vtables and usage structs still load. *
 * Threads and lifetimes. The host creates, calls and destroys an instance from one thread at a
 * time (start-up, then the engine thread), never concurrently, so an instance needs no lock of its
 * own; work it spreads with loom_host_api::parallel_for runs on the host's pool threads and is
 * done when parallel_for returns. Pointers passed into a call (views, batches, requests, output
 * structs, the error buffer) are valid for that call only; the loom_host_api, the create args and
 * their pointers until destroy().
 * The scheduler plugin calls the cache too, through the loom_cache_handle the host passes into
 * schedule(): on the engine thread, inside that call. Block lists and copy lists a cache returns
 * are its own memory, valid until its next mutating call (allocate, append, commit, free, fork,
 * take_block_copies, trim). */
#ifndef LOOM_CACHE_H
#define LOOM_CACHE_H

#include "loom/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_CACHE_IFACE_MAJOR 1
#define LOOM_CACHE_IFACE_MINOR 6

typedef struct loom_cache_create_args {
  uint32_t struct_size;
  int32_t n_layers;
  int32_t n_kv_heads;
  int32_t head_dim;
  loom_dtype kv_dtype;
  int64_t bytes_per_token;  /* K and V of one token over all layers, in bytes */
  int32_t max_model_len;    /* longest sequence the model accepts */
  /* 1.2: bytes of a block beyond block_size * bytes_per_token, over all layers, K and V: the
   * per-block per-head scales of an int8/fp8_e4m3 pool (0 for f32/f16/bf16). Sizing from
   * kv_memory counts them. (It first shipped inside 1.1; 1.2 makes that growth a version of its
   * own, so a 1.1 plugin never expects it.) */
  int64_t bytes_per_block_extra;
  /* 1.5: block-table groups, for models whose layers differ in how much context they attend to
   * (Gemma 3: five sliding-window layers per full-attention one). Each sequence holds n_groups
   * tables drawn from the one pool; a block of group g holds K/V of that group's layers only, so
   * bytes_per_token and bytes_per_block_extra above count one group's layers, not the model's.
   * group_windows[g] is group g's sliding window in tokens (0 = full attention): a query at
   * position p reads keys from p - window + 1 on, so when room is made for tokens from position
   * s = num_computed_tokens, the group's blocks wholly before s - window + 1 are never read again
   * and the cache releases them (their table entries become -1). Only a plugin that offers
   * group_block_table takes n_groups > 1: any other answers create with LOOM_ERR_UNSUPPORTED (the
   * SDK does so for it) and the host makes it again with one group (n_groups 0 or 1: one table
   * holding every layer, as before 1.5; with 1, group_windows[0] may still name a window). A
   * plugin reads these two only when struct_size covers them. */
  int32_t n_groups;
  const int32_t* group_windows;  /* [n_groups], valid until destroy() */
} loom_cache_create_args;

/* The pool the plugin asks the core to allocate. */
typedef struct loom_cache_layout {
  uint32_t struct_size;
  int32_t num_blocks;
  int32_t block_size;  /* tokens per block */
} loom_cache_layout;

typedef struct loom_cache_usage {
  uint32_t struct_size;
  int32_t total_blocks;
  int32_t free_blocks;    /* neither referenced nor holding reusable prefix content */
  int32_t used_blocks;    /* referenced by at least one live sequence */
  int32_t cached_blocks;  /* unreferenced but kept for prefix reuse (evictable) */
  int32_t num_seqs;       /* live sequences holding blocks */
  int64_t prefix_hit_tokens;    /* cumulative tokens served from the prefix cache */
  int64_t prefix_query_tokens;  /* cumulative tokens looked up */
  /* 1.1: the looked-up tokens that were not hits, by why (cumulative). Each lookup gives all of
   * its missed tokens to one reason, so hit + the four misses == query tokens:
   *   partial_block  - what was left after the hits is shorter than one full block (nothing
   *                    more could ever be cached: the prefix is shorter than a block)
   *   no_match       - the first missed full block was never cached under this salt
   *   evicted        - the first missed full block was cached once and has been evicted
   *   salt_mismatch  - the first missed full block is cached, but under another cache_salt
   * A plugin writes these only when out->struct_size covers them. */
  int64_t prefix_miss_partial_block_tokens;
  int64_t prefix_miss_no_match_tokens;
  int64_t prefix_miss_evicted_tokens;
  int64_t prefix_miss_salt_mismatch_tokens;
} loom_cache_usage;

/* 1.1: one block whose contents the host must copy (all layers, K and V) before the next
 * forward pass writes into dst. */
typedef struct loom_block_copy {
  int32_t src;
  int32_t dst;
} loom_block_copy;

/* Owned by the plugin, valid until its next mutating call. */
typedef struct loom_block_copy_list {
  const loom_block_copy* items;
  int32_t count;
} loom_block_copy_list;

/* 1.3: a full, committed prefix block the cache evicted (its registration dropped to reuse the
 * block). Its K/V are still in the pool: nothing writes the block before the next forward pass,
 * and the host copies it out before then (spill to a cache_offload tier). */
typedef struct loom_evicted_block {
  int32_t block_id;
  int32_t num_tokens;  /* tokens the block held: the block size */
  uint64_t hash;       /* the chained hash it was registered under (the same block_hashes gives) */
  uint64_t salt;       /* the cache_salt of the chain */
} loom_evicted_block;

/* Owned by the plugin, valid until its next mutating call. */
typedef struct loom_evicted_block_list {
  const loom_evicted_block* items;
  int32_t count;
} loom_evicted_block_list;

typedef struct loom_cache_vtable {
  uint32_t struct_size;
  /* The pool to allocate: number and size of blocks. Called once after create. */
  loom_status (*layout)(void* self, loom_cache_layout* out, loom_error_buf* err);
  /* Sets *ok = 1 when a request of max_total_tokens could ever fit in an empty pool, else 0 and
   * the reason in err. Used to refuse at admission what can never run. */
  loom_status (*fits)(void* self, int32_t max_total_tokens, int32_t* ok, loom_error_buf* err);
  /* (optional) Sets *num_cached_tokens to how many leading tokens of req already have K/V in
   * the cache (a multiple of the block size, or a forked sequence's length); no state changes.
   * NULL means 0. */
  loom_status (*match_prefix)(void* self, const loom_request_view* req, int32_t* num_cached_tokens,
                              loom_error_buf* err);
  /* Sets *ok = 1 when the cache can give req room for num_new_tokens more tokens (beyond
   * req->num_computed_tokens) right now, without changing state. */
  loom_status (*can_allocate)(void* self, const loom_request_view* req, int32_t num_new_tokens,
                              int32_t* ok, loom_error_buf* err);
  /* Starts a sequence for req with room for num_new_tokens tokens; reuses any prefix match and
   * sets *num_cached_tokens to the tokens whose K/V it already holds. */
  loom_status (*allocate)(void* self, const loom_request_view* req, int32_t num_new_tokens,
                          int32_t* num_cached_tokens, loom_error_buf* err);
  /* Grows an allocated sequence so it holds req->num_computed_tokens + num_new_tokens tokens.
   * LOOM_ERR_OUT_OF_MEMORY when no block is free (state unchanged). */
  loom_status (*append)(void* self, const loom_request_view* req, int32_t num_new_tokens,
                        loom_error_buf* err);
  /* (optional) Tells the cache that K/V of req's first num_computed_tokens tokens are written, so
   * full blocks may be registered for prefix reuse. */
  loom_status (*commit)(void* self, const loom_request_view* req, loom_error_buf* err);
  /* Releases the sequence's blocks (finish, abort or preemption). Unknown ids are not an error. */
  loom_status (*free)(void* self, uint64_t request_id, loom_error_buf* err);
  /* The block table of a sequence, valid until the next mutating call. */
  loom_status (*block_table)(void* self, uint64_t request_id, loom_block_list* out,
                             loom_error_buf* err);
  /* Current block accounting. */
  loom_status (*usage)(void* self, loom_cache_usage* out, loom_error_buf* err);

  /* ---- 1.1 (the host reads these only when struct_size covers them; NULL = unsupported) ---- */
  /* Makes child_id a new sequence that holds the same blocks as parent's first
   * parent->num_computed_tokens tokens (every shared block's refcount goes up by one), for n > 1
   * and beam-like sampling. The child is then added to the scheduler like any new request, and
   * its match_prefix / allocate report those tokens as cached (not block-aligned: the shared
   * partial last block counts too). Neither sequence writes into a block the other still holds:
   * append/allocate give the writer a fresh block and queue a copy (take_block_copies).
   * LOOM_ERR_OUT_OF_MEMORY leaves state unchanged; free(child_id) undoes a fork. */
  loom_status (*fork)(void* self, const loom_request_view* parent, uint64_t child_id, loom_error_buf* err);
  /* Hands over the copy-on-write copies queued since the last call (and forgets them). The host
   * performs them, in order, before the next forward pass. */
  loom_status (*take_block_copies)(void* self, loom_block_copy_list* out, loom_error_buf* err);

  /* ---- 1.3 (read only when struct_size covers it; NULL = the host keeps the blocks) ---- */
  /* Shrinks req's sequence to hold its first num_tokens tokens: the blocks wholly past them are
   * released (refcount - 1), the table keeps ceil(num_tokens / block_size) blocks. The host calls
   * it after speculative decoding rejected draft tokens whose K/V was written past num_tokens
   * (never below what was committed: rejected tokens were never committed, so no block holding
   * a registered prefix is released). Growing back is an ordinary append. */
  loom_status (*trim)(void* self, const loom_request_view* req, int32_t num_tokens, loom_error_buf* err);

  /* ---- 1.4 (the host reads these only when struct_size covers them; NULL = unsupported) ---- */
  /* Hands over the full, committed prefix blocks evicted since the last call (and forgets them),
   * in eviction order. A cache keeps at most num_blocks of them (the oldest go first); the host
   * calls it once per step, before any copy-on-write copy or forward pass writes the pool. */
  loom_status (*take_evicted)(void* self, loom_evicted_block_list* out, loom_error_buf* err);
  /* Writes the chained hashes of req's leading full blocks -- at most those that leave its last
   * token to compute, at most `capacity` -- the keys the cache would register them under, into
   * out[0, *count). No state changes. */
  loom_status (*block_hashes)(void* self, const loom_request_view* req, uint64_t* out, int32_t capacity,
                              int32_t* count, loom_error_buf* err);
  /* Evicts up to max_blocks unreferenced cached blocks now, least recently used first, and
   * reports them through take_evicted; *count = how many. The host calls it at shutdown to spill
   * the pool's prefix blocks to a persistent tier. */
  loom_status (*evict_cached)(void* self, int32_t max_blocks, int32_t* count, loom_error_buf* err);

  /* ---- 1.5 (read only when struct_size covers it; NULL = one table per sequence) ---- */
  /* The table of one group (0 <= group < n_groups) of a sequence, valid until the next mutating
   * call; group 0's is what block_table gives. Entries a windowed group released are -1, and
   * only ever precede the window of the sequence's next token. Every other member acts on all of
   * a sequence's groups at once: can_allocate and append count the blocks every group needs (less
   * those its windows release), fork shares them all, trim and free release them all, and prefix
   * caching matches a prefix only as far as every group holds what it reads (a windowed group: the
   * blocks the window of the first token computed after the hit reaches). */
  loom_status (*group_block_table)(void* self, uint64_t request_id, int32_t group, loom_block_list* out,
                                   loom_error_buf* err);

  /* ---- 1.6 (read only when struct_size covers it; NULL = the host restores no spilled prefix
   * block of a cache with n_groups > 1: it would not know the other groups' keys) ---- */
  /* block_hashes for one group (0 <= group < n_groups): the chained hashes group `group` would
   * register req's leading full blocks under (the same blocks block_hashes covers, at most
   * `capacity`), into out[0, *count). Group 0's are block_hashes'; take_evicted reports an evicted
   * block of group g under its group-g hash. No state changes. */
  loom_status (*group_block_hashes)(void* self, const loom_request_view* req, int32_t group, uint64_t* out,
                                    int32_t capacity, int32_t* count, loom_error_buf* err);
} loom_cache_vtable;

#ifdef __cplusplus
}
#endif

#endif /* LOOM_CACHE_H */
