// What every semantic-cache plugin keeps and how it hands it back: the stored answer, the part of
// a query that must match exactly (model, tenant, parameters, context), and an LRU order with a
// TTL over entry ids. Not thread-safe: a plugin guards it with its own mutex.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/semantic_cache.h"

namespace loom::semantic {

struct StoredAnswer {
  std::string text;
  int32_t completion_tokens = 0;
  int32_t finish_reason = 0;
};

inline std::string str(const char* s) { return s == nullptr ? std::string() : std::string(s); }

// Whether the host filled 1.1's member `m` of the query (its struct_size covers it).
#define LOOM_SEMANTIC_HAS(q, m) ((q).struct_size >= offsetof(loom_semantic_query, m) + sizeof((q).m))

// The fields no hit may differ in, joined with NUL bytes (which none of them contains), so
// distinct identities never collide: model, tenant, parameters and the context digest.
inline std::string identity_of(const loom_semantic_query& q) {
  std::string key = str(q.model);
  key += '\0';
  key += str(q.tenant);
  key += '\0';
  key += str(q.params);
  key += '\0';
  if (LOOM_SEMANTIC_HAS(q, context)) key += str(q.context);
  return key;
}

inline StoredAnswer copy_of(const loom_semantic_answer& a) {
  return StoredAnswer{std::string(a.text, a.length), a.completion_tokens, a.finish_reason};
}

// Writes `s` into the caller's buffer (length > capacity: the host calls again with more room).
inline void fill(const StoredAnswer& s, float similarity, loom_semantic_answer* out) {
  out->length = s.text.size();
  std::memcpy(out->text, s.text.data(), std::min(s.text.size(), out->capacity));
  out->completion_tokens = s.completion_tokens;
  out->finish_reason = s.finish_reason;
  if (out->struct_size >= offsetof(loom_semantic_answer, similarity) + sizeof(float)) out->similarity = similarity;
}

// Entry ids in least-recently-used order, each with an expiry time. ttl 0: entries never expire.
class LruTtl {
 public:
  using Clock = std::chrono::steady_clock;
  LruTtl(int64_t capacity, double ttl_s) : capacity_(capacity), ttl_s_(ttl_s) {}

  int64_t size() const { return static_cast<int64_t>(where_.size()); }
  int64_t evictions() const { return evictions_; }
  int64_t expirations() const { return expirations_; }
  // The counters a plugin's stats() reports.
  void report(loom_semantic_cache_stats* out) const {
    out->entries = size();
    out->evictions = evictions_;
    out->expirations = expirations_;
  }

  // Adds (or refreshes) id; returns the ids evicted to stay within capacity, oldest first.
  std::vector<uint64_t> insert(uint64_t id) {
    erase(id);
    order_.push_front(id);
    where_[id] = Slot{order_.begin(), ttl_s_ > 0 ? Clock::now() + to_duration(ttl_s_) : Clock::time_point::max()};
    std::vector<uint64_t> evicted;
    while (size() > capacity_) {
      evicted.push_back(order_.back());
      erase(order_.back());
      ++evictions_;
    }
    return evicted;
  }
  // True (and id becomes the most recent) when id is held and not expired; an expired id is
  // dropped, counted, and reported through `expired`.
  bool use(uint64_t id, bool& expired) {
    expired = false;
    const auto it = where_.find(id);
    if (it == where_.end()) return false;
    if (Clock::now() >= it->second.expires) {
      erase(id);
      ++expirations_;
      expired = true;
      return false;
    }
    order_.splice(order_.begin(), order_, it->second.pos);
    return true;
  }
  void erase(uint64_t id) {
    const auto it = where_.find(id);
    if (it == where_.end()) return;
    order_.erase(it->second.pos);
    where_.erase(it);
  }

 private:
  struct Slot {
    std::list<uint64_t>::iterator pos;
    Clock::time_point expires;
  };
  static Clock::duration to_duration(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }
  int64_t capacity_;
  double ttl_s_;
  std::list<uint64_t> order_;  // most recent first
  std::unordered_map<uint64_t, Slot> where_;
  int64_t evictions_ = 0;
  int64_t expirations_ = 0;
};

}  // namespace loom::semantic
