#include "core/engine/offload_tier.hpp"

#include <chrono>

#include "loom/sdk_core.hpp"

namespace loom {
namespace {

// Copy latencies of one block: from a memcpy (microseconds) to a slow disk (a second).
std::vector<double> copy_buckets() {
  return {0.00001, 0.00003, 0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

OffloadTier::OffloadTier(const LoadedPlugin& plugin, int64_t bytes_per_block)
    : plugin_(&plugin),
      bytes_per_block_(bytes_per_block),
      has_save_entry_(sdk::present(plugin.vtable<loom_cache_offload_vtable>(), &loom_cache_offload_vtable::save_entry)),
      save_seconds_(copy_buckets()),
      load_seconds_(copy_buckets()) {}

loom_status OffloadTier::save(const loom_offload_entry& entry, int32_t block_id, std::string* message) {
  const auto start = std::chrono::steady_clock::now();
  const loom_status status =
      has_save_entry_ ? plugin_->try_call(message, &loom_cache_offload_vtable::save_entry, &entry, block_id)
                      : plugin_->try_call(message, &loom_cache_offload_vtable::save, entry.key, block_id);
  if (status == LOOM_OK) {
    save_seconds_.observe(seconds_since(start));
    blocks_in_.fetch_add(1, std::memory_order_relaxed);
  }
  return status;
}

loom_status OffloadTier::load(uint64_t key, int32_t block_id, std::string* message) {
  const auto start = std::chrono::steady_clock::now();
  const loom_status status = plugin_->try_call(message, &loom_cache_offload_vtable::load, key, block_id);
  if (status == LOOM_OK) {
    load_seconds_.observe(seconds_since(start));
    hits_.fetch_add(1, std::memory_order_relaxed);
    blocks_out_.fetch_add(1, std::memory_order_relaxed);
  } else {
    misses_.fetch_add(1, std::memory_order_relaxed);
  }
  return status;
}

bool OffloadTier::contains(uint64_t key) const {
  int32_t present = 0;
  std::string message;
  if (plugin_->try_call(&message, &loom_cache_offload_vtable::contains, key, &present) != LOOM_OK) return false;
  return present != 0;
}

TierStats OffloadTier::stats() const {
  TierStats s;
  s.name = name();
  s.hits = hits_.load(std::memory_order_relaxed);
  s.misses = misses_.load(std::memory_order_relaxed);
  s.blocks_in = blocks_in_.load(std::memory_order_relaxed);
  s.blocks_out = blocks_out_.load(std::memory_order_relaxed);
  s.bytes_in = s.blocks_in * bytes_per_block_;
  s.bytes_out = s.blocks_out * bytes_per_block_;
  loom_cache_offload_usage usage{};
  usage.struct_size = sizeof(usage);
  std::string message;
  if (plugin_->try_call(&message, &loom_cache_offload_vtable::usage, &usage) == LOOM_OK) {
    s.capacity_bytes = usage.capacity_bytes;
    s.used_bytes = usage.used_bytes;
    s.entries = usage.num_entries;
  }
  s.save_seconds = save_seconds_.snapshot();
  s.load_seconds = load_seconds_.snapshot();
  return s;
}

}  // namespace loom
