// cache/contiguous: each sequence gets, at allocate, one contiguous run of KV blocks covering its
// max_total_tokens (first fit), so its K/V is one contiguous stretch of the pool.
//
// The simplest correct KV cache, and the baseline the paged caches are measured against: no
// fragmentation inside a sequence, but a reservation for the worst case (external fragmentation
// and unused tails). Invariants: every block is either free or in exactly one sequence's run;
// used blocks == sum of run lengths; append never moves a run.
// Written against the C ABI directly (not sdk.hpp) because fits() must give its reason in the
// error buffer while returning LOOM_OK with *ok = 0, which sdk.hpp's fits(max_total, ok) cannot.
#include <boost/dll/alias.hpp>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cstddef>
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/cache.h"
#include "loom/sdk_core.hpp"

namespace {

using loom::sdk::ConfigError;
using loom::sdk::Error;

constexpr int64_t kDefaultKvMemory = 64ll << 20;

struct Config {
  int64_t kv_memory = kDefaultKvMemory;  // bytes, when num_blocks is 0
  int64_t num_blocks = 0;                // explicit pool size; 0 = from kv_memory
  int32_t block_size = 16;
};

// "64MiB", "1GB", "512 KiB", "1048576" -> bytes; -1 when the text is not a size.
int64_t parse_size(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return -1;
  double value;
  try {
    size_t used = 0;
    value = std::stod(text.substr(0, i), &used);
    if (used != i) return -1;
  } catch (const std::exception&) {
    return -1;
  }
  while (i < text.size() && text[i] == ' ') ++i;
  std::string unit;
  for (; i < text.size(); ++i) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  double scale;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kb") scale = 1e3;
  else if (unit == "kib") scale = 1024.0;
  else if (unit == "m" || unit == "mb") scale = 1e6;
  else if (unit == "mib") scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "gb") scale = 1e9;
  else if (unit == "gib") scale = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tb") scale = 1e12;
  else if (unit == "tib") scale = 1024.0 * 1024 * 1024 * 1024;
  else return -1;
  const double bytes = std::floor(value * scale);
  if (!(bytes >= 0) || bytes > 9.0e18) return -1;
  return static_cast<int64_t>(bytes);
}

Config parse_config(const char* config_json) {
  const std::string text = config_json == nullptr ? "" : config_json;
  nlohmann::json j = nlohmann::json::object();
  if (!text.empty()) {
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      throw ConfigError(std::string("cache contiguous: config is not valid JSON: ") + e.what());
    }
  }
  if (!j.is_object()) throw ConfigError("cache contiguous: config must be a JSON object");
  Config cfg;
  std::vector<std::string> problems;
  bool has_memory = false, has_blocks = false;
  for (const auto& [key, value] : j.items()) {
    if (key == "kv_memory") {
      has_memory = true;
      int64_t bytes = -1;
      if (value.is_number_integer()) bytes = value.get<int64_t>();
      else if (value.is_string()) bytes = parse_size(value.get<std::string>());
      if (bytes <= 0)
        problems.push_back("kv_memory must be a positive byte count or a size like \"64MiB\" or \"1GB\", got " +
                           value.dump());
      else cfg.kv_memory = bytes;
    } else if (key == "num_blocks") {
      has_blocks = true;
      if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > INT32_MAX)
        problems.push_back("num_blocks must be a positive integer, got " + value.dump());
      else cfg.num_blocks = value.get<int64_t>();
    } else if (key == "block_size") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > 65536)
        problems.push_back("block_size must be an integer in [1, 65536], got " + value.dump());
      else cfg.block_size = value.get<int32_t>();
    } else {
      problems.push_back("unknown key \"" + key + "\" (valid: kv_memory, num_blocks, block_size)");
    }
  }
  if (has_memory && has_blocks) problems.push_back("set kv_memory or num_blocks, not both");
  if (!problems.empty()) {
    std::string message;
    for (const auto& p : problems) message += (message.empty() ? "cache contiguous: " : "; ") + p;
    throw ConfigError(message);
  }
  return cfg;
}

class ContiguousCache {
 public:
  ContiguousCache(const loom_cache_create_args& args, const Config& cfg) : block_size_(cfg.block_size) {
    // The cache only counts blocks, so every dtype the pool can hold is fine.
    if (args.kv_dtype != LOOM_DTYPE_F32 && args.kv_dtype != LOOM_DTYPE_F16 && args.kv_dtype != LOOM_DTYPE_BF16 &&
        args.kv_dtype != LOOM_DTYPE_I8 && args.kv_dtype != LOOM_DTYPE_FP8_E4M3)
      throw Error(LOOM_ERR_UNSUPPORTED, "cache contiguous: kv_dtype " + std::to_string(args.kv_dtype) +
                                            " is not supported (f32, f16, bf16, int8, fp8_e4m3)");
    int64_t blocks = cfg.num_blocks;
    if (blocks == 0) {
      if (args.bytes_per_token <= 0)
        throw Error(LOOM_ERR_INVALID_ARGUMENT, "cache contiguous: bytes_per_token must be positive");
      // Scales of int8/fp8 blocks (a field the host may be too old to set).
      const bool has_extra = args.struct_size >= offsetof(loom_cache_create_args, bytes_per_block_extra) +
                                                     sizeof(args.bytes_per_block_extra);
      const int64_t extra = has_extra && args.bytes_per_block_extra > 0 ? args.bytes_per_block_extra : 0;
      blocks = cfg.kv_memory / (static_cast<int64_t>(cfg.block_size) * args.bytes_per_token + extra);
      if (blocks < 1)
        throw ConfigError("cache contiguous: kv_memory " + std::to_string(cfg.kv_memory) +
                          " bytes holds no block of " + std::to_string(cfg.block_size) + " tokens x " +
                          std::to_string(args.bytes_per_token) + " bytes per token");
      if (blocks > INT32_MAX) blocks = INT32_MAX;
    }
    used_.assign(static_cast<size_t>(blocks), 0);
  }

  int32_t num_blocks() const { return static_cast<int32_t>(used_.size()); }
  int32_t block_size() const { return block_size_; }

  bool fits(int32_t max_total_tokens, loom_error_buf* err) const {
    const int64_t capacity = static_cast<int64_t>(num_blocks()) * block_size_;
    if (max_total_tokens <= capacity) return true;
    loom::sdk::write_error(err, "max_total_tokens " + std::to_string(max_total_tokens) +
                                    " exceeds the whole KV pool: " + std::to_string(num_blocks()) + " blocks x " +
                                    std::to_string(block_size_) + " tokens = " + std::to_string(capacity) +
                                    " tokens");
    return false;
  }

  bool can_allocate(const loom_request_view& req, int32_t num_new_tokens) const {
    const int64_t need = static_cast<int64_t>(req.num_computed_tokens) + num_new_tokens;
    auto it = seqs_.find(req.request_id);
    if (it != seqs_.end()) return need <= capacity_of(it->second);
    return find_run(blocks_for(req, num_new_tokens)) >= 0;
  }

  void allocate(const loom_request_view& req, int32_t num_new_tokens, int32_t* num_cached_tokens) {
    if (seqs_.count(req.request_id) != 0)
      throw Error(LOOM_ERR_INVALID_ARGUMENT,
                  "cache contiguous: request " + std::to_string(req.request_id) + " already holds blocks");
    const int32_t n = blocks_for(req, num_new_tokens);
    const int32_t first = find_run(n);
    if (first < 0)
      throw Error(LOOM_ERR_OUT_OF_MEMORY, "cache contiguous: no free run of " + std::to_string(n) +
                                              " contiguous blocks (" + std::to_string(num_free()) + " of " +
                                              std::to_string(num_blocks()) + " free)");
    Seq seq;
    seq.tokens = req.num_computed_tokens + num_new_tokens;
    for (int32_t b = first; b < first + n; ++b) {
      used_[static_cast<size_t>(b)] = 1;
      seq.blocks.push_back(b);
    }
    num_used_ += n;
    seqs_.emplace(req.request_id, std::move(seq));
    if (num_cached_tokens != nullptr) *num_cached_tokens = 0;  // no prefix reuse
  }

  void append(const loom_request_view& req, int32_t num_new_tokens) {
    auto it = seqs_.find(req.request_id);
    if (it == seqs_.end())
      throw Error(LOOM_ERR_NOT_FOUND, "cache contiguous: request " + std::to_string(req.request_id) + " holds no blocks");
    const int64_t need = static_cast<int64_t>(req.num_computed_tokens) + num_new_tokens;
    if (need > capacity_of(it->second))
      throw Error(LOOM_ERR_OUT_OF_MEMORY, "cache contiguous: request " + std::to_string(req.request_id) + " needs " +
                                              std::to_string(need) + " tokens, beyond its reservation of " +
                                              std::to_string(capacity_of(it->second)));
    if (need > it->second.tokens) it->second.tokens = static_cast<int32_t>(need);
  }

  void free_seq(uint64_t request_id) {
    auto it = seqs_.find(request_id);
    if (it == seqs_.end()) return;
    for (int32_t b : it->second.blocks) used_[static_cast<size_t>(b)] = 0;
    num_used_ -= static_cast<int32_t>(it->second.blocks.size());
    seqs_.erase(it);
  }

  loom_block_list block_table(uint64_t request_id) const {
    auto it = seqs_.find(request_id);
    if (it == seqs_.end())
      throw Error(LOOM_ERR_NOT_FOUND, "cache contiguous: request " + std::to_string(request_id) + " holds no blocks");
    return loom_block_list{it->second.blocks.data(), static_cast<int32_t>(it->second.blocks.size())};
  }

  void usage(loom_cache_usage* out) const {
    out->total_blocks = num_blocks();
    out->used_blocks = num_used_;
    out->free_blocks = num_free();
    out->cached_blocks = 0;
    out->num_seqs = static_cast<int32_t>(seqs_.size());
    out->prefix_hit_tokens = 0;
    out->prefix_query_tokens = 0;
    // 1.1 miss counters: no prefix caching, so no lookups and no misses. Written only when the
    // caller's struct is new enough to have them.
    if (out->struct_size >= offsetof(loom_cache_usage, prefix_miss_salt_mismatch_tokens) + sizeof(int64_t)) {
      out->prefix_miss_partial_block_tokens = 0;
      out->prefix_miss_no_match_tokens = 0;
      out->prefix_miss_evicted_tokens = 0;
      out->prefix_miss_salt_mismatch_tokens = 0;
    }
  }

 private:
  struct Seq {
    std::vector<int32_t> blocks;  // the run: first, first + 1, ...
    int32_t tokens = 0;           // tokens the sequence holds so far
  };

  int64_t capacity_of(const Seq& s) const { return static_cast<int64_t>(s.blocks.size()) * block_size_; }
  int32_t num_free() const { return num_blocks() - num_used_; }

  // The reservation covers the request's whole life (max_total_tokens), or more if asked.
  int32_t blocks_for(const loom_request_view& req, int32_t num_new_tokens) const {
    const int64_t tokens = std::max<int64_t>(req.max_total_tokens,
                                             static_cast<int64_t>(req.num_computed_tokens) + num_new_tokens);
    return static_cast<int32_t>(std::max<int64_t>(1, (tokens + block_size_ - 1) / block_size_));
  }

  // First block of the lowest run of n free blocks, or -1.
  int32_t find_run(int32_t n) const {
    int32_t run = 0;
    for (int32_t b = 0; b < num_blocks(); ++b) {
      run = used_[static_cast<size_t>(b)] ? 0 : run + 1;
      if (run == n) return b - n + 1;
    }
    return -1;
  }

  int32_t block_size_;
  std::vector<uint8_t> used_;  // [num_blocks] 1 when inside some sequence's run
  int32_t num_used_ = 0;
  std::unordered_map<uint64_t, Seq> seqs_;
};

// ---- C ABI ----------------------------------------------------------------------------------

ContiguousCache& self_of(void* self) { return *static_cast<ContiguousCache*>(self); }

const loom_request_view& checked(const loom_request_view* req) {
  if (req == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "request view is null");
  return *req;
}

loom_status layout(void* self, loom_cache_layout* out, loom_error_buf* err) {
  return loom::sdk::detail::guarded(err, [&] {
    out->num_blocks = self_of(self).num_blocks();
    out->block_size = self_of(self).block_size();
  });
}

loom_status fits(void* self, int32_t max_total_tokens, int32_t* ok, loom_error_buf* err) {
  return loom::sdk::detail::guarded(err, [&] { *ok = self_of(self).fits(max_total_tokens, err) ? 1 : 0; });
}

loom_status can_allocate(void* self, const loom_request_view* req, int32_t num_new_tokens, int32_t* ok,
                         loom_error_buf* err) {
  return loom::sdk::detail::guarded(err, [&] { *ok = self_of(self).can_allocate(checked(req), num_new_tokens) ? 1 : 0; });
}

loom_status allocate(void* self, const loom_request_view* req, int32_t num_new_tokens, int32_t* num_cached_tokens,
                     loom_error_buf* err) {
  return loom::sdk::detail::guarded(err, [&] { self_of(self).allocate(checked(req), num_new_tokens, num_cached_tokens); });
}

loom_status append(void* self, const loom_request_view* req, int32_t num_new_tokens, loom_error_buf* err) {
  return loom::sdk::detail::guarded(err, [&] { self_of(self).append(checked(req), num_new_tokens); });
}

loom_status free_fn(void* self, uint64_t request_id, loom_error_buf* err) {
  return loom::sdk::detail::guarded(err, [&] { self_of(self).free_seq(request_id); });
}

loom_status block_table(void* self, uint64_t request_id, loom_block_list* out, loom_error_buf* err) {
  return loom::sdk::detail::guarded(err, [&] { *out = self_of(self).block_table(request_id); });
}

loom_status usage(void* self, loom_cache_usage* out, loom_error_buf* err) {
  return loom::sdk::detail::guarded(err, [&] { self_of(self).usage(out); });
}

const loom_cache_vtable kVtable = {sizeof(loom_cache_vtable),
                                   &layout,
                                   &fits,
                                   nullptr,  // match_prefix: no prefix caching
                                   &can_allocate,
                                   &allocate,
                                   &append,
                                   nullptr,  // commit: nothing to register
                                   &free_fn,
                                   &block_table,
                                   &usage,
                                   nullptr,   // fork: contiguous runs cannot share blocks
                                   nullptr};  // take_block_copies: nothing is ever copied

loom_status validate(const char* config_json, loom_error_buf* err) {
  return loom::sdk::detail::guarded(err, [&] { parse_config(config_json); });
}

loom_status create(const loom_host_api*, const void* create_args, const char* config_json, void** self,
                   const void** vtable, loom_error_buf* err) {
  return loom::sdk::detail::guarded(err, [&] {
    const Config cfg = parse_config(config_json);
    const auto* args = static_cast<const loom_cache_create_args*>(create_args);
    if (args == nullptr || args->struct_size < sizeof(loom_cache_create_args))
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "cache contiguous: missing or too old create args");
    *self = new ContiguousCache(*args, cfg);
    *vtable = &kVtable;
  });
}

void destroy(void* self) { delete static_cast<ContiguousCache*>(self); }

const loom_plugin_desc kDesc = {
    sizeof(loom_plugin_desc), LOOM_ABI_VERSION, LOOM_KIND_CACHE, LOOM_CACHE_IFACE_MAJOR, LOOM_CACHE_IFACE_MINOR,
    "contiguous", "0.1.0", "one contiguous run of KV blocks per sequence, reserved at admission (first fit)",
    nullptr, &validate, &create, &destroy};

}  // namespace

const loom_plugin_desc* loom_cache_contiguous_entry() { return &kDesc; }
BOOST_DLL_ALIAS(loom_cache_contiguous_entry, loom_plugin_entry_v1)
