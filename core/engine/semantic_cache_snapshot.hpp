// What /metrics shows of the semantic cache (EngineStats::semantic_cache).
#pragma once

#include <cstdint>

#include "core/common/histogram.hpp"

namespace loom {

struct SemanticCacheSnapshot {
  bool enabled = false;  // a [semantic_cache] plugin is loaded
  int64_t hits = 0, misses = 0, stores = 0, errors = 0;  // lookups that hit / missed, answers stored, plugin errors
  int64_t entries = 0, evictions = 0, expirations = 0;   // the plugin's own counters (0 when it reports none)
  HistogramSnapshot similarity;                          // of hits: 1 for exact, the cosine for near ones
};

}  // namespace loom
