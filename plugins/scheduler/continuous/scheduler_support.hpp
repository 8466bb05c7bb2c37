// Shared by the continuous and static schedulers: config parsing with every problem reported at
// once, a cache client that turns failed statuses into exceptions, and admission of a waiting
// request. The output arrays and preemption go through loom::sdk::SchedStep.
// Header-only and SDK-only, so each plugin stays one self-contained shared object.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "loom/scheduler.h"
#include "loom/sdk.hpp"
#include "loom/sdk_cache_client.hpp"
#include "loom/sdk_scheduler.hpp"

namespace loom_sched {

// Parses a plugin's JSON table against a set of known keys; each key's handler checks and stores
// its value or appends a problem. Unknown keys and every failed check end up in one ConfigError.
class ConfigReader {
 public:
  using Handler = std::function<void(const nlohmann::json&, std::vector<std::string>&)>;

  explicit ConfigReader(std::string plugin) : plugin_(std::move(plugin)) {}

  // An integer in [min, INT32_MAX].
  void int_key(const std::string& key, int32_t min, int32_t& dst) {
    handlers_[key] = [key, min, &dst](const nlohmann::json& v, std::vector<std::string>& problems) {
      if (!v.is_number_integer() || v.get<int64_t>() < min || v.get<int64_t>() > INT32_MAX)
        problems.push_back(key + " must be an integer >= " + std::to_string(min) + ", got " + v.dump());
      else dst = v.get<int32_t>();
    };
  }
  void bool_key(const std::string& key, bool& dst) {
    handlers_[key] = [key, &dst](const nlohmann::json& v, std::vector<std::string>& problems) {
      if (!v.is_boolean()) problems.push_back(key + " must be true or false, got " + v.dump());
      else dst = v.get<bool>();
    };
  }

  void read(std::string_view config_json) const {
    nlohmann::json j = nlohmann::json::object();
    const std::string text(config_json);
    if (!text.empty()) {
      try {
        j = nlohmann::json::parse(text);
      } catch (const nlohmann::json::parse_error& e) {
        throw loom::sdk::ConfigError(plugin_ + ": config is not valid JSON: " + e.what());
      }
    }
    if (!j.is_object()) throw loom::sdk::ConfigError(plugin_ + ": config must be a JSON object, got " + j.dump());
    std::vector<std::string> problems;
    for (const auto& [key, value] : j.items()) {
      auto it = handlers_.find(key);
      if (it != handlers_.end()) {
        it->second(value, problems);
        continue;
      }
      std::string valid;
      for (const auto& [k, h] : handlers_) valid += (valid.empty() ? "" : ", ") + k;
      problems.push_back("unknown key \"" + key + "\" (valid: " + valid + ")");
    }
    if (problems.empty()) return;
    std::string message;
    for (const auto& p : problems) message += (message.empty() ? plugin_ + ": " : "; ") + p;
    throw loom::sdk::ConfigError(message);
  }

 private:
  std::string plugin_;
  std::map<std::string, Handler> handlers_;  // sorted, so the "valid:" list is stable
};

using CacheClient = loom::sdk::CacheClient;

// Starts a sequence for a waiting request with at most `limit` tokens to compute this step, after
// the prefix hit `hit` (from match_prefix, asked once per decision so the cache's lookup counters
// stay honest). Returns false (nothing changed) when the cache cannot hold it now; otherwise
// sets *num_new (>= 1) and *num_cached.
inline bool admit(CacheClient& cache, const loom_request_view& req, int32_t hit, int32_t limit, int32_t* num_new,
                  int32_t* num_cached) {
  const int32_t room = std::min(req.num_tokens, hit + limit);
  if (!cache.can_allocate(req, room)) return false;
  const int32_t cached = cache.allocate(req, room);
  if (cached >= room) {
    // The host frees what was allocated when the failed step ends the request.
    throw loom::sdk::Error(LOOM_ERR_INTERNAL, "scheduler: the cache reported all " + std::to_string(cached) +
                                                  " tokens of request " + std::to_string(req.request_id) +
                                                  " as cached; at least one must be computed");
  }
  // A cache that reuses fewer tokens than it matched still only gets `limit` tokens computed.
  *num_new = std::min(room - cached, limit);
  *num_cached = cached;
  return true;
}

}  // namespace loom_sched
