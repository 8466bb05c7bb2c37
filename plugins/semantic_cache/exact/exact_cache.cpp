// semantic_cache/exact: returns the answer stored for a request identical to one served before:
// the same model, tenant (and cache salt), rendered prompt tokens, canonical parameters (every
// sampling parameter, tools, response format ...) and context. The key is the fields themselves,
// not a hash of them, so two different requests can never share an entry.
//
// Config: capacity = 10000 (answers kept; the least recently used goes first), ttl_s = 0 (seconds
// an answer stays valid; 0 = until evicted).
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/answer_store.hpp"
#include "loom/sdk.hpp"
#include "loom/sdk_config.hpp"

namespace {

using loom::semantic::LruTtl;
using loom::semantic::StoredAnswer;

struct ExactConfig {
  int64_t capacity = 10000;
  double ttl_s = 0.0;
};

class ExactCache {
 public:
  static const loom::sdk::ConfigSpec<ExactConfig>& config_spec() {
    static const auto spec = loom::sdk::ConfigSpec<ExactConfig>("semantic_cache exact")
                                 .integer("capacity", &ExactConfig::capacity, "answers kept at most (LRU)", 1)
                                 .number("ttl_s", &ExactConfig::ttl_s, "seconds an answer stays valid; 0 = no limit", 0.0);
    return spec;
  }

  ExactCache(const loom::sdk::Host& host, const ExactConfig& cfg) : lru_(cfg.capacity, cfg.ttl_s) {
    host.info("up to ", cfg.capacity, " answers", cfg.ttl_s > 0 ? ", ttl " + std::to_string(cfg.ttl_s) + " s" : "");
  }

  loom_status lookup(const loom_semantic_query* query, int32_t* hit, loom_semantic_answer* answer) {
    const std::string key = key_of(*query);
    std::lock_guard<std::mutex> lock(mutex_);
    *hit = 0;
    const auto it = ids_.find(key);
    if (it == ids_.end()) return LOOM_OK;
    bool expired = false;
    if (!lru_.use(it->second, expired)) {
      answers_.erase(it->second);
      ids_.erase(it);
      return LOOM_OK;
    }
    loom::semantic::fill(answers_.at(it->second).answer, 1.0f, answer);
    *hit = 1;
    return LOOM_OK;
  }

  loom_status store(const loom_semantic_query* query, const loom_semantic_answer* answer) {
    std::string key = key_of(*query);
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t id;
    if (const auto it = ids_.find(key); it != ids_.end()) {
      id = it->second;
    } else {
      id = next_id_++;
      ids_.emplace(key, id);
    }
    answers_[id] = Entry{std::move(key), loom::semantic::copy_of(*answer)};
    for (const uint64_t gone : lru_.insert(id)) {
      ids_.erase(answers_.at(gone).key);
      answers_.erase(gone);
    }
    return LOOM_OK;
  }

  loom_status stats(loom_semantic_cache_stats* out) {
    std::lock_guard<std::mutex> lock(mutex_);
    lru_.report(out);
    return LOOM_OK;
  }

 private:
  struct Entry {
    std::string key;
    StoredAnswer answer;
  };
  static std::string key_of(const loom_semantic_query& q) {
    std::string key = loom::semantic::identity_of(q);
    key += '\0';
    key.append(q.prompt == nullptr ? "" : q.prompt, q.prompt == nullptr ? 0 : q.prompt_len);
    return key;
  }

  std::mutex mutex_;
  LruTtl lru_;
  std::unordered_map<std::string, uint64_t> ids_;
  std::unordered_map<uint64_t, Entry> answers_;
  uint64_t next_id_ = 1;
};

}  // namespace

LOOM_SEMANTIC_CACHE_PLUGIN(ExactCache, "exact", "0.1.0",
                           "answers stored for identical requests (model, tenant, prompt tokens, parameters), LRU, TTL");
