// KvSwapper over the real host tier and a real KvPool (2 layers, 16 blocks of 4 tokens, 1 KV head
// of dim 2, f32: 128 bytes a block): exact token counts, K/V bytes equal after a round trip,
// chunked restores (continuing inside a loaded block), evicted entries, all-or-nothing when the
// tier is short, forget, re-preemption mid-restore, and the engine's per-step helper
// restore_swapped (never the last token of a finishing chunk). With block-table groups: every
// group's held blocks saved under keys of their own, released (-1) entries neither saved nor
// written, and a restore that passes them only when it reaches the first token no window reads
// them from.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "core/engine/kv_block_copy.hpp"
#include "core/engine/kv_swap.hpp"
#include "core/plugin/plugin_host.hpp"

namespace loom {
namespace {

constexpr int32_t kBlockSize = 4;

using Table = std::vector<int32_t>;

// A request's tables, one per block-table group, as the cache would show them.
struct GroupTableSet {
  std::vector<Table> tables;  // [group][block]
  std::vector<std::span<const int32_t>> views;
  explicit GroupTableSet(std::vector<Table> t) : tables(std::move(t)) {
    for (const Table& table : tables) views.emplace_back(table);
  }
  GroupTables all() const { return views; }
};

class KvSwap : public ::testing::Test {
 protected:
  static KvPoolShape shape() {
    KvPoolShape s;
    s.n_layers = 2;
    s.num_blocks = 16;
    s.block_size = kBlockSize;
    s.n_kv_heads = 1;
    s.head_dim = 2;
    s.dtype = LOOM_DTYPE_F32;
    return s;
  }
  static constexpr int64_t kBytesPerBlock = 2 * 2 * kBlockSize * 1 * 2 * 4;  // layers * (K,V) * block

  // The tier over pool_, with `capacity` bytes; every pool block filled with its own values.
  void open(const std::string& capacity = "\"1MiB\"", std::vector<int32_t> windows = {0}) {
    loom_cache_offload_create_args args{};
    args.struct_size = sizeof(args);
    args.copy = make_kv_copy_ops(pool_);
    ASSERT_EQ(args.copy.bytes_per_block, kBytesPerBlock);
    tier_ = host_.create(PluginSpec{LOOM_KIND_CACHE_OFFLOAD, "host", "", "{\"capacity\": " + capacity + "}"}, &args);
    swapper_ = std::make_unique<KvSwapper>(*tier_, kBytesPerBlock, std::move(windows));
    for (int32_t b = 0; b < shape().num_blocks; ++b) fill(b, b + 1);
  }

  // Writes values derived from seed into every K and V element of `block`, in every layer.
  void fill(int32_t block, int seed) {
    const int64_t per_block = kBlockSize * 1 * 2;  // [block_size, n_kv_heads, head_dim]
    for (int32_t layer = 0; layer < 2; ++layer) {
      for (loom_tensor_view* view : {&pool_.k(layer), &pool_.v(layer)}) {
        float* data = static_cast<float*>(view->data) + per_block * block;
        const float v_offset = view == &pool_.v(layer) ? 0.5f : 0.0f;  // K and V differ too
        for (int64_t i = 0; i < per_block; ++i) data[i] = static_cast<float>(seed * 1000 + layer * 100 + i) + v_offset;
      }
    }
  }
  // Every K and V element of `block` over the layers: [n_layers, 2, block_size * n_kv_heads * head_dim].
  std::vector<float> contents(int32_t block) {
    std::vector<float> out;
    const int64_t per_block = kBlockSize * 1 * 2;
    for (int32_t layer = 0; layer < 2; ++layer) {
      for (loom_tensor_view* view : {&pool_.k(layer), &pool_.v(layer)}) {
        const float* data = static_cast<const float*>(view->data) + per_block * block;
        out.insert(out.end(), data, data + per_block);
      }
    }
    return out;
  }
  // The three-group swapper (below) over a tier of `capacity`, and request 1 swapped out as
  // kSwapped, 12 tokens; returns pool blocks 0..6 as they were.
  std::vector<std::vector<float>> swap_out_groups(const std::string& capacity = "\"1MiB\"");
  // Every held block of kSwapped's (below) in the same place of `tables`, as it was (`was`: block
  // b's contents, by pool id).
  void expect_held_blocks_in(const GroupTableSet& tables, const std::vector<std::vector<float>>& was);
  int64_t entries() {
    loom_cache_offload_usage u{};
    u.struct_size = sizeof(u);
    tier_->call("usage", &loom_cache_offload_vtable::usage, &u);
    EXPECT_EQ(u.used_bytes, u.num_entries * kBytesPerBlock);
    return u.num_entries;
  }

  ThreadPool threads_{1};
  PluginHost host_{threads_, {}};
  KvPool pool_{shape()};
  std::unique_ptr<LoadedPlugin> tier_;
  std::unique_ptr<KvSwapper> swapper_;
};

TEST_F(KvSwap, RoundTripRestoresExactTokensAndBytes) {
  open();
  const std::vector<float> b5 = contents(5), b2 = contents(2), b7 = contents(7);
  EXPECT_EQ(swapper_->swap_out(1, Table{5, 2, 7}, 10, kBlockSize), 10);  // 3 blocks, the last holds 2 tokens
  EXPECT_TRUE(swapper_->has_swapped(1));
  EXPECT_EQ(swapper_->swapped_tokens(1), 10);
  EXPECT_EQ(swapper_->swapped_out_blocks_total(), 3);
  EXPECT_EQ(entries(), 3);
  for (int32_t b = 0; b < 8; ++b) fill(b, 50 + b);  // the pool reuses every block meanwhile

  EXPECT_EQ(swapper_->swap_in(1, Table{1, 3, 6}, 0, 100, kBlockSize), 10);
  EXPECT_EQ(contents(1), b5);
  EXPECT_EQ(contents(3), b2);
  EXPECT_EQ(contents(6), b7);
  EXPECT_NE(contents(0), b5);  // nothing else written
  EXPECT_EQ(swapper_->swapped_in_blocks_total(), 3);
  EXPECT_FALSE(swapper_->has_swapped(1)) << "fully restored: the entries go";
  EXPECT_EQ(entries(), 0);
  EXPECT_EQ(swapper_->swap_in(1, Table{1, 3, 6}, 0, 100, kBlockSize), 0);
}

TEST_F(KvSwap, ChunkedRestoreContinuesInsideLoadedBlocks) {
  open();
  const std::vector<float> b4 = contents(4), b6 = contents(6);
  ASSERT_EQ(swapper_->swap_out(1, Table{3, 4, 6}, 10, kBlockSize), 10);
  EXPECT_EQ(swapper_->swap_in(1, Table{0, 1, 2}, 1, 8, kBlockSize), 0) << "unaligned start, nothing loaded";
  EXPECT_EQ(entries(), 2) << "block 0 holds tokens now in the pool: its entry is dropped";
  // Block 0's tokens are computed now. A 3-token chunk from token 4 loads block 1 whole...
  EXPECT_EQ(swapper_->swap_in(1, Table{0, 1, 2}, 4, 3, kBlockSize), 3);
  EXPECT_EQ(contents(1), b4);
  EXPECT_EQ(entries(), 1);
  // ...so the next chunk, from token 7, finds token 7 in the pool already and goes on from block
  // 2, which holds the last 2 saved tokens.
  EXPECT_EQ(swapper_->swap_in(1, Table{0, 1, 2}, 7, 2, kBlockSize), 2);
  EXPECT_EQ(contents(2), b6);
  EXPECT_EQ(entries(), 0);
  EXPECT_TRUE(swapper_->has_swapped(1)) << "token 9 is in the pool, not yet claimed";
  EXPECT_EQ(swapper_->swap_in(1, Table{0, 1, 2}, 9, 5, kBlockSize), 1);
  EXPECT_FALSE(swapper_->has_swapped(1));
  EXPECT_EQ(swapper_->swapped_in_blocks_total(), 2);
}

TEST_F(KvSwap, UnalignedStartDropsOnlyWhatItPassed) {
  open();
  ASSERT_EQ(swapper_->swap_out(1, Table{0, 1, 2}, 12, kBlockSize), 12);
  // Tokens [0, 6) computed: blocks 0 and 1 are in the pool (block 1 partly), block 2 still restorable.
  EXPECT_EQ(swapper_->swap_in(1, Table{5, 6, 7}, 6, 6, kBlockSize), 0);
  EXPECT_EQ(entries(), 1);
  EXPECT_EQ(swapper_->swap_in(1, Table{5, 6, 7}, 8, 4, kBlockSize), 4);
  EXPECT_FALSE(swapper_->has_swapped(1));
}

TEST_F(KvSwap, AllOrNothingWhenTheTierIsShort) {
  open(std::to_string(2 * kBytesPerBlock));  // room for 2 blocks
  EXPECT_EQ(swapper_->swap_out(1, Table{0, 1, 2}, 9, kBlockSize), 0);
  EXPECT_FALSE(swapper_->has_swapped(1));
  EXPECT_EQ(entries(), 0);
  EXPECT_EQ(swapper_->swapped_out_blocks_total(), 0);
  EXPECT_EQ(swapper_->swap_in(1, Table{0, 1, 2}, 0, 9, kBlockSize), 0);
  EXPECT_EQ(swapper_->swap_out(2, Table{3, 4}, 8, kBlockSize), 8);  // what fits still goes
  EXPECT_EQ(entries(), 2);
}

TEST_F(KvSwap, EvictedEntriesEndTheRestorableRange) {
  open(std::to_string(3 * kBytesPerBlock));
  const std::vector<float> b1 = contents(1);
  ASSERT_EQ(swapper_->swap_out(1, Table{0, 1}, 8, kBlockSize), 8);
  ASSERT_EQ(swapper_->swap_out(2, Table{2, 3}, 8, kBlockSize), 8);  // evicts request 1's block 0 (LRU)
  EXPECT_EQ(entries(), 3);
  EXPECT_EQ(swapper_->swap_in(1, Table{5, 6}, 0, 8, kBlockSize), 0) << "block 0 is gone";
  EXPECT_TRUE(swapper_->has_swapped(1)) << "block 1 is still there";
  EXPECT_EQ(swapper_->swap_in(1, Table{5, 6}, 4, 4, kBlockSize), 4);  // once block 0 was recomputed
  EXPECT_EQ(contents(6), b1);
}

TEST_F(KvSwap, ForgetFreesEntries) {
  open();
  ASSERT_EQ(swapper_->swap_out(1, Table{0, 1, 2}, 12, kBlockSize), 12);
  ASSERT_EQ(swapper_->swap_out(2, Table{3}, 3, kBlockSize), 3);
  EXPECT_EQ(entries(), 4);
  swapper_->forget(1);
  EXPECT_FALSE(swapper_->has_swapped(1));
  EXPECT_EQ(entries(), 1);
  EXPECT_EQ(swapper_->swap_in(1, Table{4, 5, 6}, 0, 12, kBlockSize), 0);
  swapper_->forget(1);  // twice, and unknown ids: not an error
  swapper_->forget(99);
  EXPECT_TRUE(swapper_->has_swapped(2));
}

TEST_F(KvSwap, PreemptedAgainMidRestoreKeepsTheRest) {
  open();
  const std::vector<float> b0 = contents(0), b1 = contents(1), b2 = contents(2);
  ASSERT_EQ(swapper_->swap_out(1, Table{0, 1, 2}, 10, kBlockSize), 10);
  ASSERT_EQ(swapper_->swap_in(1, Table{4, 5, 6}, 0, 4, kBlockSize), 4);  // block 0 back, into pool block 4
  // Preempted with exactly the restored block computed: saving it completes the range.
  EXPECT_EQ(swapper_->swap_out(1, Table{4}, 4, kBlockSize), 10);
  EXPECT_EQ(entries(), 3);
  for (int32_t b = 0; b < 8; ++b) fill(b, 70 + b);
  EXPECT_EQ(swapper_->swap_in(1, Table{7, 3, 5}, 0, 10, kBlockSize), 10);
  EXPECT_EQ(contents(7), b0);
  EXPECT_EQ(contents(3), b1);
  EXPECT_EQ(contents(5), b2);

  // Preempted one token into a loaded block: the whole loaded block is saved again, and the
  // entries after it still continue it.
  for (int32_t b = 0; b < 8; ++b) fill(b, b + 1);
  ASSERT_EQ(swapper_->swap_out(3, Table{0, 1, 2}, 10, kBlockSize), 10);
  ASSERT_EQ(swapper_->swap_in(3, Table{4, 5, 6}, 0, 3, kBlockSize), 3);  // block 0 loaded whole
  EXPECT_EQ(swapper_->swap_out(3, Table{4}, 3, kBlockSize), 10);
  for (int32_t b = 0; b < 8; ++b) fill(b, 90 + b);
  EXPECT_EQ(swapper_->swap_in(3, Table{7, 3, 5}, 0, 10, kBlockSize), 10);
  EXPECT_EQ(contents(7), b0);
  EXPECT_EQ(contents(3), b1);
  EXPECT_EQ(contents(5), b2);

  // Preempted at an unaligned point instead: a fresh save of what the pool holds replaces it all.
  ASSERT_EQ(swapper_->swap_out(2, Table{0, 1, 2}, 12, kBlockSize), 12);
  ASSERT_EQ(swapper_->swap_in(2, Table{4, 5, 6}, 0, 4, kBlockSize), 4);
  EXPECT_EQ(swapper_->swap_out(2, Table{4, 5}, 6, kBlockSize), 6);
  EXPECT_EQ(entries(), 2);
  EXPECT_EQ(swapper_->swapped_tokens(2), 6);
}

TEST_F(KvSwap, SwapOutChecksTheTable) {
  open();
  EXPECT_THROW(swapper_->swap_out(1, Table{0, 1}, 9, kBlockSize), Error);
  EXPECT_EQ(swapper_->swap_out(1, Table{}, 0, kBlockSize), 0);
  EXPECT_FALSE(swapper_->has_swapped(1));
}

TEST_F(KvSwap, RestoreForStepKeepsTheLastTokenComputed) {
  open();
  // Decoding request preempted with 10 tokens computed; it holds 11 (the last sampled).
  ASSERT_EQ(swapper_->swap_out(1, Table{0, 1, 2}, 10, kBlockSize), 10);
  const Table table{5, 6, 7};
  const std::span<const int32_t> t[] = {table};
  SwapInStep step{1, 0, 11, 11, t};
  EXPECT_EQ(restore_swapped(*swapper_, step, kBlockSize), 10) << "computes only token 10";

  // 12 tokens saved and the chunk ends at num_tokens = 12: the last block stays to compute.
  ASSERT_EQ(swapper_->swap_out(2, Table{0, 1, 2}, 12, kBlockSize), 12);
  step = SwapInStep{2, 0, 12, 12, t};
  EXPECT_EQ(restore_swapped(*swapper_, step, kBlockSize), 11) << "all but the last token";

  // A prefix hit covers block 0; a chunk short of the end is restored whole.
  ASSERT_EQ(swapper_->swap_out(3, Table{0, 1, 2}, 12, kBlockSize), 12);
  step = SwapInStep{3, 4, 4, 20, t};
  EXPECT_EQ(restore_swapped(*swapper_, step, kBlockSize), 4);
  EXPECT_EQ(swapper_->swapped_tokens(3), 12);
  step = SwapInStep{3, 8, 12, 20, t};
  EXPECT_EQ(restore_swapped(*swapper_, step, kBlockSize), 4) << "only what was saved";
  EXPECT_FALSE(swapper_->has_swapped(3));
  swapper_->forget(2);  // its last token is computed, not restored: it never asks again
  EXPECT_EQ(entries(), 0);
}

TEST_F(KvSwap, RestoreForStepOverAWholeStep) {
  open();
  ASSERT_EQ(swapper_->swap_out(1, Table{0, 1}, 7, kBlockSize), 7);
  const Table table1{3, 4}, table2{5};
  const std::span<const int32_t> t1[] = {table1}, t2[] = {table2};
  const std::vector<SwapInStep> steps{{1, 0, 8, 8, t1}, {2, 0, 3, 3, t2}, {1, 7, 0, 8, t1}};
  EXPECT_EQ(restore_swapped(*swapper_, steps, kBlockSize), (std::vector<int32_t>{7, 0, 0}));
  EXPECT_EQ(swapper_->swapped_in_blocks_total(), 2);
}

// Three groups: 0 of full attention, 1 and 2 of window 4 (tokens of block size 4). A request of
// 12 computed tokens whose last room was made from token 7 or later: the windowed groups released
// block 0 (tokens 0..3, before 7 - 4 + 1), so computing may resume from token 1 * 4 + 4 - 1 = 7 on.
constexpr int32_t kGroupWindows[] = {0, 4, 4};

const GroupTableSet kSwapped({{0, 1, 2}, {-1, 3, 4}, {-1, 5, 6}});
const GroupTableSet kNew({{8, 9, 10}, {11, 12, 13}, {14, 15, 7}});

std::vector<std::vector<float>> KvSwap::swap_out_groups(const std::string& capacity) {
  open(capacity, {kGroupWindows, kGroupWindows + 3});
  std::vector<std::vector<float>> was;
  for (int32_t b = 0; b < 7; ++b) was.push_back(contents(b));
  EXPECT_EQ(swapper_->swap_out(1, kSwapped.all(), 12, kBlockSize), 12);
  return was;
}

void KvSwap::expect_held_blocks_in(const GroupTableSet& tables, const std::vector<std::vector<float>>& was) {
  for (size_t g = 0; g < 3; ++g) {
    for (size_t i = 0; i < 3; ++i) {
      const int32_t from = kSwapped.tables[g][i];
      if (from < 0) continue;
      EXPECT_EQ(contents(tables.tables[g][i]), was[static_cast<size_t>(from)]) << "group " << g << " block " << i;
    }
  }
}

TEST_F(KvSwap, GroupsSaveTheirHeldBlocksAndRestoreThemIntoTheirOwnTables) {
  const std::vector<std::vector<float>> was = swap_out_groups();
  EXPECT_EQ(swapper_->swapped_out_blocks_total(), 7) << "3 + 2 + 2 held blocks; the released ones are not saved";
  EXPECT_EQ(entries(), 7) << "one entry each: no two groups share a key";
  for (int32_t b = 0; b < 16; ++b) fill(b, 40 + b);
  const std::vector<float> stand_in_1 = contents(11), stand_in_2 = contents(14);

  EXPECT_EQ(swapper_->swap_in(1, kNew.all(), 0, 12, kBlockSize), 12);
  expect_held_blocks_in(kNew, was);
  EXPECT_EQ(contents(11), stand_in_1) << "a released block's stand-in is not written";
  EXPECT_EQ(contents(14), stand_in_2);
  EXPECT_EQ(swapper_->swapped_in_blocks_total(), 7);
  EXPECT_FALSE(swapper_->has_swapped(1));
  EXPECT_EQ(entries(), 0);
}

TEST_F(KvSwap, AGroupRestoreStopsOnlyWhereNoWindowReadsAReleasedBlock) {
  const std::vector<std::vector<float>> was = swap_out_groups();
  // A chunk of tokens 0..5 would have the model compute token 6, whose window reads token 3 of
  // the windowed groups' released block 0: nothing is restored, the chunk is computed.
  EXPECT_EQ(swapper_->swap_in(1, kNew.all(), 0, 6, kBlockSize), 0);
  EXPECT_EQ(swapper_->swapped_in_blocks_total(), 0);
  EXPECT_EQ(entries(), 7);
  // Computed up to token 6, the next chunk starts unaligned: nothing; its blocks' entries go.
  EXPECT_EQ(swapper_->swap_in(1, kNew.all(), 6, 2, kBlockSize), 0);
  EXPECT_EQ(entries(), 3) << "block 2's three entries are left";
  // From token 8 no window reaches block 0: block 2 of every group comes back.
  EXPECT_EQ(swapper_->swap_in(1, kNew.all(), 8, 4, kBlockSize), 4);
  EXPECT_EQ(contents(10), was[2]);
  EXPECT_EQ(contents(13), was[4]);
  EXPECT_EQ(contents(7), was[6]);
  EXPECT_EQ(swapper_->swapped_in_blocks_total(), 3);
  EXPECT_FALSE(swapper_->has_swapped(1));

  // From token 0 with room for tokens 0..7: it reaches token 7, so blocks 0 and 1 come back.
  ASSERT_EQ(swapper_->swap_out(2, kSwapped.all(), 12, kBlockSize), 12);
  for (int32_t b = 0; b < 16; ++b) fill(b, 60 + b);
  EXPECT_EQ(swapper_->swap_in(2, kNew.all(), 0, 8, kBlockSize), 8);
  EXPECT_EQ(contents(8), was[0]);
  EXPECT_EQ(contents(9), was[1]);
  EXPECT_EQ(contents(12), was[3]);
  EXPECT_EQ(contents(15), was[5]);
  EXPECT_EQ(swapper_->swapped_in_blocks_total(), 3 + 4);
  EXPECT_EQ(swapper_->swap_in(2, kNew.all(), 8, 4, kBlockSize), 4);
  EXPECT_EQ(contents(7), was[6]);
  EXPECT_EQ(entries(), 0);
}

TEST_F(KvSwap, PreemptedAgainMidGroupRestoreKeepsTheRest) {
  const std::vector<std::vector<float>> was = swap_out_groups();
  ASSERT_EQ(swapper_->swap_in(1, kNew.all(), 0, 8, kBlockSize), 8);
  // Preempted with tokens 0..7 in blocks 0 and 1 (the windowed groups' block 0 released again):
  // saving those completes the range, block 2's entries stay.
  const GroupTableSet now({{8, 9}, {-1, 12}, {-1, 15}});
  EXPECT_EQ(swapper_->swap_out(1, now.all(), 8, kBlockSize), 12);
  EXPECT_EQ(entries(), 4 + 3);
  EXPECT_EQ(swapper_->swapped_out_blocks_total(), 7 + 4);
  for (int32_t b = 0; b < 16; ++b) fill(b, 80 + b);
  EXPECT_EQ(swapper_->swap_in(1, kNew.all(), 0, 12, kBlockSize), 12);
  expect_held_blocks_in(kNew, was);
  EXPECT_EQ(entries(), 0);
}

TEST_F(KvSwap, AnEvictionBeforeTheResumePointDropsTheGroupRestore) {
  swap_out_groups(std::to_string(7 * kBytesPerBlock));
  // Request 2's three entries push out request 1's oldest: block 0 of group 0, block 1 of groups 0, 1.
  const GroupTableSet other({{13}, {14}, {15}});
  ASSERT_EQ(swapper_->swap_out(2, other.all(), 4, kBlockSize), 4);
  ASSERT_EQ(entries(), 7);
  // Restoring stops at block 0, before token 7: resuming there would read the windowed groups'
  // released block 0, so request 1 recomputes and its other entries go.
  EXPECT_EQ(swapper_->swap_in(1, kNew.all(), 0, 12, kBlockSize), 0);
  EXPECT_FALSE(swapper_->has_swapped(1));
  EXPECT_EQ(entries(), 3);
  EXPECT_EQ(swapper_->swapped_in_blocks_total(), 0);
}

TEST_F(KvSwap, GroupTablesMustReleaseOnlyLeadingBlocksOfWindowedGroups) {
  open("\"1MiB\"", {kGroupWindows, kGroupWindows + 3});
  const GroupTableSet hole({{0, 1, 2}, {3, -1, 4}, {-1, 5, 6}});
  EXPECT_THROW(swapper_->swap_out(1, hole.all(), 12, kBlockSize), Error);
  const GroupTableSet full_released({{-1, 1, 2}, {-1, 3, 4}, {-1, 5, 6}});
  EXPECT_THROW(swapper_->swap_out(1, full_released.all(), 12, kBlockSize), Error) << "group 0 has no window";
  const GroupTableSet two({{0, 1, 2}, {-1, 3, 4}});
  EXPECT_THROW(swapper_->swap_out(1, two.all(), 12, kBlockSize), Error) << "three groups, two tables";
  EXPECT_EQ(entries(), 0);
}

}  // namespace
}  // namespace loom
