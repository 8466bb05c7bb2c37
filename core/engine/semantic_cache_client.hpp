// The host's side of the semantic_cache plugin: native queries in, the C structs out, a stored
// answer back (the buffer grown until it fits), and the counters /metrics shows (hits, misses,
// stores, the similarity of hits, and the plugin's own entries / evictions / expirations).
// Thread-safe, as the plugin is: HTTP threads call it, several at once.
#pragma once

#include <atomic>
#include <memory>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/common/histogram.hpp"
#include "core/engine/semantic_cache_snapshot.hpp"
#include "core/config/config.hpp"
#include "core/plugin/loaded_plugin.hpp"

namespace loom {

struct SemanticQuery {
  std::string model;
  std::string tenant;   // tenant and cache salt; "" for none
  std::string prompt;   // the rendered prompt's token ids, "1,2,3"
  std::string params;   // canonical parameters (sorted JSON)
  std::string text;     // the last user turn, or the completion prompt
  std::string context;  // digest of everything else the answer depends on
  std::vector<float> embedding;  // [dim] when the plugin needs one, else empty
};

struct SemanticAnswer {
  std::string text;
  int32_t completion_tokens = 0;
  bool finished_by_length = false;
  float similarity = 1.0f;  // 1 for an exact match
};


class SemanticCacheClient {
 public:
  // `plugin` must outlive the client.
  SemanticCacheClient(const LoadedPlugin& plugin, SemanticCacheGuards guards);

  const SemanticCacheGuards& guards() const { return guards_; }
  // Whether lookup and store need query.embedding (semantic_cache interface 1.1).
  bool needs_embedding() const { return needs_embedding_; }
  const std::string& plugin_name() const { return plugin_.name(); }

  // The stored answer, or nullopt. A plugin error is logged, counted and taken as a miss: the
  // request is then computed, never failed, because of the cache.
  std::optional<SemanticAnswer> lookup(const SemanticQuery& query);
  void store(const SemanticQuery& query, const SemanticAnswer& answer);
  SemanticCacheSnapshot snapshot() const;

 private:
  const LoadedPlugin& plugin_;
  SemanticCacheGuards guards_;
  bool needs_embedding_ = false;
  std::atomic<int64_t> hits_{0}, misses_{0}, stores_{0}, errors_{0};
  Histogram similarity_;
};

class EmbeddingWorker;
// The client over `plugin` with [semantic_cache]'s guards; nullptr when plugin is null. Throws
// loom::Error when the plugin needs embeddings and the server has no [embedding] model.
std::unique_ptr<SemanticCacheClient> make_semantic_cache_client(const LoadedPlugin* plugin, const Config& config,
                                                                const EmbeddingWorker* embeddings);

}  // namespace loom
