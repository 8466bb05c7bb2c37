// cache/radix with block-table groups (cache interface 1.5): a windowed group's blocks that leave
// the window are released from the sequence but stay in the tree, cached; eviction trims unlocked
// leaves (a tail position's windowed blocks one at a time, the full-attention one with the
// position) and then tombstones released blocks of locked paths; a hit reaches only as far as
// every group holds what its window reads; a sequence that computed a prefix another cached first
// adopts the tree's blocks and fills its tombstones; evicted blocks carry their group's chained
// hash. Block size 4, 16 blocks, group 0 full attention and group 1 a window of 8 tokens (a query
// at position p reads p - 7 .. p), so every expectation is exact; check_invariants runs the
// plugin's own consistency check after every mutating call.
#include <span>

#include "cache_step_harness.hpp"
#include "plugins/cache/common/block_hash.hpp"

namespace loom::test {
namespace {

constexpr const char* kPool = R"({"num_blocks": 16, "block_size": 4, "check_invariants": true})";

class RadixGroups : public CacheSteps {
 protected:
  RadixGroups() : CacheSteps("radix") {}

  void open_groups(std::vector<int32_t> windows) {
    windows_ = std::move(windows);
    loom_cache_create_args a{};
    a.struct_size = sizeof(a);
    a.n_layers = 2 * static_cast<int32_t>(windows_.size());
    a.n_kv_heads = 1;
    a.head_dim = 2;
    a.kv_dtype = LOOM_DTYPE_F32;
    a.bytes_per_token = 16;
    a.max_model_len = 1024;
    a.n_groups = static_cast<int32_t>(windows_.size());
    a.group_windows = windows_.data();
    p_ = host_.create(PluginSpec{LOOM_KIND_CACHE, "radix", "", kPool}, &a);
  }
  std::vector<int32_t> group(uint64_t id, int32_t g) {
    loom_block_list l{};
    p_->call("group_block_table", &loom_cache_vtable::group_block_table, id, g, &l);
    return std::vector<int32_t>(l.ids, l.ids + l.count);
  }
  int32_t evict_cached(int32_t n) {
    int32_t count = -1;
    p_->call("evict_cached", &loom_cache_vtable::evict_cached, n, &count);
    return count;
  }
  std::vector<loom_evicted_block> evicted() {
    loom_evicted_block_list l{};
    p_->call("take_evicted", &loom_cache_vtable::take_evicted, &l);
    return std::vector<loom_evicted_block>(l.items, l.items + l.count);
  }
  static std::vector<int32_t> ids(const std::vector<loom_evicted_block>& e) {
    std::vector<int32_t> out;
    for (const loom_evicted_block& b : e) out.push_back(b.block_id);
    return out;
  }
  std::vector<uint64_t> block_hashes(const Req& r) {
    const loom_request_view v = r.view();
    std::vector<uint64_t> out(64);
    int32_t n = -1;
    p_->call("block_hashes", &loom_cache_vtable::block_hashes, &v, out.data(), 64, &n);
    out.resize(static_cast<size_t>(n));
    return out;
  }
  // The chained hash of tokens' first n blocks in group g's chain (salt 0).
  static uint64_t chain(const std::vector<int32_t>& tokens, int32_t n, size_t g) {
    uint64_t h = block_cache::kRootHash;
    for (int32_t i = 0; i < n; ++i) {
      const std::span<const int32_t> block = std::span<const int32_t>(tokens).subspan(4 * static_cast<size_t>(i), 4);
      h = block_cache::block_hash(h, block_cache::group_salt(0, g), block);
    }
    return h;
  }

  std::vector<int32_t> windows_;
};

using T = std::vector<int32_t>;

TEST_F(RadixGroups, AReleasedTreeBlockStaysCachedUntilEvictionTombstonesIt) {
  open_groups({0, 8});
  Req a{1, seq(1, 16)};
  EXPECT_EQ(alloc(a, 16), 0);
  EXPECT_EQ(group(1, 0), (T{0, 1, 2, 3}));
  EXPECT_EQ(group(1, 1), (T{4, 5, 6, 7}));
  commit(a, 16);
  // Decoding position 16 reads 9..16: group 1's blocks 0 and 1 (tokens 0..7) leave its table
  // but stay in the tree.
  a.tokens.push_back(100);
  EXPECT_EQ(append(a, 1), LOOM_OK);
  EXPECT_EQ(group(1, 0), (T{0, 1, 2, 3, 8}));
  EXPECT_EQ(group(1, 1), (T{-1, -1, 6, 7, 9}));
  loom_cache_usage u = usage();
  EXPECT_EQ(u.used_blocks, 8);
  EXPECT_EQ(u.cached_blocks, 2);
  EXPECT_EQ(u.free_blocks, 6);

  // 4 blocks in each group: the 6 free ones and the 2 released, which eviction tombstones (the
  // path stays locked by request 1).
  Req b{2, seq(50, 16)};
  EXPECT_EQ(can(b, 20), 0) << "10 blocks, 8 free or evictable";
  EXPECT_EQ(alloc(b, 16), 0);
  EXPECT_EQ(group(2, 0), (T{4, 5, 10, 11}));
  EXPECT_EQ(group(2, 1), (T{12, 13, 14, 15}));
  u = usage();
  EXPECT_EQ(u.used_blocks, 16);
  EXPECT_EQ(u.cached_blocks, 0);
  const std::vector<loom_evicted_block> gone = evicted();
  ASSERT_EQ(ids(gone), (T{4, 5}));
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(gone[i].hash, chain(a.tokens, static_cast<int32_t>(i) + 1, 1)) << "group 1's chain";
    EXPECT_EQ(gone[i].salt, block_cache::group_salt(0, 1));
    EXPECT_EQ(gone[i].num_tokens, 4);
  }

  // The tombstones do not stop a hit whose window starts past them (token 16 reads 9..16)...
  EXPECT_EQ(match(Req{3, cat(seq(1, 16), T{7})}), 16);
  // ...but a hit ending at token 8 needs group 1's blocks 0 and 1, and one at 4 its block 0.
  EXPECT_EQ(match(Req{3, cat(seq(1, 8), T{7})}), 0);
  free(1);
  free(2);
  EXPECT_EQ(usage().used_blocks, 0);
}

TEST_F(RadixGroups, AdoptionFillsATombstone) {
  open_groups({0, 8});
  Req a{1, seq(1, 12)};
  Req b{2, cat(seq(1, 12), T{99})};  // computes the same three blocks before a commits
  EXPECT_EQ(alloc(a, 12), 0);
  EXPECT_EQ(alloc(b, 13), 0);
  EXPECT_EQ(group(2, 0), (T{6, 7, 8, 9}));
  EXPECT_EQ(group(2, 1), (T{10, 11, 12, 13}));
  commit(a, 12);
  a.tokens.push_back(5);
  EXPECT_EQ(append(a, 1), LOOM_OK);  // position 12 reads 5..12: group 1's block 0 leaves a
  EXPECT_EQ(group(1, 1), (T{-1, 4, 5, 15}));
  EXPECT_EQ(evict_cached(8), 1) << "only that block is cached";
  EXPECT_EQ(ids(evicted()), (T{3}));

  commit(b, 12);  // b adopts the tree's blocks, and its own block 10 fills the tombstone
  EXPECT_EQ(group(2, 0), (T{0, 1, 2, 9}));
  EXPECT_EQ(group(2, 1), (T{10, 4, 5, 13}));
  loom_cache_usage u = usage();
  EXPECT_EQ(u.used_blocks, 10);
  EXPECT_EQ(u.free_blocks, 6) << "3 was evicted, and b's own copies 6, 7, 8, 11 and 12 went back";
  free(2);
  free(1);
  EXPECT_EQ(match(Req{3, cat(seq(1, 8), T{7})}), 8) << "block 10 holds group 1's first block again";
}

TEST_F(RadixGroups, LeafEvictionTakesATailPositionsWindowedBlockFirst) {
  open_groups({0, 8});
  run_and_free(Req{1, seq(1, 12)});
  EXPECT_EQ(usage().cached_blocks, 6);
  const Req again{2, cat(seq(1, 12), T{7})};
  const std::vector<uint64_t> hashes = block_hashes(again);
  ASSERT_EQ(hashes.size(), 3u);
  EXPECT_EQ(match(again), 12);

  EXPECT_EQ(evict_cached(1), 1);
  std::vector<loom_evicted_block> gone = evicted();
  ASSERT_EQ(ids(gone), (T{5})) << "group 1's block of the last position";
  EXPECT_EQ(gone[0].hash, chain(again.tokens, 3, 1));
  EXPECT_EQ(match(again), 8) << "token 12's window needs group 1's block 2";

  EXPECT_EQ(evict_cached(1), 1);
  gone = evicted();
  ASSERT_EQ(ids(gone), (T{2})) << "group 0's block goes with its position";
  EXPECT_EQ(gone[0].hash, hashes[2]) << "group 0's chain is block_hashes'";
  EXPECT_EQ(gone[0].salt, 0u);
  EXPECT_EQ(match(again), 8);

  EXPECT_EQ(evict_cached(16), 4);
  gone = evicted();
  EXPECT_EQ(ids(gone), (T{4, 1, 3, 0}));
  EXPECT_EQ(gone[1].hash, hashes[1]);
  EXPECT_EQ(gone[3].hash, hashes[0]);
  EXPECT_EQ(usage().cached_blocks, 0);
  EXPECT_EQ(match(again), 0);
}

TEST_F(RadixGroups, ForkSharesEveryGroupsTableAndAHitLocksOnlyTheWindow) {
  open_groups({0, 8});
  Req a{1, seq(1, 16)};
  alloc(a, 16);
  commit(a, 16);
  a.tokens.push_back(3);
  EXPECT_EQ(append(a, 1), LOOM_OK);
  commit(a, 17);
  EXPECT_EQ(fork(a, 2), LOOM_OK);
  EXPECT_EQ(group(2, 0), group(1, 0));
  EXPECT_EQ(group(2, 1), (T{-1, -1, 6, 7, 9}));
  free(2);

  // A new request with the same 16 tokens holds group 1's blocks 2 and 3 only.
  Req c{3, cat(seq(1, 16), T{40})};
  EXPECT_EQ(alloc(c, 17), 16);
  EXPECT_EQ(group(3, 0), (T{0, 1, 2, 3, 10}));
  EXPECT_EQ(group(3, 1), (T{-1, -1, 6, 7, 11}));
  free(1);
  loom_cache_usage u = usage();
  EXPECT_EQ(u.used_blocks, 8);
  EXPECT_EQ(u.cached_blocks, 2) << "group 1's blocks 4 and 5; a's partial blocks 8 and 9 are free";
  free(3);
  EXPECT_EQ(usage().used_blocks, 0);
}

TEST_F(RadixGroups, OneWindowedGroupReleasesItsBlocksToo) {
  open_groups({8});
  Req a{1, seq(1, 16)};
  alloc(a, 16);
  commit(a, 16);
  a.tokens.push_back(1);
  EXPECT_EQ(append(a, 1), LOOM_OK);
  EXPECT_EQ(table(1), (T{-1, -1, 2, 3, 4}));
  EXPECT_EQ(usage().cached_blocks, 2);
  EXPECT_EQ(evict_cached(16), 2) << "tombstones of the locked path";
  EXPECT_EQ(match(Req{2, cat(seq(1, 16), T{7})}), 16) << "the window of token 16 starts at block 2";
  free(1);
  EXPECT_EQ(match(Req{2, cat(seq(1, 16), T{7})}), 16);
  EXPECT_EQ(evict_cached(16), 2);
  EXPECT_EQ(match(Req{2, cat(seq(1, 16), T{7})}), 0);
}

}  // namespace
}  // namespace loom::test
