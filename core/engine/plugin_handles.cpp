#include "core/engine/plugin_handles.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "core/common/error.hpp"
#include "loom/sdk_core.hpp"

namespace loom {
namespace {

loom_status refuse_free(void*, uint64_t request_id, loom_error_buf* err) {
  if (err != nullptr && err->data != nullptr && err->capacity > 0) {
    std::snprintf(err->data, err->capacity,
                  "schedulers never free blocks (request %llu): propose a preemption through ctx->preempt",
                  static_cast<unsigned long long>(request_id));
  }
  return LOOM_ERR_UNSUPPORTED;
}

}  // namespace

CacheHandle::CacheHandle(const LoadedPlugin& cache, int32_t num_groups)
    : cache_(&cache), vtable_(&cache.vtable<loom_cache_vtable>()), scheduler_vtable_{}, num_groups_(num_groups) {
  LOOM_CHECK(num_groups == 1 || sdk::present(*vtable_, &loom_cache_vtable::group_block_table),
             "plugin cache '" + cache.name() + "' was made with " + std::to_string(num_groups) +
                 " block-table groups but has no group_block_table (cache interface 1.5)");
  // Reading fork/take_block_copies past a 1.0 plugin's shorter vtable would be out of bounds.
  const loom_cache_vtable& vt = *vtable_;
  can_fork_ = sdk::present(vt, &loom_cache_vtable::fork) && sdk::present(vt, &loom_cache_vtable::take_block_copies);
  reports_evictions_ = sdk::present(vt, &loom_cache_vtable::take_evicted) &&
                       sdk::present(vt, &loom_cache_vtable::block_hashes);
  gives_group_hashes_ =
      reports_evictions_ && (num_groups == 1 || sdk::present(vt, &loom_cache_vtable::group_block_hashes));
  // A copy of only what the plugin's vtable holds (its struct_size stays), with free refused.
  std::memcpy(&scheduler_vtable_, &vt, std::min<size_t>(vt.struct_size, sizeof(scheduler_vtable_)));
  scheduler_vtable_.free = &refuse_free;
  // Trimming (1.3) is the host's rollback of rejected drafts, never a scheduler's.
  if (sdk::present(vt, &loom_cache_vtable::trim)) scheduler_vtable_.trim = nullptr;
  can_trim_ = sdk::present(vt, &loom_cache_vtable::trim);
  layout_.struct_size = sizeof(layout_);
  cache_->call("layout", &loom_cache_vtable::layout, &layout_);
}

bool CacheHandle::trim(const loom_request_view& view, int32_t num_tokens) const {
  if (!can_trim_) return false;
  cache_->call("trim", &loom_cache_vtable::trim, &view, num_tokens);
  return true;
}


bool CacheHandle::fits(int32_t max_total_tokens, std::string& reason) const {
  sdk::Verdict verdict = cache_->ask("fits", &loom_cache_vtable::fits, max_total_tokens);
  if (!verdict.ok) reason = std::move(verdict.reason);
  return verdict.ok;
}

std::span<const int32_t> CacheHandle::block_table(uint64_t request_id) const {
  loom_block_list blocks{};
  cache_->call("block_table", &loom_cache_vtable::block_table, request_id, &blocks);
  return {blocks.ids, static_cast<size_t>(blocks.count)};
}

std::span<const int32_t> CacheHandle::group_block_table(uint64_t request_id, int32_t group) const {
  if (num_groups_ == 1) return block_table(request_id);
  loom_block_list blocks{};
  cache_->call("group_block_table", &loom_cache_vtable::group_block_table, request_id, group, &blocks);
  return {blocks.ids, static_cast<size_t>(blocks.count)};
}

void CacheHandle::free(uint64_t request_id) const { cache_->call("free", &loom_cache_vtable::free, request_id); }

void CacheHandle::commit(const loom_request_view& view) const {
  if (vtable_->commit != nullptr) cache_->call("commit", &loom_cache_vtable::commit, &view);
}

bool CacheHandle::fork(const loom_request_view& parent, uint64_t child_id) const {
  std::string message;
  const loom_status status = cache_->try_call(&message, &loom_cache_vtable::fork, &parent, child_id);
  if (status == LOOM_OK) return true;
  if (status == LOOM_ERR_OUT_OF_MEMORY) return false;
  throw Error("plugin cache '" + name() + "': fork: " + message, status);
}

std::span<const loom_block_copy> CacheHandle::take_block_copies() const {
  if (!can_fork_) return {};
  loom_block_copy_list copies{};
  cache_->call("take_block_copies", &loom_cache_vtable::take_block_copies, &copies);
  return {copies.items, static_cast<size_t>(copies.count)};
}

std::span<const loom_evicted_block> CacheHandle::take_evicted() const {
  if (!reports_evictions_) return {};
  loom_evicted_block_list list{};
  cache_->call("take_evicted", &loom_cache_vtable::take_evicted, &list);
  return {list.items, static_cast<size_t>(std::max(list.count, 0))};
}

void CacheHandle::block_hashes(const loom_request_view& req, std::vector<uint64_t>& out) const {
  out.clear();
  if (!reports_evictions_ || req.num_tokens <= 1) return;
  out.resize(static_cast<size_t>(req.num_tokens));  // more than any block size can fill
  int32_t count = 0;
  cache_->call("block_hashes", &loom_cache_vtable::block_hashes, &req, out.data(),
               static_cast<int32_t>(out.size()), &count);
  out.resize(static_cast<size_t>(std::clamp(count, 0, req.num_tokens)));
}

void CacheHandle::group_block_hashes(const loom_request_view& req, int32_t group, std::vector<uint64_t>& out) const {
  LOOM_CHECK(group >= 0 && group < num_groups_, "group_block_hashes: group " + std::to_string(group) +
                                                    " of a cache with " + std::to_string(num_groups_) + " groups");
  if (group == 0) return block_hashes(req, out);
  out.clear();
  if (!gives_group_hashes_ || req.num_tokens <= 1) return;
  out.resize(static_cast<size_t>(req.num_tokens));  // more than any block size can fill
  int32_t count = 0;
  cache_->call("group_block_hashes", &loom_cache_vtable::group_block_hashes, &req, group, out.data(),
               static_cast<int32_t>(out.size()), &count);
  out.resize(static_cast<size_t>(std::clamp(count, 0, req.num_tokens)));
}

int32_t CacheHandle::evict_cached(int32_t max_blocks) const {
  if (!reports_evictions_ || !sdk::present(*vtable_, &loom_cache_vtable::evict_cached)) return 0;
  int32_t n = 0;
  cache_->call("evict_cached", &loom_cache_vtable::evict_cached, max_blocks, &n);
  return n;
}

bool CacheHandle::append(const loom_request_view& req, int32_t num_new_tokens) const {
  std::string message;
  const loom_status status = cache_->try_call(&message, &loom_cache_vtable::append, &req, num_new_tokens);
  if (status == LOOM_OK) return true;
  if (status == LOOM_ERR_OUT_OF_MEMORY) return false;
  throw Error("plugin cache '" + name() + "': append: " + message, status);
}

int32_t CacheHandle::match_prefix(const loom_request_view& req) const {
  if (vtable_->match_prefix == nullptr) return 0;
  int32_t n = 0;
  cache_->call("match_prefix", &loom_cache_vtable::match_prefix, &req, &n);
  return n;
}

void CacheHandle::read_stats(EngineStats& out) const {
  loom_cache_usage usage{};
  usage.struct_size = sizeof(usage);
  cache_->call("usage", &loom_cache_vtable::usage, &usage);
  out.kv_total_blocks = usage.total_blocks;
  out.kv_used_blocks = usage.used_blocks;
  out.kv_free_blocks = usage.free_blocks;
  out.kv_num_seqs = usage.num_seqs;
  out.kv_cached_blocks = usage.cached_blocks;
  out.prefix_cache_queries = usage.prefix_query_tokens;
  out.prefix_cache_hits = usage.prefix_hit_tokens;
  out.prefix_cache_miss_partial_block = usage.prefix_miss_partial_block_tokens;
  out.prefix_cache_miss_no_match = usage.prefix_miss_no_match_tokens;
  out.prefix_cache_miss_evicted = usage.prefix_miss_evicted_tokens;
  out.prefix_cache_miss_salt_mismatch = usage.prefix_miss_salt_mismatch_tokens;
}

SchedulerHandle::SchedulerHandle(const LoadedPlugin& scheduler)
    : scheduler_(&scheduler), minor_(scheduler.desc().iface_minor) {
  (void)scheduler.vtable<loom_scheduler_vtable>();  // throws unless it is a scheduler
}

void SchedulerHandle::add(const loom_request_view& view) const {
  scheduler_->call("add_request", &loom_scheduler_vtable::add_request, &view);
}

void SchedulerHandle::remove(uint64_t request_id) const {
  scheduler_->call("remove_request", &loom_scheduler_vtable::remove_request, request_id);
}

void SchedulerHandle::schedule(const loom_sched_context& ctx, loom_sched_output& out) const {
  scheduler_->call("schedule", &loom_scheduler_vtable::schedule, &ctx, &out);
}

loom_sched_stats SchedulerHandle::stats() const {
  loom_sched_stats stats{};
  stats.struct_size = sizeof(stats);
  scheduler_->call("stats", &loom_scheduler_vtable::stats, &stats);
  return stats;
}

void SchedulerHandle::read_stats(EngineStats& out) const {
  const loom_sched_stats s = stats();
  out.num_waiting = s.num_waiting;
  out.num_running = s.num_running;
  out.num_preemptions = s.num_preemptions;
}

}  // namespace loom
