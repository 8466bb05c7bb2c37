// Copy-on-write support: KvPool::copy_block copies one block's K and V in every layer and nothing
// else; a request's view carries its cache_salt.
#include <gtest/gtest.h>

#include <vector>

#include "core/common/error.hpp"
#include "core/engine/request_state.hpp"
#include "core/executor/kv_pool.hpp"
#include "tests/unit/fake_engine.hpp"

namespace loom {
namespace {

// Fills every element with a value naming its layer, K/V, block and position.
void fill(KvPool& pool) {
  const KvPoolShape& s = pool.shape();
  const int64_t per_block = static_cast<int64_t>(s.block_size) * s.n_kv_heads * s.head_dim;
  for (int32_t l = 0; l < s.n_layers; ++l) {
    for (int kv = 0; kv < 2; ++kv) {
      float* data = static_cast<float*>((kv == 0 ? pool.k(l) : pool.v(l)).data);
      for (int64_t i = 0; i < per_block * s.num_blocks; ++i) {
        data[i] = static_cast<float>(l * 100000 + kv * 10000 + i);
      }
    }
  }
}

TEST(EngineKvCopy, CopyBlockCopiesKAndVOfEveryLayerOnly) {
  KvPool pool(KvPoolShape{3, 4, 2, 2, 3, LOOM_DTYPE_F32});  // 12 floats per block per layer
  fill(pool);
  pool.copy_block(1, 3);
  for (int32_t l = 0; l < 3; ++l) {
    for (int kv = 0; kv < 2; ++kv) {
      const float* data = static_cast<const float*>((kv == 0 ? pool.k(l) : pool.v(l)).data);
      for (int64_t i = 0; i < 48; ++i) {
        const int64_t block = i / 12, within = i % 12;
        const int64_t source = block == 3 ? 12 + within : i;  // block 3 now holds block 1
        EXPECT_EQ(data[i], static_cast<float>(l * 100000 + kv * 10000 + source))
            << "layer " << l << (kv ? " V" : " K") << " element " << i;
      }
    }
  }
  pool.copy_block(2, 2);  // no-op
  EXPECT_EQ(static_cast<const float*>(pool.k(0).data)[24], 24.0f);
}

TEST(EngineKvCopy, CopyBlockRefusesIdsOutsideThePool) {
  KvPool pool(KvPoolShape{1, 2, 2, 1, 2, LOOM_DTYPE_F32});
  EXPECT_THROW(pool.copy_block(0, 2), Error);
  EXPECT_THROW(pool.copy_block(-1, 0), Error);
}

TEST(EngineKvCopy, RequestViewCarriesSaltChoiceAndSeed) {
  test::ByteTokenizer tokenizer;
  GenerateRequest request;
  request.prompt = {256, 65, 66};
  request.cache_salt = 0xABCDu;
  const RequestState state(9, std::move(request), tokenizer, 5, 42, 7, 2);
  const loom_request_view v = state.view();
  EXPECT_EQ(v.request_id, 9u);
  EXPECT_EQ(v.cache_salt, 0xABCDu);
  EXPECT_EQ(v.num_prompt_tokens, 3);
  EXPECT_EQ(state.group, 7u);
  EXPECT_EQ(state.index, 2);
  EXPECT_EQ(state.seed, 42u);
  std::mt19937_64 expected(42);
  std::mt19937_64 rng = state.rng;
  EXPECT_EQ(rng(), expected());
}

}  // namespace
}  // namespace loom
