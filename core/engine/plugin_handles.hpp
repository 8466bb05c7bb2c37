// Typed handles over the created plugins the engine calls every step: each wraps one
// LoadedPlugin (self + vtable) and turns its C calls into C++ calls that throw loom::Error
// naming the plugin on failure. They hold no state of their own beyond what the C ABI lacks
// (which optional members exist), and must not outlive the plugin they wrap.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/engine/engine_api.hpp"
#include "core/plugin/loaded_plugin.hpp"
#include "loom/cache.h"
#include "loom/scheduler.h"

namespace loom {

class CacheHandle {
 public:
  // num_groups: the block-table groups the cache was made with (cache interface 1.5; 1 = none).
  explicit CacheHandle(const LoadedPlugin& cache, int32_t num_groups = 1);

  const std::string& name() const { return cache_->name(); }
  // The pool the cache asked for, read once when the handle is made (cache.h: layout is called
  // once after create).
  const loom_cache_layout& layout() const { return layout_; }
  int32_t num_blocks() const { return layout_.num_blocks; }
  int32_t block_size() const { return layout_.block_size; }
  // Whether a request of max_total_tokens could ever fit the empty pool; the cache's reason
  // when not.
  bool fits(int32_t max_total_tokens, std::string& reason) const;
  // The sequence's block ids in position order: a view into the cache, valid until its next
  // mutating call (allocate, append, commit, free, fork).
  std::span<const int32_t> block_table(uint64_t request_id) const;
  // Block-table groups: how many tables each sequence holds, and one of them (a view like
  // block_table's; group 0 is block_table). Entries a windowed group released are -1.
  int32_t num_groups() const { return num_groups_; }
  std::span<const int32_t> group_block_table(uint64_t request_id, int32_t group) const;
  void free(uint64_t request_id) const;
  void commit(const loom_request_view& view) const;
  // Interface 1.1 fork and take_block_copies, checked against the vtable's struct_size.
  bool can_fork() const { return can_fork_; }
  // False (state unchanged) when the pool has no room; throws on any other refusal.
  bool fork(const loom_request_view& parent, uint64_t child_id) const;
  // The copy-on-write copies queued since the last call (owned by the cache, valid until its
  // next mutating call); empty when the cache cannot fork.
  std::span<const loom_block_copy> take_block_copies() const;
  // Fills the KV fields of `out` (blocks, prefix-cache counters).
  void read_stats(EngineStats& out) const;
  // Interface 1.3: the sequence keeps only its first num_tokens tokens' blocks. False (nothing
  // done) for an older cache, which keeps the tail blocks until the next append reuses them.
  bool trim(const loom_request_view& view, int32_t num_tokens) const;
  // Interface 1.4 (spill and restore of prefix blocks through a tier): whether the cache reports
  // its evicted blocks and the chain hashes of a request's blocks.
  bool reports_evictions() const { return reports_evictions_; }
  // The full prefix blocks evicted since the last call (the cache's memory, valid until its next
  // mutating call); empty below 1.4.
  std::span<const loom_evicted_block> take_evicted() const;
  // The chain hashes of req's usable leading full blocks into `out` (resized); empty below 1.4.
  void block_hashes(const loom_request_view& req, std::vector<uint64_t>& out) const;
  // Interface 1.6: whether the cache gives every group's chain hashes (always, with one group).
  bool gives_group_hashes() const { return gives_group_hashes_; }
  // The chain hashes group `group` registers req's usable leading full blocks under, into `out`
  // (resized): group 0's are block_hashes', another group's empty unless gives_group_hashes().
  void group_block_hashes(const loom_request_view& req, int32_t group, std::vector<uint64_t>& out) const;
  // Evicts up to max_blocks cached blocks now, reported through take_evicted; 0 below 1.4.
  int32_t evict_cached(int32_t max_blocks) const;
  // Grows req's table to hold num_computed_tokens + num_new_tokens; false (state unchanged) when
  // no block is free.
  bool append(const loom_request_view& req, int32_t num_new_tokens) const;
  // Leading tokens the pool already holds for req (match_prefix; 0 when the cache has none).
  int32_t match_prefix(const loom_request_view& req) const;

  // The cache as a scheduler may see it: the same instance, but free refuses (only the host
  // frees blocks; a scheduler proposes preemptions). Valid while this handle lives.
  loom_cache_handle for_scheduler() const { return {cache_->self(), &scheduler_vtable_}; }
  // The cache with free, for an interface 1.0 scheduler (it frees its victims itself).
  loom_cache_handle for_scheduler_1_0() const { return {cache_->self(), vtable_}; }

 private:
  const LoadedPlugin* cache_;
  const loom_cache_vtable* vtable_;
  loom_cache_layout layout_{};
  loom_cache_vtable scheduler_vtable_;
  bool can_fork_ = false;
  bool can_trim_ = false;
  bool reports_evictions_ = false;
  bool gives_group_hashes_ = false;
  int32_t num_groups_ = 1;
};

class SchedulerHandle {
 public:
  explicit SchedulerHandle(const LoadedPlugin& scheduler);

  const std::string& name() const { return scheduler_->name(); }
  // Interface 1.1 or newer: preempts through the host (ctx.preempt) and gives rejection reasons.
  // A 1.0 plugin frees its victims' blocks itself and lists them in out.preempted.
  bool proposes_preemptions() const { return minor_ >= 1; }
  void add(const loom_request_view& view) const;
  void remove(uint64_t request_id) const;
  void schedule(const loom_sched_context& ctx, loom_sched_output& out) const;
  loom_sched_stats stats() const;
  // Fills the queue fields of `out` (waiting, running, preemptions).
  void read_stats(EngineStats& out) const;

 private:
  const LoadedPlugin* scheduler_;
  uint32_t minor_;
};

}  // namespace loom
