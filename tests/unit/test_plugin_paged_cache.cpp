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

TEST_F(Paged, NeverCachesEveryToken) { never_caches_every_token(); }

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

TEST_F(Paged, RefusalsChangeNothing) { refusals_change_nothing(); }

TEST_F(Paged, FitsIsTheWholePool) { fits_is_the_whole_pool(); }

TEST_F(Paged, PrefixCachingCanBeTurnedOff) { prefix_caching_can_be_turned_off(); }

TEST_F(Paged, PoolSizeFromKvMemory) { pool_size_from_kv_memory(); }

TEST_F(Paged, ConfigErrorsAreAllReported) { config_errors_are_all_reported(); }

// ---- interface 1.1: fork, copy-on-write, miss reasons (scenarios in cache_step_harness.hpp) ----

TEST_F(Paged, ForkPartialBlockThenBothWrite) { fork_partial_block_then_both_write(); }
TEST_F(Paged, ForkFullBlocksCopiesNothing) { fork_full_blocks_copies_nothing(); }
TEST_F(Paged, ForkOutlivesParent) { fork_outlives_parent(); }
TEST_F(Paged, ForkCopyNeedsABlock) { fork_copy_needs_a_block(); }
TEST_F(Paged, ForkRegistersSharedBlockOnce) { fork_registers_shared_block_once(); }
TEST_F(Paged, MissReasons) { miss_reasons(); }

}  // namespace
}  // namespace loom::test
