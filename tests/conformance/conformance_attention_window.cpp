// Sliding-window attention (attention interface 1.2, forward_window): every plugin that declares
// it against the dense reference restricted to each query's window, with the blocks wholly before
// every window released (-1 in the table) so a plugin reading them fails; windows of 1 token, of
// less than a block, of exactly a block and wider than the context. `naive` exactly: a window at
// least the context long is forward bit for bit, and a window of 1 returns the token's own V.
#include <gtest/gtest.h>

#include <cstring>

#include "core/common/thread_pool.hpp"
#include "loom/sdk_core.hpp"
#include "tests/conformance/attention_problem.hpp"
#include "tests/conformance/conformance_support.hpp"

namespace loom {
namespace {

using namespace attention_problem;  // NOLINT: the shared problem vocabulary of these tests

class AttentionWindow : public ::testing::TestWithParam<std::tuple<std::string, Shape>> {
 protected:
  std::unique_ptr<LoadedPlugin> make(const std::string& name, const Shape& s, std::string* skip) {
    auto p = create_attention(host_, name, s, skip);
    if (p && !sdk::present(p->vtable<loom_attention_vtable>(), &loom_attention_vtable::forward_window)) {
      *skip = name + " does not declare sliding-window attention";
      return nullptr;
    }
    return p;
  }
  ThreadPool threads_{2};
  PluginHost host_{threads_, {}};
};

TEST_P(AttentionWindow, MatchesWindowedReference) {
  const auto& [name, shape] = GetParam();
  const Problem p = make_problem(shape, 23 + static_cast<uint64_t>(shape.head_dim));
  std::string skip;
  const auto plugin = make(name, shape, &skip);
  if (!plugin) GTEST_SKIP() << skip;
  const KvPoolShape ps{1, p.num_blocks, shape.block_size, shape.n_kv_heads, shape.head_dim, LOOM_DTYPE_F32};
  for (const int32_t window : {1, 5, shape.block_size, shape.block_size + 3, 1000}) {
    KvPool pool(ps);
    const std::vector<float> out = run(*plugin, p, pool, nullptr, window);
    const std::vector<double> dense = reference(p, window);
    ASSERT_EQ(out.size(), dense.size());
    for (size_t i = 0; i < dense.size(); ++i) ASSERT_NEAR(out[i], dense[i], 2e-5) << name << " window " << window << " at " << i;
  }
  // The window is applied: a narrow one does not give the full-context result.
  KvPool a(ps), b(ps);
  const std::vector<float> narrow = run(*plugin, p, a, nullptr, 5), full = run(*plugin, p, b);
  EXPECT_NE(std::memcmp(narrow.data(), full.data(), narrow.size() * sizeof(float)), 0);
}

const Shape kWindowShapes[] = {{64, 4, 4, 16}, {64, 8, 2, 32}, {128, 4, 1, 16}};

INSTANTIATE_TEST_SUITE_P(Plugins, AttentionWindow,
                         ::testing::Combine(::testing::ValuesIn(conformance::plugin_names()),
                                            ::testing::ValuesIn(kWindowShapes)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + shape_name(std::get<1>(info.param));
                         });

// flash_cpu's portable kernel (what a CPU without AVX2 runs) windows by pointer offsets rather
// than the SIMD kernel's masks: both against the reference.
TEST_F(AttentionWindow, FlashCpuPortableKernelMatchesWindowedReference) {
  const Shape shape{64, 8, 2, 16};
  const Problem p = make_problem(shape, 31);
  loom_attention_create_args a{};
  a.struct_size = sizeof(a);
  a.n_heads = shape.n_heads;
  a.n_kv_heads = shape.n_kv_heads;
  a.head_dim = shape.head_dim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  a.kv_dtype = LOOM_DTYPE_F32;
  a.block_size = shape.block_size;
  a.device = loom_device{LOOM_DEVICE_CPU, 0};
  std::string skip;
  const auto plugin = conformance::create_or_skip(host_, LOOM_KIND_ATTENTION, "flash_cpu", &a, &skip,
                                                  R"({"simd": "portable"})");
  if (!plugin) GTEST_SKIP() << skip;
  const KvPoolShape ps{1, p.num_blocks, shape.block_size, shape.n_kv_heads, shape.head_dim, LOOM_DTYPE_F32};
  for (const int32_t window : {1, 5, 16, 19}) {
    KvPool pool(ps);
    const std::vector<float> out = run(*plugin, p, pool, nullptr, window);
    const std::vector<double> dense = reference(p, window);
    for (size_t i = 0; i < dense.size(); ++i) ASSERT_NEAR(out[i], dense[i], 2e-5) << "window " << window << " at " << i;
  }
}

class NaiveWindow : public AttentionWindow {};

TEST_F(NaiveWindow, WideWindowIsForwardAndOneTokenWindowIsOwnValue) {
  const Shape shape{64, 8, 2, 16};
  const Problem p = make_problem(shape, 5);
  std::string skip;
  const auto naive = make("naive", shape, &skip);
  ASSERT_NE(naive, nullptr) << skip;
  const KvPoolShape ps{1, p.num_blocks, shape.block_size, shape.n_kv_heads, shape.head_dim, LOOM_DTYPE_F32};
  KvPool a(ps), b(ps), c(ps);
  const std::vector<float> full = run(*naive, p, a), wide = run(*naive, p, b, nullptr, 1000);
  EXPECT_EQ(std::memcmp(full.data(), wide.data(), full.size() * sizeof(float)), 0);
  // Window 1: one key, weight exactly 1, so each head's output is its KV head's V row of the token.
  const std::vector<float> own = run(*naive, p, c, nullptr, 1);
  const int32_t H = shape.n_heads, KVH = shape.n_kv_heads, D = shape.head_dim;
  size_t t = 0;
  for (size_t i = 0; i < p.plan.size(); ++i) {
    for (int32_t pos = p.plan[i].prior; pos < p.plan[i].prior + p.plan[i].fresh; ++pos, ++t) {
      for (int32_t h = 0; h < H; ++h) {
        const float* o = own.data() + (t * H + static_cast<size_t>(h)) * D;
        const float* v = p.v[i].data() + (static_cast<size_t>(pos) * KVH + static_cast<size_t>(h / (H / KVH))) * D;
        ASSERT_EQ(std::memcmp(o, v, D * sizeof(float)), 0) << "seq " << i << " pos " << pos << " head " << h;
      }
    }
  }
}

}  // namespace
}  // namespace loom
