// cache/paged: block order, growth, free, hash-chained prefix hits (full blocks only, salted,
// registered at commit), LRU eviction of cached blocks, the one-token-left rule, refused
// allocations changing nothing, fits, and config errors. Pools are tiny (block_size 4, 8 blocks)
// so every expectation is exact; check_invariants runs the plugin's own consistency check after
// every mutating call, in release builds too.
#include "cache_step_harness.hpp"

namespace loom::test {
namespace {

class Paged : public CacheSteps {
 protected:
  Paged() : CacheSteps("paged") {}
};

TEST_F(Paged, BlocksInOrderGrowByAppendAndComeBack) {
  open();
  loom_cache_layout lay{};
  p_->call("layout", &loom_cache_vtable::layout, &lay);
  EXPECT_EQ(lay.num_blocks, 8);
  EXPECT_EQ(lay.block_size, 4);

  Req a{1, seq(100, 10)};
  EXPECT_EQ(alloc(a, 6), 0);
  EXPECT_EQ(table(1), (std::vector<int32_t>{0, 1}));
  Req b{2, seq(200, 3)};
  EXPECT_EQ(alloc(b, 3), 0);
  EXPECT_EQ(table(2), (std::vector<int32_t>{2}));
  a.computed = 6;
  ASSERT_EQ(append(a, 2), LOOM_OK);  // 8 tokens: still 2 blocks
  EXPECT_EQ(table(1), (std::vector<int32_t>{0, 1}));
  ASSERT_EQ(append(a, 4), LOOM_OK);  // 10 tokens: a third block
  EXPECT_EQ(table(1), (std::vector<int32_t>{0, 1, 3}));
  loom_cache_usage u = usage();
  EXPECT_EQ(u.used_blocks, 4);
  EXPECT_EQ(u.free_blocks, 4);
  EXPECT_EQ(u.num_seqs, 2);

  free(1);  // never committed: nothing to cache
  u = usage();
  EXPECT_EQ(u.used_blocks, 1);
  EXPECT_EQ(u.free_blocks, 7);
  EXPECT_EQ(u.cached_blocks, 0);
  EXPECT_EQ(u.num_seqs, 1);
  free(1);       // twice: unknown ids are not an error
  free(424242);
  loom_block_list l{};
  EXPECT_EQ(p_->try_call(nullptr, &loom_cache_vtable::block_table, uint64_t{1}, &l), LOOM_ERR_NOT_FOUND);
  EXPECT_EQ(append(a, 1), LOOM_ERR_NOT_FOUND);
  EXPECT_EQ(try_alloc(b, 1), LOOM_ERR_INVALID_ARGUMENT);  // already holds blocks

  Req c{3, seq(300, 9)};
  EXPECT_EQ(alloc(c, 9), 0);
  EXPECT_EQ(table(3), (std::vector<int32_t>{0, 1, 3}));  // lowest free ids first
}

TEST_F(Paged, PrefixHitsFullBlocksOnlyAfterCommit) {
  open();
  Req a{1, seq(1, 10)};  // blocks [1..4] [5..8] [9 10]
  EXPECT_EQ(alloc(a, 10), 0);
  Req b{2, cat(seq(1, 8), seq(50, 3))};  // shares a's two full blocks
  EXPECT_EQ(match(b), 0) << "nothing is registered before commit";
  commit(a, 7);  // K/V of the first block only
  EXPECT_EQ(match(b), 4);
  commit(a, 10);  // both full blocks; the partial third is never registered
  EXPECT_EQ(match(b), 8);
  EXPECT_EQ(usage().prefix_query_tokens, 10) << "match_prefix is a pure query";

  EXPECT_EQ(alloc(b, 11), 8);
  EXPECT_EQ(table(2), (std::vector<int32_t>{0, 1, 3}));
  loom_cache_usage u = usage();
  EXPECT_EQ(u.used_blocks, 4);
  EXPECT_EQ(u.prefix_hit_tokens, 8);
  EXPECT_EQ(u.prefix_query_tokens, 21);

  Req c{3, cat(seq(1, 6), seq(70, 4))};  // shares one full block and half of the next
  EXPECT_EQ(match(c), 4);
  Req d{4, b.tokens, 0, 7};  // b's tokens under another tenant's salt
  EXPECT_EQ(match(d), 0);
  Req e{5, cat(seq(2, 8), seq(50, 3))};  // second block equal, first not: the chain breaks at once
  EXPECT_EQ(match(e), 0);

  free(1);  // blocks 0 and 1 stay used by b; a's partial block 2 goes back to free
  u = usage();
  EXPECT_EQ(u.used_blocks, 3);
  EXPECT_EQ(u.free_blocks, 5);
  EXPECT_EQ(u.cached_blocks, 0);
  free(2);  // now 0 and 1 are cached: registered, unreferenced
  u = usage();
  EXPECT_EQ(u.used_blocks, 0);
  EXPECT_EQ(u.cached_blocks, 2);
  EXPECT_EQ(u.free_blocks, 6);
  EXPECT_EQ(match(b), 8) << "a cached block still serves hits";
  Req f{6, b.tokens};
  EXPECT_EQ(alloc(f, 11), 8);
  EXPECT_EQ(table(6), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(usage().cached_blocks, 0);
}

TEST_F(Paged, NeverCachesEveryToken) {
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

TEST_F(Paged, EvictsLeastRecentlyFreedCachedBlockFirst) {
  open();
  Req x{1, seq(1, 8)}, y{2, seq(101, 8)};
  alloc(x, 8);  // blocks 0 1
  alloc(y, 8);  // blocks 2 3
  commit(x, 8);
  commit(y, 8);
  free(2);  // LRU: 3 2 (tail first)
  free(1);  // LRU: 3 2 1 0
  loom_cache_usage u = usage();
  EXPECT_EQ(u.cached_blocks, 4);
  EXPECT_EQ(u.free_blocks, 4);

  Req z{3, seq(1001, 20)};
  ASSERT_EQ(can(z, 20), 1);
  EXPECT_EQ(alloc(z, 20), 0);
  EXPECT_EQ(table(3), (std::vector<int32_t>{4, 5, 6, 7, 3})) << "free blocks first, then y's tail";
  EXPECT_EQ(match(Req{4, seq(101, 9)}), 4) << "y's head block survived";
  EXPECT_EQ(match(Req{4, seq(1, 9)}), 8);
  z.computed = 20;
  ASSERT_EQ(append(z, 1), LOOM_OK);  // evicts y's head next
  EXPECT_EQ(table(3).back(), 2);
  EXPECT_EQ(match(Req{4, seq(101, 9)}), 0);
  u = usage();
  EXPECT_EQ(u.cached_blocks, 2);
  EXPECT_EQ(u.free_blocks, 0);
}

TEST_F(Paged, CanAllocateDoesNotCountReusedBlocksTwice) {
  open();
  run_and_free(Req{1, seq(1, 8)});  // blocks 0 1 cached, 6 free
  Req w{2, cat(seq(1, 8), seq(500, 24))};  // 32 tokens = 8 blocks, 2 of them a hit
  EXPECT_EQ(can(w, 32), 1);
  Req w2{3, cat(seq(1, 8), seq(500, 25))};  // 33 tokens = 9 blocks: 7 new, only 6 besides the hit
  EXPECT_EQ(can(w2, 33), 0);
  EXPECT_EQ(alloc(w, 32), 8);
  EXPECT_EQ(table(2), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  loom_cache_usage u = usage();
  EXPECT_EQ(u.used_blocks, 8);
  EXPECT_EQ(u.cached_blocks, 0);
  EXPECT_EQ(u.free_blocks, 0);
}

TEST_F(Paged, RefusalsChangeNothing) {
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

TEST_F(Paged, FitsIsTheWholePool) {
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

TEST_F(Paged, PrefixCachingCanBeTurnedOff) {
  open(R"({"num_blocks": 8, "block_size": 4, "enable_prefix_caching": false, "check_invariants": true})");
  run_and_free(Req{1, seq(1, 8)});
  EXPECT_EQ(match(Req{2, seq(1, 9)}), 0);
  EXPECT_EQ(alloc(Req{2, seq(1, 9)}, 9), 0);
  const loom_cache_usage u = usage();
  EXPECT_EQ(u.cached_blocks, 0);
  EXPECT_EQ(u.prefix_query_tokens, 0);
}

TEST_F(Paged, PoolSizeFromKvMemory) {
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

TEST_F(Paged, ConfigErrorsAreAllReported) {
  try {
    make(R"({"kv_memory": "lots", "num_blocks": 4, "block_size": 0, "enable_prefix_caching": 1, "colour": 1})");
    FAIL() << "a bad config was accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("kv_memory must be"), std::string::npos) << m;
    EXPECT_NE(m.find("block_size must be"), std::string::npos) << m;
    EXPECT_NE(m.find("enable_prefix_caching must be"), std::string::npos) << m;
    EXPECT_NE(m.find("unknown key \"colour\""), std::string::npos) << m;
    EXPECT_NE(m.find("not both"), std::string::npos) << m;
  }
  EXPECT_THROW(make(R"({"kv_memory": "12 parsecs"})"), Error);
  EXPECT_THROW(make(R"({"kv_memory": "1.2.3MB"})"), Error);
  EXPECT_THROW(make(R"({"num_blocks": 0})"), Error);
  EXPECT_THROW(make("[1]"), Error);
  EXPECT_THROW(make(R"({"kv_memory": 10, "block_size": 4})", 64), Error);  // not one block
}

// ---- interface 1.1: fork, copy-on-write, miss reasons (scenarios in cache_step_harness.hpp) ----

TEST_F(Paged, ForkPartialBlockThenBothWrite) { fork_partial_block_then_both_write(); }
TEST_F(Paged, ForkFullBlocksCopiesNothing) { fork_full_blocks_copies_nothing(); }
TEST_F(Paged, ForkOutlivesParent) { fork_outlives_parent(); }
TEST_F(Paged, ForkCopyNeedsABlock) { fork_copy_needs_a_block(); }
TEST_F(Paged, ForkRegistersSharedBlockOnce) { fork_registers_shared_block_once(); }
TEST_F(Paged, MissReasons) { miss_reasons(); }

}  // namespace
}  // namespace loom::test
