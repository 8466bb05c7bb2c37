// Scripted tests of a block-pool cache plugin (paged, radix) loaded through the plugin host: a
// fixture that creates the named plugin and small helpers to allocate, append, commit and free
// requests and read back tables and usage.
#pragma once

#include <gtest/gtest.h>
#include <numeric>
#include "core/common/error.hpp"
#include "core/common/thread_pool.hpp"
#include "core/plugin/plugin_host.hpp"
#include "loom/cache.h"
#include <string>
#include <utility>

namespace loom::test {


// A request as the host would show it: tokens so far and how many have K/V.
struct Req {
  uint64_t id;
  std::vector<int32_t> tokens;
  int32_t computed = 0;
  uint64_t salt = 0;
  loom_request_view view() const {
    loom_request_view v{};
    v.struct_size = sizeof(v);
    v.request_id = id;
    v.token_ids = tokens.data();
    v.num_tokens = static_cast<int32_t>(tokens.size());
    v.num_prompt_tokens = v.num_tokens;
    v.num_computed_tokens = computed;
    v.max_total_tokens = v.num_tokens + 16;
    v.cache_salt = salt;
    return v;
  }
};

// Tokens first, first + 1, ..., first + n - 1.
std::vector<int32_t> seq(int32_t first, int32_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}
std::vector<int32_t> cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

constexpr const char* kSmall = R"({"num_blocks": 8, "block_size": 4, "check_invariants": true})";

class CacheSteps : public ::testing::Test {
 protected:
  explicit CacheSteps(std::string plugin) : plugin_(std::move(plugin)) {}
  std::string plugin_;
  std::unique_ptr<LoadedPlugin> make(const std::string& config = kSmall, int64_t bytes_per_token = 16) {
    loom_cache_create_args a{};
    a.struct_size = sizeof(a);
    a.n_layers = 1;
    a.n_kv_heads = 1;
    a.head_dim = 2;
    a.kv_dtype = LOOM_DTYPE_F32;
    a.bytes_per_token = bytes_per_token;
    a.max_model_len = 1024;
    return host_.create(PluginSpec{LOOM_KIND_CACHE, plugin_, "", config}, &a);
  }
  void open(const std::string& config = kSmall) { p_ = make(config); }

  std::vector<int32_t> table(uint64_t id) {
    loom_block_list l{};
    p_->call("block_table", &loom_cache_vtable::block_table, id, &l);
    return std::vector<int32_t>(l.ids, l.ids + l.count);
  }
  int32_t match(const Req& r) {
    const loom_request_view v = r.view();
    int32_t n = -1;
    p_->call("match_prefix", &loom_cache_vtable::match_prefix, &v, &n);
    return n;
  }
  int32_t can(const Req& r, int32_t n) {
    const loom_request_view v = r.view();
    int32_t ok = -1;
    p_->call("can_allocate", &loom_cache_vtable::can_allocate, &v, n, &ok);
    return ok;
  }
  // Allocates room for n tokens; returns the cached-token count.
  int32_t alloc(const Req& r, int32_t n) {
    const loom_request_view v = r.view();
    int32_t cached = -1;
    p_->call("allocate", &loom_cache_vtable::allocate, &v, n, &cached);
    return cached;
  }
  loom_status try_alloc(const Req& r, int32_t n) {
    const loom_request_view v = r.view();
    int32_t cached = -1;
    return p_->try_call(nullptr, &loom_cache_vtable::allocate, &v, n, &cached);
  }
  loom_status append(const Req& r, int32_t n) {
    const loom_request_view v = r.view();
    return p_->try_call(nullptr, &loom_cache_vtable::append, &v, n);
  }
  // The host's commit after computing: every token so far has K/V.
  void commit(Req& r, int32_t computed) {
    r.computed = computed;
    const loom_request_view v = r.view();
    p_->call("commit", &loom_cache_vtable::commit, &v);
  }
  void free(uint64_t id) { p_->call("free", &loom_cache_vtable::free, id); }
  loom_cache_usage usage() {
    loom_cache_usage u{};
    u.struct_size = sizeof(u);
    p_->call("usage", &loom_cache_vtable::usage, &u);
    EXPECT_EQ(u.free_blocks + u.cached_blocks + u.used_blocks, u.total_blocks);
    return u;
  }
  // Allocates the whole prompt, computes it, commits it and frees it: its full blocks end cached.
  void run_and_free(Req r) {
    alloc(r, static_cast<int32_t>(r.tokens.size()));
    commit(r, static_cast<int32_t>(r.tokens.size()));
    free(r.id);
  }

  ThreadPool pool_{1};
  PluginHost host_{pool_, {}};
  std::unique_ptr<LoadedPlugin> p_;
};

}  // namespace loom::test
