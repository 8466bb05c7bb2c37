// Attention over contexts of several split-K partitions (flash_cpu_split.hpp: flash_cpu cuts every
// row's keys at multiples of P = kPartitionTokens and merges the partials): every plugin against
// `naive` and the dense reference at contexts P, P + 1, 2P, 3P + 8, a prefill chunk across a cut,
// windows across a cut; and flash_cpu's promises about the bits, exactly: the same at 1, 2 and 3
// threads (one long decode alone is spread over one work item per partition when there are
// several threads, folded in one item when there is one), alone == batched, a row of a prefill
// chunk == the same position decoded alone, chunked == whole prefill, for every KV dtype whose
// row encoding is its own.
//
// The context-filling first step goes through forward_window with a window of 1 (only its pool
// writes matter), so a long context costs the plugins O(context) there.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>

#include "core/common/thread_pool.hpp"
#include "loom/sdk_core.hpp"
#include "loom/sdk_kv_quant.hpp"
#include "plugins/attention/flash_cpu/flash_cpu_split.hpp"
#include "tests/conformance/attention_problem.hpp"
#include "tests/conformance/conformance_support.hpp"

namespace loom {
namespace {

using namespace attention_problem;  // NOLINT: the shared problem vocabulary of these tests

constexpr int32_t P = flash_cpu::kPartitionTokens;

// Decodes at the edges of partitions, a prefill chunk across the first cut, and a context of
// several partitions.
const std::vector<SeqPlan> kLongPlan = {{P - 1, 1}, {P, 1}, {2 * P - 1, 1}, {P - 20, 45}, {3 * P + 7, 1}, {3, 2}};

const Shape kLongShapes[] = {{256, 4, 1, 16}, {64, 8, 2, 32}};

class AttentionLong : public ::testing::TestWithParam<std::tuple<std::string, Shape>> {
 protected:
  std::unique_ptr<LoadedPlugin> make(const PluginHost& host, const std::string& name, const Shape& s,
                                     std::string* skip, loom_dtype kv_dtype = LOOM_DTYPE_F32) {
    auto p = create_attention(host, name, s, skip, kv_dtype);
    if (p && !sdk::present(p->vtable<loom_attention_vtable>(), &loom_attention_vtable::forward_window)) {
      *skip = name + " does not declare sliding-window attention (the cheap context fill)";
      return nullptr;
    }
    return p;
  }
  ThreadPool threads_{2};
  PluginHost host_{threads_, {}};
};

TEST_P(AttentionLong, MatchesNaiveAndDenseReference) {
  const auto& [name, shape] = GetParam();
  const Problem p = make_problem(shape, 401 + static_cast<uint64_t>(shape.head_dim), kLongPlan);
  std::string skip;
  const auto plugin = make(host_, name, shape, &skip);
  if (!plugin) GTEST_SKIP() << skip;
  const auto naive = make(host_, "naive", shape, &skip);
  ASSERT_NE(naive, nullptr) << skip;
  const KvPoolShape ps{1, p.num_blocks, shape.block_size, shape.n_kv_heads, shape.head_dim, LOOM_DTYPE_F32};
  KvPool pool_ref(ps), pool(ps);
  const std::vector<float> ref_out = run(*naive, p, pool_ref, nullptr, 0, 1);
  const std::vector<float> out = run(*plugin, p, pool, nullptr, 0, 1);
  const std::vector<double> dense = reference(p);
  ASSERT_EQ(out.size(), dense.size());
  for (size_t i = 0; i < dense.size(); ++i) {
    ASSERT_NEAR(ref_out[i], dense[i], 1e-5) << "naive vs dense reference at " << i;
    ASSERT_NEAR(out[i], ref_out[i], 2e-5) << name << " vs naive at " << i;
  }
}

// Windows that end in the partition of the query but start in the one before (100, P), a window
// of P + 1 (from the cut itself for a query at 2P) and one wider than two partitions.
TEST_P(AttentionLong, WindowsAcrossACutMatchDenseReference) {
  const auto& [name, shape] = GetParam();
  const Problem p = make_problem(shape, 402, kLongPlan);
  std::string skip;
  const auto plugin = make(host_, name, shape, &skip);
  if (!plugin) GTEST_SKIP() << skip;
  const KvPoolShape ps{1, p.num_blocks, shape.block_size, shape.n_kv_heads, shape.head_dim, LOOM_DTYPE_F32};
  for (const int32_t window : {100, P, P + 1, 2 * P + 3}) {
    KvPool pool(ps);
    const std::vector<float> out = run(*plugin, p, pool, nullptr, window, 1);
    const std::vector<double> dense = reference(p, window);
    ASSERT_EQ(out.size(), dense.size());
    for (size_t i = 0; i < dense.size(); ++i)
      ASSERT_NEAR(out[i], dense[i], 2e-5) << name << " window " << window << " at " << i;
  }
}

// The relative error bounds of conformance_attention.cpp's EncodedKvPoolsMatchNaiveF32.
TEST_P(AttentionLong, EncodedKvPoolsStayNearNaiveF32) {
  const auto& [name, shape] = GetParam();
  const Problem p = make_problem(shape, 403, kLongPlan);
  std::string skip;
  const auto naive = make(host_, "naive", shape, &skip);
  ASSERT_NE(naive, nullptr) << skip;
  KvPool pool_ref(KvPoolShape{1, p.num_blocks, shape.block_size, shape.n_kv_heads, shape.head_dim, LOOM_DTYPE_F32});
  const std::vector<float> ref = run(*naive, p, pool_ref, nullptr, 0, 1);
  const std::pair<loom_dtype, double> bounds[] = {
      {LOOM_DTYPE_F16, 1e-3}, {LOOM_DTYPE_BF16, 8e-3}, {LOOM_DTYPE_I8, 1e-2}, {LOOM_DTYPE_FP8_E4M3, 5e-2}};
  int tested = 0;
  for (const auto& [dtype, bound] : bounds) {
    const auto plugin = make(host_, name, shape, &skip, dtype);
    if (!plugin) continue;
    KvPool pool(KvPoolShape{1, p.num_blocks, shape.block_size, shape.n_kv_heads, shape.head_dim, dtype});
    const std::vector<float> out = run(*plugin, p, pool, nullptr, 0, 1);
    ASSERT_EQ(out.size(), ref.size());
    double err = 0, norm = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      ASSERT_TRUE(std::isfinite(out[i])) << name << " kv " << sdk::kv::dtype_name(dtype) << " at " << i;
      err += (double(out[i]) - ref[i]) * (double(out[i]) - ref[i]);
      norm += double(ref[i]) * ref[i];
    }
    EXPECT_LE(std::sqrt(err / norm), bound) << name << " kv " << sdk::kv::dtype_name(dtype);
    ++tested;
  }
  if (tested == 0) GTEST_SKIP() << name << " takes no encoded KV dtype";
}

INSTANTIATE_TEST_SUITE_P(Plugins, AttentionLong,
                         ::testing::Combine(::testing::ValuesIn(conformance::plugin_names()),
                                            ::testing::ValuesIn(kLongShapes)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + shape_name(std::get<1>(info.param));
                         });

// flash_cpu on its own: what the split must never change.
class FlashCpuSplit : public ::testing::TestWithParam<Shape> {
 protected:
  static std::unique_ptr<LoadedPlugin> make(const PluginHost& host, const Shape& s, loom_dtype kv = LOOM_DTYPE_F32,
                                            const std::string& config = "{}") {
    std::string skip;
    auto p = create_attention(host, "flash_cpu", s, &skip, kv, config);
    if (!p) ADD_FAILURE() << skip;
    return p;
  }
};

// One step of `n` tokens of sequence i from position `from`, alone, over a pool that already
// holds the sequence's context: [n, heads, head_dim].
std::vector<float> step_alone(const LoadedPlugin& plugin, const Problem& p, KvPool& pool, size_t i, int32_t from,
                              int32_t n, int32_t window = 0) {
  const Shape& s = p.shape;
  const int64_t HD = int64_t{s.n_heads} * s.head_dim, KVD = int64_t{s.n_kv_heads} * s.head_dim;
  const std::vector<int32_t> ids(static_cast<size_t>(n), 0);
  const SeqSchedule seq{ids, from, p.tables[i], true};
  BuiltBatch b;
  BatchBuilder(s.block_size).build(std::span<const SeqSchedule>(&seq, 1), b);
  std::vector<float> q(p.q[i].begin() + from * HD, p.q[i].begin() + (from + n) * HD);
  std::vector<float> k(p.k[i].begin() + from * KVD, p.k[i].begin() + (from + n) * KVD);
  std::vector<float> v(p.v[i].begin() + from * KVD, p.v[i].begin() + (from + n) * KVD);
  std::vector<float> out(static_cast<size_t>(n * HD), NAN);
  const loom_attention_batch ab = b.attention();
  const loom_tensor_view qv = view(q.data(), {n, s.n_heads, s.head_dim});
  const loom_tensor_view kv = view(k.data(), {n, s.n_kv_heads, s.head_dim});
  const loom_tensor_view vv = view(v.data(), {n, s.n_kv_heads, s.head_dim});
  loom_tensor_view ov = view(out.data(), {n, s.n_heads, s.head_dim});
  plugin.call("forward_window", &loom_attention_vtable::forward_window, &ab, window, nullptr, &qv, &kv, &vv,
              &pool.k(0), &pool.v(0), &ov);
  return out;
}

bool same_bits(const std::vector<float>& a, const float* b) {
  return std::memcmp(a.data(), b, a.size() * sizeof(float)) == 0;
}

// The whole batch, and each sequence's step alone, at 1, 2 and 3 threads, with and without a
// window across a cut, both kernels: every output the same bits as the batch at 2 threads.
TEST_P(FlashCpuSplit, SameBitsAtEveryThreadCountAloneOrBatched) {
  const Shape shape = GetParam();
  const Problem p = make_problem(shape, 404, kLongPlan);
  const int64_t HD = int64_t{shape.n_heads} * shape.head_dim;
  const KvPoolShape ps{1, p.num_blocks, shape.block_size, shape.n_kv_heads, shape.head_dim, LOOM_DTYPE_F32};
  for (const char* config : {R"({"simd": "auto"})", R"({"simd": "portable"})"}) {
    for (const int32_t window : {0, 100}) {
      std::vector<float> want;
      for (const int32_t n_threads : {2, 1, 3}) {
        ThreadPool threads(n_threads);
        const PluginHost host(threads, {});
        const auto plugin = make(host, shape, LOOM_DTYPE_F32, config);
        ASSERT_NE(plugin, nullptr);
        KvPool pool(ps);
        const std::vector<float> batched = run(*plugin, p, pool, nullptr, window, 1);
        if (want.empty()) want = batched;
        const std::string what = std::string(config) + " window " + std::to_string(window) + ", " +
                                 std::to_string(n_threads) + " threads";
        ASSERT_TRUE(same_bits(batched, want.data())) << what << ": batched";
        int64_t offset = 0;
        for (size_t i = 0; i < p.plan.size(); ++i) {
          const std::vector<float> alone = step_alone(*plugin, p, pool, i, p.plan[i].prior, p.plan[i].fresh, window);
          EXPECT_TRUE(same_bits(alone, want.data() + offset)) << what << ": sequence " << i << " alone";
          offset += p.plan[i].fresh * HD;
        }
      }
    }
  }
}

// Each row of the chunk across the first cut (positions P - 20 .. P + 24) and of the decodes,
// decoded alone (one sequence of one token: spread over the partitions' items at 2 threads) over
// the pool the batch filled, for f32 and the KV dtypes whose row encoding is its own (not int8:
// its block-head scale re-encodes earlier rows, see conformance_attention.cpp).
TEST_P(FlashCpuSplit, PrefillRowsEqualOneTokenDecodes) {
  const Shape shape = GetParam();
  const Problem p = make_problem(shape, 405, kLongPlan);
  const int64_t HD = int64_t{shape.n_heads} * shape.head_dim;
  ThreadPool threads(2);
  const PluginHost host(threads, {});
  for (const loom_dtype dtype : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16, LOOM_DTYPE_FP8_E4M3}) {
    const auto plugin = make(host, shape, dtype);
    ASSERT_NE(plugin, nullptr);
    KvPool pool(KvPoolShape{1, p.num_blocks, shape.block_size, shape.n_kv_heads, shape.head_dim, dtype});
    const std::vector<float> batched = run(*plugin, p, pool, nullptr, 0, 1);
    int64_t row = 0;
    for (size_t i = 0; i < p.plan.size(); ++i) {
      for (int32_t pos = p.plan[i].prior; pos < p.plan[i].prior + p.plan[i].fresh; ++pos, ++row) {
        const std::vector<float> one = step_alone(*plugin, p, pool, i, pos, 1);
        ASSERT_TRUE(same_bits(one, batched.data() + row * HD))
            << "kv " << sdk::kv::dtype_name(dtype) << ": sequence " << i << " position " << pos;
      }
    }
  }
}

// One sequence of 2P + 40 tokens prefilled whole, then again in chunks of 100 and of P (cuts
// that do not meet the partitions' and cuts that do): the same bits, row for row.
TEST_P(FlashCpuSplit, ChunkedPrefillEqualsWhole) {
  const Shape shape = GetParam();
  const int32_t ctx = 2 * P + 40;
  const Problem p = make_problem(shape, 406, {{0, ctx}});
  const int64_t HD = int64_t{shape.n_heads} * shape.head_dim;
  ThreadPool threads(2);
  const PluginHost host(threads, {});
  const auto plugin = make(host, shape);
  ASSERT_NE(plugin, nullptr);
  const KvPoolShape ps{1, p.num_blocks, shape.block_size, shape.n_kv_heads, shape.head_dim, LOOM_DTYPE_F32};
  KvPool whole_pool(ps);
  const std::vector<float> whole = step_alone(*plugin, p, whole_pool, 0, 0, ctx);
  for (const int32_t chunk : {100, P}) {
    KvPool pool(ps);
    for (int32_t from = 0; from < ctx; from += chunk) {
      const int32_t n = std::min(chunk, ctx - from);
      const std::vector<float> part = step_alone(*plugin, p, pool, 0, from, n);
      ASSERT_TRUE(same_bits(part, whole.data() + from * HD)) << "chunks of " << chunk << " from " << from;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, FlashCpuSplit, ::testing::ValuesIn(kLongShapes),
                         [](const auto& info) { return shape_name(info.param); });

}  // namespace
}  // namespace loom
