// cache/radix: radix-tree prefix reuse (full committed blocks only, salted subtrees, a split at
// the block boundary where a request diverges mid-edge), locked paths surviving eviction, LRU
// leaf eviction trimming tails and cascading to parents, the one-token-left rule, refused
// allocations changing nothing, fits, and config errors. Pools are tiny (block_size 4, 8 blocks)
// so every expectation is exact; check_invariants runs the plugin's own consistency check
// (tree vs pool vs live tables and locks) after every mutating call, in release builds too.
#include "cache_step_harness.hpp"

namespace loom::test {
namespace {

class Radix : public CacheSteps {
 protected:
  Radix() : CacheSteps("radix") {}
};

TEST_F(Radix, InsertAtCommitMatchFullBlocksOnly) {
  open();
  loom_cache_layout lay{};
  p_->call("layout", &loom_cache_vtable::layout, &lay);
  EXPECT_EQ(lay.num_blocks, 8);
  EXPECT_EQ(lay.block_size, 4);
  Req a{1, seq(1, 10)};  // blocks [1..4] [5..8] [9 10]
  EXPECT_EQ(alloc(a, 10), 0);
  EXPECT_EQ(table(1), (std::vector<int32_t>{0, 1, 2}));
  Req b{2, cat(seq(1, 8), seq(50, 3))};  // shares a's two full blocks
  EXPECT_EQ(match(b), 0) << "nothing is inserted before commit";
  commit(a, 7);  // K/V of the first block only
  EXPECT_EQ(match(b), 4);
  commit(a, 10);  // both full blocks (the node grows in place); the partial third never enters
  EXPECT_EQ(match(b), 8);
  EXPECT_EQ(usage().prefix_query_tokens, 10) << "match_prefix is a pure query";

  EXPECT_EQ(alloc(b, 11), 8);
  EXPECT_EQ(table(2), (std::vector<int32_t>{0, 1, 3}));
  loom_cache_usage u = usage();
  EXPECT_EQ(u.used_blocks, 4);
  EXPECT_EQ(u.prefix_hit_tokens, 8);
  EXPECT_EQ(u.prefix_query_tokens, 21);
  EXPECT_EQ(match(Req{3, cat(seq(1, 6), seq(70, 4))}), 4) << "a mismatch inside a block loses the block";
  EXPECT_EQ(match(Req{5, cat(seq(2, 8), seq(50, 3))}), 0);

  free(1);  // 0 and 1 stay used by b; a's partial block 2 is free again
  u = usage();
  EXPECT_EQ(u.used_blocks, 3);
  EXPECT_EQ(u.free_blocks, 5);
  EXPECT_EQ(u.cached_blocks, 0);
  free(2);  // 0 and 1 are now cached: in the tree, in no table
  u = usage();
  EXPECT_EQ(u.used_blocks, 0);
  EXPECT_EQ(u.cached_blocks, 2);
  EXPECT_EQ(u.free_blocks, 6);
  EXPECT_EQ(u.num_seqs, 0);
  Req f{6, b.tokens};
  EXPECT_EQ(alloc(f, 11), 8);
  EXPECT_EQ(table(6), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(usage().cached_blocks, 0);
  free(424242);  // unknown ids are not an error
  EXPECT_EQ(try_alloc(f, 1), LOOM_ERR_INVALID_ARGUMENT);  // already holds blocks
}

TEST_F(Radix, DivergingMidEdgeSplitsAtABlockBoundaryAndEvictionCascades) {
  open();
  run_and_free(Req{1, seq(1, 12)});  // one edge of three blocks: [0 1 2]
  EXPECT_EQ(usage().cached_blocks, 3);
  Req b{2, cat(seq(1, 8), seq(90, 5))};  // equal for two blocks, then diverges
  EXPECT_EQ(match(b), 8);
  EXPECT_EQ(alloc(b, 13), 8);  // splits the edge into [0 1] -> [2]
  EXPECT_EQ(table(2), (std::vector<int32_t>{0, 1, 3, 4}));
  commit(b, 13);  // inserts [3] beside [2] under [0 1]
  free(2);
  EXPECT_EQ(match(Req{3, seq(1, 13)}), 12) << "the split kept the old branch whole";
  EXPECT_EQ(match(Req{3, cat(b.tokens, seq(0, 1))}), 12) << "and the new branch sits beside it";
  loom_cache_usage u = usage();
  EXPECT_EQ(u.cached_blocks, 4);
  EXPECT_EQ(u.free_blocks, 4);

  // Leaves [2] (used before b) and [3] (released with b): [2] is the least recently used.
  Req c{4, seq(200, 20)};
  EXPECT_EQ(alloc(c, 20), 0);
  EXPECT_EQ(table(4), (std::vector<int32_t>{2, 4, 5, 6, 7}));
  EXPECT_EQ(match(Req{3, seq(1, 13)}), 8);
  EXPECT_EQ(match(Req{3, cat(b.tokens, seq(0, 1))}), 12);
  c.computed = 20;
  ASSERT_EQ(append(c, 4), LOOM_OK);  // then [3]; its parent [0 1] becomes a leaf
  EXPECT_EQ(table(4).back(), 3);
  EXPECT_EQ(match(Req{3, cat(b.tokens, seq(0, 1))}), 8);
  c.computed = 24;
  ASSERT_EQ(append(c, 4), LOOM_OK);  // the parent is trimmed from its tail
  EXPECT_EQ(table(4).back(), 1);
  EXPECT_EQ(match(Req{3, seq(1, 13)}), 4);
  c.computed = 28;
  ASSERT_EQ(append(c, 4), LOOM_OK);
  EXPECT_EQ(table(4).back(), 0);
  EXPECT_EQ(match(Req{3, seq(1, 13)}), 0);
  u = usage();
  EXPECT_EQ(u.used_blocks, 8);
  EXPECT_EQ(u.cached_blocks, 0);
  c.computed = 32;
  EXPECT_EQ(append(c, 1), LOOM_ERR_OUT_OF_MEMORY);
}

TEST_F(Radix, SaltsHaveSeparateSubtrees) {
  open();
  run_and_free(Req{1, seq(1, 8), 0, 7});
  EXPECT_EQ(match(Req{2, seq(1, 9), 0, 7}), 8);
  EXPECT_EQ(match(Req{2, seq(1, 9), 0, 0}), 0);
  EXPECT_EQ(match(Req{2, seq(1, 9), 0, 8}), 0);
  Req other{3, seq(1, 9), 0, 8};
  EXPECT_EQ(alloc(other, 9), 0);
  EXPECT_EQ(table(3), (std::vector<int32_t>{2, 3, 4}));
  commit(other, 9);
  free(3);
  const loom_cache_usage u = usage();
  EXPECT_EQ(u.cached_blocks, 4);
  EXPECT_EQ(match(Req{2, seq(1, 9), 0, 7}), 8);
  EXPECT_EQ(match(Req{2, seq(1, 9), 0, 8}), 8);
}

TEST_F(Radix, LockedPathIsNeverEvicted) {
  open();
  run_and_free(Req{1, seq(1, 12)});  // [0 1 2] cached
  Req b{2, cat(seq(1, 8), seq(60, 1))};
  EXPECT_EQ(alloc(b, 9), 8);  // locks [0 1]; [2] stays unlocked
  EXPECT_EQ(table(2), (std::vector<int32_t>{0, 1, 3}));
  loom_cache_usage u = usage();
  EXPECT_EQ(u.used_blocks, 3);
  EXPECT_EQ(u.cached_blocks, 1);
  EXPECT_EQ(u.free_blocks, 4);
  Req c{3, seq(300, 24)};
  EXPECT_EQ(can(c, 24), 0) << "locked blocks are not evictable";
  EXPECT_EQ(try_alloc(c, 24), LOOM_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(can(c, 20), 1);
  EXPECT_EQ(alloc(c, 20), 0);
  EXPECT_EQ(table(3), (std::vector<int32_t>{2, 4, 5, 6, 7}));
  EXPECT_EQ(match(Req{4, seq(1, 9)}), 8) << "the locked prefix survived";
  EXPECT_EQ(table(2), (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(try_alloc(Req{4, seq(500, 1)}, 1), LOOM_ERR_OUT_OF_MEMORY);
  free(2);  // unlocked now: evictable
  EXPECT_EQ(alloc(Req{4, seq(500, 5)}, 5), 0);
  EXPECT_EQ(table(4), (std::vector<int32_t>{1, 3})) << "the prefix's tail block, evicted, and the free one";
}

TEST_F(Radix, EvictsLeastRecentlyUsedLeafFirst) {
  open();
  run_and_free(Req{1, seq(1, 8)});    // X: [0 1]
  run_and_free(Req{2, seq(101, 8)});  // Y: [2 3], released after X
  Req z{3, seq(1, 9)};
  EXPECT_EQ(alloc(z, 9), 8);  // touches X again: now Y is the least recently used
  EXPECT_EQ(table(3), (std::vector<int32_t>{0, 1, 4}));
  free(3);
  Req w{4, seq(1001, 20)};
  EXPECT_EQ(alloc(w, 20), 0);
  EXPECT_EQ(table(4), (std::vector<int32_t>{3, 4, 5, 6, 7})) << "free blocks, then Y's tail";
  EXPECT_EQ(match(Req{5, seq(101, 9)}), 4);
  EXPECT_EQ(match(Req{5, seq(1, 9)}), 8);
  w.computed = 20;
  ASSERT_EQ(append(w, 4), LOOM_OK);  // Y's head next, before any of X
  EXPECT_EQ(table(4).back(), 2);
  EXPECT_EQ(match(Req{5, seq(101, 9)}), 0);
  EXPECT_EQ(match(Req{5, seq(1, 9)}), 8);
  const loom_cache_usage u = usage();
  EXPECT_EQ(u.cached_blocks, 2);
  EXPECT_EQ(u.free_blocks, 0);
}

TEST_F(Radix, SamePrefixComputedTwiceAdoptsTheFirstCopy) {
  open(R"({"num_blocks": 12, "block_size": 4, "check_invariants": true})");
  Req a{1, seq(1, 12)}, b{2, seq(1, 9)}, c{3, cat(seq(1, 8), seq(80, 5))};
  EXPECT_EQ(alloc(a, 12), 0);
  EXPECT_EQ(alloc(b, 9), 0);  // nothing committed yet: b and c compute the shared prefix too
  EXPECT_EQ(alloc(c, 13), 0);
  EXPECT_EQ(table(2), (std::vector<int32_t>{3, 4, 5}));
  EXPECT_EQ(table(3), (std::vector<int32_t>{6, 7, 8, 9}));
  commit(a, 12);  // [0 1 2]
  commit(b, 9);   // b takes a's [0 1] (splitting the edge) and lets 3 and 4 go
  EXPECT_EQ(table(2), (std::vector<int32_t>{0, 1, 5}));
  commit(c, 13);  // c takes [0 1] too and inserts its own third block beside a's
  EXPECT_EQ(table(3), (std::vector<int32_t>{0, 1, 8, 9}));
  loom_cache_usage u = usage();
  EXPECT_EQ(u.used_blocks, 6);
  EXPECT_EQ(u.free_blocks, 6);
  b.tokens.insert(b.tokens.end(), {42, 43, 44});
  ASSERT_EQ(append(b, 3), LOOM_OK);
  commit(b, 12);  // b's third block goes under the shared [0 1]
  free(1);
  free(2);
  free(3);
  u = usage();
  EXPECT_EQ(u.cached_blocks, 5);
  EXPECT_EQ(u.free_blocks, 7);
  EXPECT_EQ(match(Req{4, seq(1, 13)}), 12);
  EXPECT_EQ(match(Req{4, cat(seq(1, 8), seq(80, 5))}), 12);
  EXPECT_EQ(match(Req{4, cat(seq(1, 9), {42, 43, 44, 45})}), 12);
}

TEST_F(Radix, NeverCachesEveryToken) { never_caches_every_token(); }

TEST_F(Radix, CanAllocateDoesNotCountReusedBlocksTwice) {
  open();
  run_and_free(Req{1, seq(1, 8)});  // blocks 0 1 cached, 6 free
  Req w{2, cat(seq(1, 8), seq(500, 24))};  // 32 tokens = 8 blocks, 2 of them a hit
  EXPECT_EQ(can(w, 32), 1);
  Req w2{3, cat(seq(1, 8), seq(500, 25))};  // 33 tokens = 9 blocks: 7 new, only 6 besides the hit
  EXPECT_EQ(can(w2, 33), 0);
  EXPECT_EQ(try_alloc(w2, 33), LOOM_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(usage().cached_blocks, 2) << "a refused allocation locks and splits nothing";
  EXPECT_EQ(alloc(w, 32), 8);
  EXPECT_EQ(table(2), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  const loom_cache_usage u = usage();
  EXPECT_EQ(u.used_blocks, 8);
  EXPECT_EQ(u.cached_blocks, 0);
  EXPECT_EQ(u.free_blocks, 0);
}

TEST_F(Radix, RefusalsChangeNothing) { refusals_change_nothing(); }

TEST_F(Radix, FitsIsTheWholePool) { fits_is_the_whole_pool(); }

TEST_F(Radix, PrefixCachingCanBeTurnedOff) { prefix_caching_can_be_turned_off(); }

TEST_F(Radix, PoolSizeFromKvMemory) { pool_size_from_kv_memory(); }

TEST_F(Radix, ConfigErrorsAreAllReported) { config_errors_are_all_reported(); }

// ---- interface 1.1: fork, copy-on-write, miss reasons (scenarios in cache_step_harness.hpp) ----

TEST_F(Radix, ForkPartialBlockThenBothWrite) { fork_partial_block_then_both_write(); }
TEST_F(Radix, ForkFullBlocksCopiesNothing) { fork_full_blocks_copies_nothing(); }
TEST_F(Radix, ForkOutlivesParent) { fork_outlives_parent(); }
TEST_F(Radix, ForkCopyNeedsABlock) { fork_copy_needs_a_block(); }
TEST_F(Radix, ForkRegistersSharedBlockOnce) { fork_registers_shared_block_once(); }
TEST_F(Radix, MissReasons) { miss_reasons(); }

// A fork locks its parent's tree path: the lock survives a split of that path by a third
// request and the parent's end, and keeps the path from eviction until the child frees it.
TEST_F(Radix, ForkHoldsItsTreePathThroughSplitAndParentEnd) {
  open();
  Req a{1, seq(1, 10)};  // [1..4] [5..8] [9 10]
  alloc(a, 10);          // 0 1 2
  commit(a, 10);         // one edge [0 1]
  ASSERT_EQ(fork(a, 2), LOOM_OK);
  Req b{3, cat(seq(1, 4), seq(70, 5))};  // shares one block: the edge splits into [0] -> [1]
  EXPECT_EQ(alloc(b, 9), 4);
  EXPECT_EQ(table(3), (std::vector<int32_t>{0, 3, 4}));
  free(3);
  free(1);
  loom_cache_usage u = usage();
  EXPECT_EQ(u.used_blocks, 3) << "the child's 0 1 2";
  EXPECT_EQ(u.cached_blocks, 0) << "its path is locked, not evictable";
  EXPECT_EQ(can(Req{4, seq(500, 21)}, 21), 0) << "6 blocks; only 5 are not the child's";
  EXPECT_EQ(alloc(Req{4, seq(500, 20)}, 20), 0);
  EXPECT_EQ(table(4), (std::vector<int32_t>{3, 4, 5, 6, 7}));
  Req c{2, cat(seq(1, 10), {11})};
  EXPECT_EQ(alloc(c, 11), 10);
  EXPECT_EQ(table(2), (std::vector<int32_t>{0, 1, 2})) << "the parent is gone: block 2 is written in place";
  EXPECT_EQ(copies(), Copies{});
  commit(c, 11);
  free(2);
  free(4);
  u = usage();
  EXPECT_EQ(u.cached_blocks, 2);
  EXPECT_EQ(u.free_blocks, 6);
  EXPECT_EQ(match(Req{5, seq(1, 9)}), 8);
}

}  // namespace
}  // namespace loom::test
