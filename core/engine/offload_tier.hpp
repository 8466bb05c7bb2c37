// One cache_offload tier as the host drives it for prefix spill and restore: the plugin's calls
// (save_entry for 1.1 plugins, else save) with per-tier counters and copy-latency histograms.
// Calls come from the copy worker and (contains, usage, stats) the engine thread; the plugin
// serialises them itself (loom/cache_offload.h), the counters are atomics, the histograms lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "core/common/histogram.hpp"
#include "core/engine/engine_api.hpp"
#include "core/plugin/loaded_plugin.hpp"
#include "loom/cache_offload.h"

namespace loom {

class OffloadTier {
 public:
  // plugin outlives this object.
  OffloadTier(const LoadedPlugin& plugin, int64_t bytes_per_block);

  const std::string& name() const { return plugin_->name(); }
  // Copies block_id (a pool or staging id) into the tier. LOOM_OK, or the plugin's status with
  // its message in *message.
  loom_status save(const loom_offload_entry& entry, int32_t block_id, std::string* message);
  // Copies the entry `key` into block_id: LOOM_OK, LOOM_ERR_NOT_FOUND (a miss: absent, or
  // refused as corrupt by the tier), or another failure with *message.
  loom_status load(uint64_t key, int32_t block_id, std::string* message);
  bool contains(uint64_t key) const;
  // Counters, use and latencies as the metrics show them.
  TierStats stats() const;

 private:
  const LoadedPlugin* plugin_;
  int64_t bytes_per_block_;
  bool has_save_entry_;
  std::atomic<int64_t> hits_{0}, misses_{0}, blocks_in_{0}, blocks_out_{0};
  Histogram save_seconds_;
  Histogram load_seconds_;
};

}  // namespace loom
