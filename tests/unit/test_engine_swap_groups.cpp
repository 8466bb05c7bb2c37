// SwapCoordinator under block-table groups, over the real paged cache (3 groups: full attention,
// then two of window 8; blocks of 4 tokens), the host tier and a real KvPool (one layer a block):
// a preempted request's every group is saved but for the blocks its windows had released, comes
// back into its new blocks group by group, and the windowed groups' stand-ins for the released
// blocks -- never written -- leave its tables before anything can commit them as prefix blocks.
#include <gtest/gtest.h>

#include <vector>

#include "core/common/thread_pool.hpp"
#include "core/engine/kv_block_copy.hpp"
#include "core/engine/swap_coordinator.hpp"
#include "core/plugin/plugin_host.hpp"
#include "tests/unit/fake_engine.hpp"

namespace loom {
namespace {

constexpr int32_t kBlockSize = 4;
constexpr int32_t kGroups = 3;
constexpr int32_t kWindows[] = {0, 8, 8};

class SwapGroups : public ::testing::Test {
 protected:
  static KvPoolShape shape() {
    KvPoolShape s;
    s.n_layers = 1;
    s.num_blocks = 40;
    s.block_size = kBlockSize;
    s.n_kv_heads = 1;
    s.head_dim = 2;
    s.dtype = LOOM_DTYPE_F32;
    return s;
  }
  static constexpr int64_t kFloatsPerBlock = kBlockSize * 1 * 2;  // [block_size, n_kv_heads, head_dim]

  SwapGroups() {
    loom_cache_create_args c{};
    c.struct_size = sizeof(c);
    c.n_layers = 3;
    c.n_kv_heads = 1;
    c.head_dim = 2;
    c.kv_dtype = LOOM_DTYPE_F32;
    c.bytes_per_token = 2 * 2 * 4;  // one layer a block: K and V of 2 floats
    c.max_model_len = 1024;
    c.n_groups = kGroups;
    c.group_windows = kWindows;
    cache_ = host_.create(PluginSpec{LOOM_KIND_CACHE, "paged", "",
                                     R"({"num_blocks": 40, "block_size": 4, "check_invariants": true})"},
                          &c);
    handle_ = std::make_unique<CacheHandle>(*cache_, kGroups);
    loom_cache_offload_create_args t{};
    t.struct_size = sizeof(t);
    t.copy = make_kv_copy_ops(pool_);
    tier_ = host_.create(PluginSpec{LOOM_KIND_CACHE_OFFLOAD, "host", "", "{}"}, &t);
    swaps_ = std::make_unique<SwapCoordinator>(*handle_, tier_.get(), t.copy.bytes_per_block, kBlockSize,
                                               std::vector<int32_t>(kWindows, kWindows + kGroups));
    for (int32_t b = 0; b < shape().num_blocks; ++b) fill(b, b + 1);
  }

  void fill(int32_t block, int seed) {
    for (loom_tensor_view* view : {&pool_.k(0), &pool_.v(0)}) {
      float* data = static_cast<float*>(view->data) + kFloatsPerBlock * block;
      for (int64_t i = 0; i < kFloatsPerBlock; ++i) data[i] = static_cast<float>(seed * 100 + i) + (view == &pool_.v(0) ? 0.5f : 0.0f);
    }
  }
  std::vector<float> contents(int32_t block) {
    std::vector<float> out;
    for (loom_tensor_view* view : {&pool_.k(0), &pool_.v(0)}) {
      const float* data = static_cast<const float*>(view->data) + kFloatsPerBlock * block;
      out.insert(out.end(), data, data + kFloatsPerBlock);
    }
    return out;
  }
  RequestState request(uint64_t id, int32_t n) {
    GenerateRequest r;
    for (int32_t i = 0; i < n; ++i) r.prompt.push_back(10 + i);
    r.sampling.max_tokens = 8;
    return RequestState(id, std::move(r), tokenizer_, 0, 7, id, 0);
  }
  void allocate(const RequestState& req, int32_t num_new_tokens) {
    const loom_request_view v = req.view();
    int32_t cached = -1;
    cache_->call("allocate", &loom_cache_vtable::allocate, &v, num_new_tokens, &cached);
  }
  std::vector<int32_t> table(uint64_t id, int32_t g) {
    const std::span<const int32_t> t = handle_->group_block_table(id, g);
    return std::vector<int32_t>(t.begin(), t.end());
  }

  ThreadPool threads_{1};
  PluginHost host_{threads_, {}};
  KvPool pool_{shape()};
  test::ByteTokenizer tokenizer_;
  std::unique_ptr<LoadedPlugin> cache_;
  std::unique_ptr<CacheHandle> handle_;
  std::unique_ptr<LoadedPlugin> tier_;
  std::unique_ptr<SwapCoordinator> swaps_;
};

TEST_F(SwapGroups, ASwapInRestoresEveryGroupAndReleasesWhatNoWindowReads) {
  // 24 tokens computed and committed; room for token 24 makes the windowed groups release blocks
  // 0..3 (tokens 0..15, before 24 - 8 + 1).
  RequestState a = request(1, 24);
  allocate(a, 24);
  a.num_computed_tokens = 24;
  handle_->commit(a.view());
  a.token_ids.push_back(99);
  ASSERT_TRUE(handle_->append(a.view(), 1));
  std::vector<std::vector<int32_t>> before;
  for (int32_t g = 0; g < kGroups; ++g) before.push_back(table(1, g));
  EXPECT_EQ(before[1][3], -1);
  EXPECT_GE(before[1][4], 0);
  std::vector<std::vector<float>> was(static_cast<size_t>(shape().num_blocks));
  for (int32_t b = 0; b < shape().num_blocks; ++b) was[static_cast<size_t>(b)] = contents(b);

  EXPECT_EQ(swaps_->preempt(a, LOOM_PREEMPT_SWAP), 24);
  EXPECT_EQ(a.num_computed_tokens, 0);
  EngineStats stats;
  swaps_->read_stats(stats);
  EXPECT_EQ(stats.kv_swapped_out_blocks, 6 + 2 + 2) << "group 0's six blocks, the windowed groups' blocks 4 and 5";

  // The pool loses what it cached of the request, so it comes back only from the tier.
  (void)handle_->evict_cached(40);
  for (int32_t b = 0; b < shape().num_blocks; ++b) fill(b, 500 + b);
  allocate(a, 25);
  const int32_t restored = swaps_->restore(a, 25);
  EXPECT_EQ(restored, 24) << "all but the last token, which is computed";
  a.num_computed_tokens += restored;
  swaps_->read_stats(stats);
  EXPECT_EQ(stats.kv_swapped_in_blocks, 10);
  for (int32_t g = 0; g < kGroups; ++g) {
    const std::vector<int32_t> now = table(1, g);
    ASSERT_EQ(now.size(), 7u) << "group " << g;
    for (size_t i = 0; i < 6; ++i) {
      if (g > 0 && i < 4) {
        EXPECT_EQ(now[i], -1) << "group " << g << " block " << i << ": released again before any commit";
      } else {
        EXPECT_EQ(contents(now[i]), was[static_cast<size_t>(before[static_cast<size_t>(g)][i])])
            << "group " << g << " block " << i;
      }
    }
  }

  // Committed and freed, the request's prefix reaches another request only as far as its windowed
  // groups hold what was written: their blocks 0..3 were never registered, so 20 shared tokens
  // give no hit (the window of token 20 reads block 3 of each).
  handle_->commit(a.view());
  handle_->free(1);
  RequestState b = request(2, 21);
  EXPECT_EQ(handle_->match_prefix(b.view()), 0);
}

}  // namespace
}  // namespace loom
