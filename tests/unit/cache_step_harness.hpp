// Scripted tests of a block-pool cache plugin (paged, radix) loaded through the plugin host: a
// fixture that creates the named plugin and small helpers to allocate, append, commit, fork and
// free requests and read back tables, copies and usage; and the scenarios both caches must pass
// with the same block ids (refusals, sizing, config errors, and 1.1's fork, copy-on-write and
// miss reasons).
#pragma once

#include <gtest/gtest.h>
#include <cstddef>
#include <numeric>
#include "core/common/error.hpp"
#include "core/common/thread_pool.hpp"
#include "core/plugin/plugin_host.hpp"
#include "loom/cache.h"
#include <string>
#include <utility>
#include <vector>

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
  // 1.1: child_id shares parent's blocks for parent.computed tokens.
  loom_status fork(const Req& parent, uint64_t child_id) {
    const loom_request_view v = parent.view();
    return p_->try_call(nullptr, &loom_cache_vtable::fork, &v, child_id);
  }
  // The copy-on-write copies queued since the last call, as {src, dst} pairs.
  std::vector<std::pair<int32_t, int32_t>> copies() {
    loom_block_copy_list l{};
    p_->call("take_block_copies", &loom_cache_vtable::take_block_copies, &l);
    std::vector<std::pair<int32_t, int32_t>> out;
    for (int32_t i = 0; i < l.count; ++i) out.emplace_back(l.items[i].src, l.items[i].dst);
    return out;
  }
  using Copies = std::vector<std::pair<int32_t, int32_t>>;
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

  // The 1.1 miss counters so far; hits + the four misses must add up to the query tokens.
  void expect_prefix(int64_t hit, int64_t partial_block, int64_t no_match, int64_t evicted, int64_t salt_mismatch) {
    const loom_cache_usage u = usage();
    EXPECT_EQ(u.prefix_hit_tokens, hit);
    EXPECT_EQ(u.prefix_miss_partial_block_tokens, partial_block);
    EXPECT_EQ(u.prefix_miss_no_match_tokens, no_match);
    EXPECT_EQ(u.prefix_miss_evicted_tokens, evicted);
    EXPECT_EQ(u.prefix_miss_salt_mismatch_tokens, salt_mismatch);
    EXPECT_EQ(hit + partial_block + no_match + evicted + salt_mismatch, u.prefix_query_tokens);
  }

  // ---- Scenarios both block-pool caches must pass with the same block ids (8 blocks of 4) ----

  void never_caches_every_token() {
    open();
    run_and_free(Req{1, seq(1, 8)});
    EXPECT_EQ(match(Req{2, seq(1, 8)}), 4) << "the last token must be computed";
    EXPECT_EQ(match(Req{2, seq(1, 9)}), 8);
    Req r{2, seq(1, 8)};
    EXPECT_EQ(alloc(r, 8), 4);
    free(2);
    Req s{3, seq(1, 9)};
    EXPECT_EQ(alloc(s, 5), 4) << "a room of 5 tokens can hold at most 4 cached ones";
    EXPECT_EQ(table(3), (std::vector<int32_t>{0, 2}));
  }

  void refusals_change_nothing() {
    open();
    Req a{1, seq(1, 24)};
    alloc(a, 24);  // 6 blocks
    Req b{2, seq(100, 12)};
    EXPECT_EQ(can(b, 12), 0);
    EXPECT_EQ(try_alloc(b, 12), LOOM_ERR_OUT_OF_MEMORY);
    EXPECT_EQ(can(b, 8), 1);
    alloc(b, 8);  // the last 2 blocks
    const loom_cache_usage before = usage();
    const std::vector<int32_t> table_before = table(1);
    a.computed = 24;
    EXPECT_EQ(can(a, 1), 0);
    std::string msg;
    const loom_request_view v = a.view();
    EXPECT_EQ(p_->try_call(&msg, &loom_cache_vtable::append, &v, 1), LOOM_ERR_OUT_OF_MEMORY);
    EXPECT_NE(msg.find("more blocks"), std::string::npos) << msg;
    EXPECT_EQ(table(1), table_before);
    const loom_cache_usage after = usage();
    EXPECT_EQ(after.used_blocks, before.used_blocks);
    EXPECT_EQ(after.free_blocks, before.free_blocks);
    EXPECT_EQ(after.num_seqs, 2);
    EXPECT_EQ(append(a, 0), LOOM_OK);  // no growth needed
  }

  void fits_is_the_whole_pool() {
    open();
    int32_t ok = -1;
    p_->call("fits", &loom_cache_vtable::fits, int32_t{32}, &ok);
    EXPECT_EQ(ok, 1);
    char text[256] = {0};
    loom_error_buf err{text, sizeof(text)};
    ASSERT_EQ(p_->vtable<loom_cache_vtable>().fits(p_->self(), 33, &ok, &err), LOOM_OK);
    EXPECT_EQ(ok, 0);
    EXPECT_NE(std::string(text).find("8 blocks x 4 tokens = 32 tokens"), std::string::npos) << text;
  }

  void prefix_caching_can_be_turned_off() {
    open(R"({"num_blocks": 8, "block_size": 4, "enable_prefix_caching": false, "check_invariants": true})");
    run_and_free(Req{1, seq(1, 8)});
    EXPECT_EQ(match(Req{2, seq(1, 9)}), 0);
    EXPECT_EQ(alloc(Req{2, seq(1, 9)}, 9), 0);
    const loom_cache_usage u = usage();
    EXPECT_EQ(u.cached_blocks, 0);
    EXPECT_EQ(u.prefix_query_tokens, 0);
  }

  void pool_size_from_kv_memory() {
    loom_cache_layout lay{};
    auto blocks = [&](const std::string& cfg, int64_t bytes_per_token) {
      make(cfg, bytes_per_token)->call("layout", &loom_cache_vtable::layout, &lay);
      return lay.num_blocks;
    };
    EXPECT_EQ(blocks(R"({"kv_memory": 4096, "block_size": 4})", 16), 64);
    EXPECT_EQ(blocks(R"({"kv_memory": "1KiB", "block_size": 4})", 16), 16);
    EXPECT_EQ(blocks(R"({"kv_memory": "1KB", "block_size": 4})", 16), 15);
    EXPECT_EQ(blocks(R"({"kv_memory": "2GiB"})", int64_t{1} << 20), 128);
    EXPECT_EQ(blocks(R"({"kv_memory": "1.5GB"})", int64_t{1} << 20), 89);  // 1.5e9 / 16 MiB
    EXPECT_EQ(blocks(R"({"kv_memory": "64 MiB"})", int64_t{1} << 16), 64);
    EXPECT_EQ(blocks("{}", int64_t{1} << 16), 64);  // defaults: 64 MiB, 16 tokens
    EXPECT_EQ(lay.block_size, 16);
  }

  void config_errors_are_all_reported() {
    try {
      make(R"({"kv_memory": "lots", "num_blocks": 4, "block_size": 0, "enable_prefix_caching": 1, "colour": 1})");
      FAIL() << "a bad config was accepted";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("\"kv_memory\" must be"), std::string::npos) << m;
      EXPECT_NE(m.find("\"block_size\" must be"), std::string::npos) << m;
      EXPECT_NE(m.find("\"enable_prefix_caching\" must be"), std::string::npos) << m;
      EXPECT_NE(m.find("unknown key \"colour\""), std::string::npos) << m;
      EXPECT_NE(m.find("not both"), std::string::npos) << m;
    }
    EXPECT_THROW(make(R"({"kv_memory": "12 parsecs"})"), Error);
    EXPECT_THROW(make(R"({"kv_memory": "1.2.3MB"})"), Error);
    EXPECT_THROW(make(R"({"num_blocks": 0})"), Error);
    EXPECT_THROW(make("[1]"), Error);
    EXPECT_THROW(make(R"({"kv_memory": 10, "block_size": 4})", 64), Error);  // not one block
  }

  // ---- interface 1.1 ----

  // A fork shares a partial block; whoever writes into it first gets the copy.
  void fork_partial_block_then_both_write() {
    open();
    Req a{1, seq(1, 6)};  // blocks [1..4] [5 6 _ _]
    ASSERT_EQ(alloc(a, 6), 0);
    commit(a, 6);
    ASSERT_EQ(fork(a, 2), LOOM_OK);
    EXPECT_EQ(table(2), (std::vector<int32_t>{0, 1}));
    loom_cache_usage u = usage();
    EXPECT_EQ(u.used_blocks, 2) << "shared, not copied";
    EXPECT_EQ(u.free_blocks, 6);
    EXPECT_EQ(u.num_seqs, 2);
    Req c{2, cat(seq(1, 6), {77})};  // the parent's 6 tokens and the child's own sample
    EXPECT_EQ(match(c), 6) << "the whole forked length, partial block included";
    EXPECT_EQ(can(c, 7), 1);
    EXPECT_EQ(append(c, 1), LOOM_ERR_INVALID_ARGUMENT) << "a fork is allocated first";
    EXPECT_EQ(alloc(c, 7), 6);
    EXPECT_EQ(table(2), (std::vector<int32_t>{0, 2})) << "token 6 goes into the child's own copy of block 1";
    EXPECT_EQ(copies(), (Copies{{1, 2}}));
    EXPECT_EQ(copies(), Copies{}) << "handed over once";
    EXPECT_EQ(usage().prefix_query_tokens, 6) << "a forked child is not a prefix lookup";

    a.tokens.push_back(88);
    ASSERT_EQ(append(a, 1), LOOM_OK);
    EXPECT_EQ(table(1), (std::vector<int32_t>{0, 1})) << "block 1 is the parent's alone again: written in place";
    EXPECT_EQ(copies(), Copies{});

    commit(a, 7);  // fork again; this time the parent writes first
    ASSERT_EQ(fork(a, 3), LOOM_OK);
    EXPECT_EQ(table(3), (std::vector<int32_t>{0, 1}));
    a.tokens.push_back(89);
    ASSERT_EQ(append(a, 1), LOOM_OK);
    EXPECT_EQ(table(1), (std::vector<int32_t>{0, 3}));
    EXPECT_EQ(copies(), (Copies{{1, 3}}));
    Req d{3, cat(seq(1, 6), {88, 99})};
    EXPECT_EQ(alloc(d, 8), 7);
    EXPECT_EQ(table(3), (std::vector<int32_t>{0, 1})) << "the parent moved out: the child writes block 1 in place";
    EXPECT_EQ(copies(), Copies{});
    u = usage();
    EXPECT_EQ(u.used_blocks, 4);
    EXPECT_EQ(u.num_seqs, 3);

    free(1);
    free(2);
    free(3);
    u = usage();
    EXPECT_EQ(u.used_blocks, 0);
    EXPECT_EQ(u.cached_blocks, 1) << "block 0, registered once";
    EXPECT_EQ(u.free_blocks, 7);
  }

  // Only full blocks shared: nobody ever writes them, so nothing is copied.
  void fork_full_blocks_copies_nothing() {
    open();
    Req a{1, seq(1, 8)};
    ASSERT_EQ(alloc(a, 8), 0);
    commit(a, 8);
    ASSERT_EQ(fork(a, 2), LOOM_OK);
    Req c{2, cat(seq(1, 8), {50})};
    EXPECT_EQ(alloc(c, 9), 8);
    EXPECT_EQ(table(2), (std::vector<int32_t>{0, 1, 2}));
    a.tokens.push_back(60);
    ASSERT_EQ(append(a, 1), LOOM_OK);
    EXPECT_EQ(table(1), (std::vector<int32_t>{0, 1, 3}));
    EXPECT_EQ(copies(), Copies{});
    EXPECT_EQ(usage().used_blocks, 4);
    free(1);
    EXPECT_EQ(usage().used_blocks, 3) << "blocks 0 and 1 live on in the child";
    free(2);
    const loom_cache_usage u = usage();
    EXPECT_EQ(u.used_blocks, 0);
    EXPECT_EQ(u.cached_blocks, 2);
    EXPECT_EQ(u.free_blocks, 6);
  }

  // The parent ends before its child is allocated: the child's blocks stay out of reach of
  // eviction, and the partial block, no longer shared, is written in place.
  void fork_outlives_parent() {
    open();
    Req a{1, seq(1, 6)};
    alloc(a, 6);
    commit(a, 6);
    ASSERT_EQ(fork(a, 2), LOOM_OK);
    free(1);
    loom_cache_usage u = usage();
    EXPECT_EQ(u.used_blocks, 2);
    EXPECT_EQ(u.cached_blocks, 0) << "block 0 is the child's, not evictable";
    EXPECT_EQ(u.num_seqs, 1);
    EXPECT_EQ(can(Req{9, seq(500, 28)}, 28), 0) << "7 blocks, only 6 free";
    Req c{2, cat(seq(1, 6), {9})};
    EXPECT_EQ(alloc(c, 7), 6);
    EXPECT_EQ(table(2), (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(copies(), Copies{});
    free(2);
    u = usage();
    EXPECT_EQ(u.used_blocks, 0);
    EXPECT_EQ(u.cached_blocks, 1);
    EXPECT_EQ(u.free_blocks, 7);
  }

  // No block for the copy: refused, nothing changes; undoing the fork makes room again.
  void fork_copy_needs_a_block() {
    open();
    Req a{1, seq(1, 6)};
    alloc(a, 6);  // 0 1
    commit(a, 6);
    alloc(Req{2, seq(100, 24)}, 24);  // 2..7: the pool is full
    EXPECT_EQ(fork(Req{42, seq(1, 4), 4}, 3), LOOM_ERR_NOT_FOUND) << "unknown parent";
    EXPECT_EQ(fork(a, 2), LOOM_ERR_INVALID_ARGUMENT) << "the child id is taken";
    EXPECT_EQ(fork(Req{1, seq(1, 12), 12}, 3), LOOM_ERR_INVALID_ARGUMENT) << "12 tokens, 2 blocks";
    const loom_cache_usage before = usage();
    ASSERT_EQ(fork(a, 3), LOOM_OK) << "a fork takes no block";
    Req c{3, cat(seq(1, 6), {7})};
    EXPECT_EQ(match(c), 6);
    EXPECT_EQ(can(c, 7), 0) << "the child's copy of block 1 needs a block";
    EXPECT_EQ(try_alloc(c, 7), LOOM_ERR_OUT_OF_MEMORY);
    EXPECT_EQ(table(3), (std::vector<int32_t>{0, 1}));
    a.tokens.push_back(7);
    EXPECT_EQ(can(a, 1), 0) << "so does the parent's";
    EXPECT_EQ(append(a, 1), LOOM_ERR_OUT_OF_MEMORY);
    EXPECT_EQ(table(1), (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(copies(), Copies{});
    free(3);  // undoes the fork
    const loom_cache_usage after = usage();
    EXPECT_EQ(after.used_blocks, before.used_blocks);
    EXPECT_EQ(after.num_seqs, before.num_seqs);
    EXPECT_EQ(can(a, 1), 1);
    ASSERT_EQ(append(a, 1), LOOM_OK);
    EXPECT_EQ(table(1), (std::vector<int32_t>{0, 1}));
  }

  // A full block shared with a fork but not yet registered: the child registers it, the
  // parent's later commit finds it there, and it is cached once.
  void fork_registers_shared_block_once() {
    open();
    Req a{1, seq(1, 6)};
    alloc(a, 6);
    a.computed = 6;  // computed, not committed yet
    ASSERT_EQ(fork(a, 2), LOOM_OK);
    Req c{2, cat(seq(1, 6), {9})};
    EXPECT_EQ(alloc(c, 7), 6);
    EXPECT_EQ(copies(), (Copies{{1, 2}}));
    commit(c, 7);
    commit(a, 6);
    free(1);
    free(2);
    const loom_cache_usage u = usage();
    EXPECT_EQ(u.cached_blocks, 1);
    EXPECT_EQ(u.free_blocks, 7);
    EXPECT_EQ(match(Req{3, seq(1, 5)}), 4);
  }

  // Each miss reason from a scenario, with exact token counts.
  void miss_reasons() {
    open();
    run_and_free(Req{1, seq(1, 3)});  // shorter than a block
    expect_prefix(0, 3, 0, 0, 0);
    run_and_free(Req{2, seq(100, 9)});  // never seen; its 2 full blocks end cached
    expect_prefix(0, 3, 9, 0, 0);
    EXPECT_EQ(alloc(Req{3, seq(100, 9)}, 9), 8);  // hits, then one token
    free(3);
    expect_prefix(8, 4, 9, 0, 0);
    alloc(Req{4, seq(100, 9), 0, 7}, 9);  // the same tokens under salt 7
    free(4);
    expect_prefix(8, 4, 9, 0, 9);
    alloc(Req{5, seq(1000, 32)}, 32);  // the whole pool: evicts request 2's blocks
    free(5);
    expect_prefix(8, 4, 41, 0, 9);
    alloc(Req{6, seq(100, 9)}, 9);
    expect_prefix(8, 4, 41, 9, 9);

    loom_cache_usage old{};  // a 1.0 caller's struct ends before the miss counters
    old.struct_size = static_cast<uint32_t>(offsetof(loom_cache_usage, prefix_miss_partial_block_tokens));
    old.prefix_miss_no_match_tokens = -1;
    p_->call("usage", &loom_cache_vtable::usage, &old);
    EXPECT_EQ(old.prefix_query_tokens, 71);
    EXPECT_EQ(old.prefix_miss_no_match_tokens, -1) << "written past the caller's struct";
  }

  ThreadPool pool_{1};
  PluginHost host_{pool_, {}};
  std::unique_ptr<LoadedPlugin> p_;
};

}  // namespace loom::test
