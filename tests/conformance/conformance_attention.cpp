// Attention conformance: every attention plugin against the reference (`naive`), and `naive`
// against a dense double-precision reference written here, on random shapes: head_dim 64/128,
// GQA ratios 1/4/8, block sizes 16/32, ragged sequences whose context was written by an earlier
// step, prefill and decode mixed, block tables in random order. Every plugin that takes an
// f16/bf16/int8/fp8_e4m3 KV pool is also run with it against `naive` on an f32 pool, with a
// per-dtype bound on the relative error of the outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <cmath>
#include <numeric>
#include <random>

#include "core/common/thread_pool.hpp"
#include "core/executor/batch_builder.hpp"
#include "core/executor/kv_pool.hpp"
#include "loom/attention.h"
#include "loom/sdk_kv_quant.hpp"
#include "loom/sdk_rope.hpp"
#include "tests/conformance/attention_problem.hpp"
#include "tests/conformance/conformance_support.hpp"

namespace loom {
namespace {

using namespace attention_problem;  // NOLINT: the shared problem vocabulary of these tests

class AttentionConformance : public ::testing::TestWithParam<std::tuple<std::string, Shape>> {
 protected:
  std::unique_ptr<LoadedPlugin> make(const std::string& name, const Shape& s, std::string* skip,
                                     loom_dtype kv_dtype = LOOM_DTYPE_F32) {
    return create_attention(host_, name, s, skip, kv_dtype);
  }
  ThreadPool threads_{2};
  PluginHost host_{threads_, {}};
};

TEST_P(AttentionConformance, MatchesReference) {
  const auto& [name, shape] = GetParam();
  const Problem p = make_problem(shape, 17 + static_cast<uint64_t>(shape.head_dim * shape.n_kv_heads));
  std::string skip;
  const auto plugin = make(name, shape, &skip);
  if (!plugin) GTEST_SKIP() << skip;
  const auto naive = make("naive", shape, &skip);
  ASSERT_NE(naive, nullptr) << skip;

  const KvPoolShape ps{1, p.num_blocks, shape.block_size, shape.n_kv_heads, shape.head_dim, LOOM_DTYPE_F32};
  KvPool pool_ref(ps), pool(ps);
  const std::vector<float> ref_out = run(*naive, p, pool_ref);
  const std::vector<float> out = run(*plugin, p, pool);
  const std::vector<double> dense = reference(p);
  ASSERT_EQ(out.size(), dense.size());
  for (size_t i = 0; i < dense.size(); ++i) {
    ASSERT_NEAR(ref_out[i], dense[i], 1e-5) << "naive vs dense reference at " << i;
    ASSERT_NEAR(out[i], ref_out[i], 2e-5) << name << " vs naive at " << i;
  }
  // Every token's K/V landed in its slot, exactly.
  const int32_t KVH = shape.n_kv_heads, D = shape.head_dim, bs = shape.block_size;
  for (size_t i = 0; i < p.plan.size(); ++i) {
    for (int32_t pos = 0; pos < p.plan[i].prior + p.plan[i].fresh; ++pos) {
      const int64_t slot = static_cast<int64_t>(p.tables[i][static_cast<size_t>(pos / bs)]) * bs + pos % bs;
      const float* kc = static_cast<const float*>(pool.k(0).data) + slot * KVH * D;
      const float* vc = static_cast<const float*>(pool.v(0).data) + slot * KVH * D;
      ASSERT_TRUE(std::equal(kc, kc + KVH * D, p.k[i].begin() + pos * KVH * D)) << "seq " << i << " pos " << pos;
      ASSERT_TRUE(std::equal(vc, vc + KVH * D, p.v[i].begin() + pos * KVH * D)) << "seq " << i << " pos " << pos;
    }
  }
}

TEST_P(AttentionConformance, BatchedEqualsAlone) {
  // A token's output must not depend on the other sequences in the batch: run each sequence's
  // test step on its own and compare bit for bit with the batched run.
  const auto& [name, shape] = GetParam();
  const Problem p = make_problem(shape, 99);
  std::string skip;
  const auto plugin = make(name, shape, &skip);
  if (!plugin) GTEST_SKIP() << skip;
  const KvPoolShape ps{1, p.num_blocks, shape.block_size, shape.n_kv_heads, shape.head_dim, LOOM_DTYPE_F32};
  KvPool pool(ps);
  const std::vector<float> batched = run(*plugin, p, pool);
  // The pool now holds every sequence's context; run each test step again, alone.
  const int64_t HD = static_cast<int64_t>(shape.n_heads) * shape.head_dim, KVD = int64_t{shape.n_kv_heads} * shape.head_dim;
  BatchBuilder builder(shape.block_size);
  int64_t offset = 0;
  for (size_t i = 0; i < p.plan.size(); ++i) {
    const int32_t n = p.plan[i].fresh, from = p.plan[i].prior;
    const std::vector<int32_t> ids(static_cast<size_t>(n), 0);
    const SeqSchedule seq{ids, from, p.tables[i], true};
    BuiltBatch b;
    builder.build(std::span<const SeqSchedule>(&seq, 1), b);
    std::vector<float> q(p.q[i].begin() + from * HD, p.q[i].begin() + (from + n) * HD);
    std::vector<float> k(p.k[i].begin() + from * KVD, p.k[i].begin() + (from + n) * KVD);
    std::vector<float> v(p.v[i].begin() + from * KVD, p.v[i].begin() + (from + n) * KVD);
    std::vector<float> out(static_cast<size_t>(n * HD));
    const loom_attention_batch ab = b.attention();
    const loom_tensor_view qv = view(q.data(), {n, shape.n_heads, shape.head_dim});
    const loom_tensor_view kv = view(k.data(), {n, shape.n_kv_heads, shape.head_dim});
    const loom_tensor_view vv = view(v.data(), {n, shape.n_kv_heads, shape.head_dim});
    loom_tensor_view ov = view(out.data(), {n, shape.n_heads, shape.head_dim});
    plugin->call("forward", &loom_attention_vtable::forward, &ab, &qv, &kv, &vv, &pool.k(0), &pool.v(0), &ov);
    EXPECT_TRUE(std::equal(out.begin(), out.end(), batched.begin() + offset)) << "sequence " << i;
    offset += n * HD;
  }
}

// Relative error ||out - naive_f32|| / ||naive_f32|| of the test step (RMS over every output) and
// its bound per KV dtype: f16 and bf16 round each element once (2^-11 / 2^-8 relative); int8 has
// 255 steps and fp8_e4m3 3 mantissa bits relative to each row's amax.
struct KvDtypeBound {
  loom_dtype dtype;
  double max_rel_error;
};
constexpr KvDtypeBound kKvBounds[] = {{LOOM_DTYPE_F16, 1e-3},
                                      {LOOM_DTYPE_BF16, 8e-3},
                                      {LOOM_DTYPE_I8, 1e-2},
                                      {LOOM_DTYPE_FP8_E4M3, 5e-2}};

TEST_P(AttentionConformance, EncodedKvPoolsMatchNaiveF32) {
  const auto& [name, shape] = GetParam();
  const Problem p = make_problem(shape, 23 + static_cast<uint64_t>(shape.head_dim * shape.n_kv_heads));
  std::string skip;
  const auto naive = make("naive", shape, &skip);
  ASSERT_NE(naive, nullptr) << skip;
  KvPool pool_ref(KvPoolShape{1, p.num_blocks, shape.block_size, shape.n_kv_heads, shape.head_dim, LOOM_DTYPE_F32});
  const std::vector<float> ref = run(*naive, p, pool_ref);
  int tested = 0;
  for (const KvDtypeBound& bound : kKvBounds) {
    const char* dtype = sdk::kv::dtype_name(bound.dtype);
    const auto plugin = make(name, shape, &skip, bound.dtype);
    if (!plugin) {
      // A plugin that does not take the dtype must say so, naming it.
      EXPECT_NE(skip.find(std::string("kv_dtype ") + dtype), std::string::npos) << skip;
      continue;
    }
    KvPool pool(KvPoolShape{1, p.num_blocks, shape.block_size, shape.n_kv_heads, shape.head_dim, bound.dtype});
    const std::vector<float> out = run(*plugin, p, pool);
    ASSERT_EQ(out.size(), ref.size());
    double err = 0, norm = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      ASSERT_TRUE(std::isfinite(out[i])) << name << " kv " << dtype << " at " << i;
      err += (double(out[i]) - ref[i]) * (double(out[i]) - ref[i]);
      norm += double(ref[i]) * ref[i];
    }
    const double rel = std::sqrt(err / norm);
    EXPECT_LE(rel, bound.max_rel_error) << name << " kv " << dtype;
    RecordProperty(std::string("rel_error_") + dtype, std::to_string(rel));
    ++tested;
  }
  if (tested == 0) GTEST_SKIP() << name << " takes no encoded KV dtype";
}

// Many decodes at once (one token each, ragged contexts): enough (sequence, KV head) work that
// A token's output is the same bits whether it is one row of a long prefill (tiled with many other
// rows, grouped with its neighbours) or the only query of a step: the step is re-run one token at
// a time over the cache the prefill filled (writing its own K/V again: the same values, the same
// encoding), for the f32 pool and every KV dtype the plugin takes whose encoding of a row is its
// own: not int8, whose block-head scale grows with later rows and re-encodes the earlier ones, so
// writing a row again is not the state the prefill left.
TEST_P(AttentionConformance, PrefillRowsEqualOneTokenSteps) {
  const auto& [name, shape] = GetParam();
  const Problem p = make_problem(shape, 57, {{0, 45}, {20, 30}});
  const int64_t HD = static_cast<int64_t>(shape.n_heads) * shape.head_dim, KVD = int64_t{shape.n_kv_heads} * shape.head_dim;
  int tested = 0;
  for (const loom_dtype dtype : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16, LOOM_DTYPE_FP8_E4M3}) {
    std::string skip;
    const auto plugin = make(name, shape, &skip, dtype);
    if (!plugin) continue;
    ++tested;
    KvPool pool(KvPoolShape{1, p.num_blocks, shape.block_size, shape.n_kv_heads, shape.head_dim, dtype});
    const std::vector<float> prefill = run(*plugin, p, pool);
    BatchBuilder builder(shape.block_size);
    int64_t row = 0;
    for (size_t i = 0; i < p.plan.size(); ++i) {
      for (int32_t pos = p.plan[i].prior; pos < p.plan[i].prior + p.plan[i].fresh; ++pos, ++row) {
        const std::vector<int32_t> ids(1, 0);
        const SeqSchedule seq{ids, pos, p.tables[i], true};
        BuiltBatch b;
        builder.build(std::span<const SeqSchedule>(&seq, 1), b);
        std::vector<float> q(p.q[i].begin() + pos * HD, p.q[i].begin() + (pos + 1) * HD);
        std::vector<float> k(p.k[i].begin() + pos * KVD, p.k[i].begin() + (pos + 1) * KVD);
        std::vector<float> v(p.v[i].begin() + pos * KVD, p.v[i].begin() + (pos + 1) * KVD);
        std::vector<float> out(static_cast<size_t>(HD), NAN);
        const loom_attention_batch ab = b.attention();
        const loom_tensor_view qv = view(q.data(), {1, shape.n_heads, shape.head_dim});
        const loom_tensor_view kv = view(k.data(), {1, shape.n_kv_heads, shape.head_dim});
        const loom_tensor_view vv = view(v.data(), {1, shape.n_kv_heads, shape.head_dim});
        loom_tensor_view ov = view(out.data(), {1, shape.n_heads, shape.head_dim});
        plugin->call("forward", &loom_attention_vtable::forward, &ab, &qv, &kv, &vv, &pool.k(0), &pool.v(0), &ov);
        ASSERT_EQ(std::memcmp(out.data(), prefill.data() + row * HD, sizeof(float) * static_cast<size_t>(HD)), 0)
            << name << " kv " << sdk::kv::dtype_name(dtype) << ": sequence " << i << " position " << pos;
      }
    }
  }
  ASSERT_GT(tested, 0) << name << " takes no KV dtype at all";
}

// Attention interface 1.1: a plugin with forward_rope_k, given k without RoPE, leaves the pool and
// the outputs bit for bit as rotating k with loom/sdk_rope.hpp and calling forward does: for
// interleaved and NeoX pairs, all or part of head_dim rotated, every KV dtype it takes.
TEST_P(AttentionConformance, ForwardRopeKEqualsRopeThenForward) {
  const auto& [name, shape] = GetParam();
  const Problem p = make_problem(shape, 71, {{0, 37}, {12, 5}, {40, 1}});
  int tested = 0;
  for (const loom_dtype dtype : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16, LOOM_DTYPE_I8, LOOM_DTYPE_FP8_E4M3}) {
    std::string skip;
    const auto plugin = make(name, shape, &skip, dtype);
    if (!plugin) continue;
    const auto& vt = plugin->vtable<loom_attention_vtable>();
    if (vt.struct_size < offsetof(loom_attention_vtable, forward_rope_k) + sizeof(vt.forward_rope_k) ||
        vt.forward_rope_k == nullptr)
      GTEST_SKIP() << name << " does not rotate K itself (the host does)";
    for (const int32_t neox : {0, 1}) {
      for (const int32_t rope_dim : {shape.head_dim, shape.head_dim / 2}) {
        std::vector<double> inv_freq(static_cast<size_t>(rope_dim / 2));
        for (int32_t i = 0; i < rope_dim / 2; ++i)
          inv_freq[static_cast<size_t>(i)] = std::pow(10000.0, -2.0 * i / rope_dim);
        const loom_rope rope{sizeof(loom_rope), rope_dim, neox, inv_freq.data(), neox != 0 ? 1.0 : 1.25};
        // The same problem with every K row rotated by its position: what forward gets.
        Problem rotated = p;
        for (size_t i = 0; i < p.plan.size(); ++i) {
          const int32_t ctx = p.plan[i].prior + p.plan[i].fresh;
          for (int32_t pos = 0; pos < ctx; ++pos) {
            float cos_t[sdk::rope::kMaxPairs], sin_t[sdk::rope::kMaxPairs];
            sdk::rope::angles(rope, pos, cos_t, sin_t);
            for (int32_t h = 0; h < shape.n_kv_heads; ++h)
              sdk::rope::rotate(rope, rotated.k[i].data() + (static_cast<int64_t>(pos) * shape.n_kv_heads + h) * shape.head_dim,
                                cos_t, sin_t);
          }
        }
        const KvPoolShape ps{1, p.num_blocks, shape.block_size, shape.n_kv_heads, shape.head_dim, dtype};
        KvPool want_pool(ps), got_pool(ps);
        const std::vector<float> want = run(*plugin, rotated, want_pool);
        const std::vector<float> got = run(*plugin, p, got_pool, &rope);
        const std::string what = name + " kv " + sdk::kv::dtype_name(dtype) + (neox ? " neox" : " interleaved") +
                                 " rope_dim " + std::to_string(rope_dim);
        ASSERT_EQ(got.size(), want.size());
        ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << what;
        const size_t pool_bytes = static_cast<size_t>(ps.num_blocks) * static_cast<size_t>(want_pool.block_bytes());
        ASSERT_EQ(std::memcmp(got_pool.k(0).data, want_pool.k(0).data, pool_bytes), 0) << what << ": K pool";
        ASSERT_EQ(std::memcmp(got_pool.v(0).data, want_pool.v(0).data, pool_bytes), 0) << what << ": V pool";
      }
    }
    ++tested;
  }
  if (tested == 0) GTEST_SKIP() << name << " takes no KV dtype";
}

// flash_cpu gives each work item a run of several KV heads, a path the six-sequence plan above
// never takes.
TEST_P(AttentionConformance, ManyDecodesMatchReference) {
  const auto& [name, shape] = GetParam();
  std::vector<SeqPlan> plan;
  for (int32_t i = 0; i < 40; ++i) plan.push_back({(i * 37) % 90, 1});
  const Problem p = make_problem(shape, 91, plan);
  std::string skip;
  const auto plugin = make(name, shape, &skip);
  if (!plugin) GTEST_SKIP() << skip;
  const KvPoolShape ps{1, p.num_blocks, shape.block_size, shape.n_kv_heads, shape.head_dim, LOOM_DTYPE_F32};
  KvPool pool(ps);
  const std::vector<float> out = run(*plugin, p, pool);
  const std::vector<double> dense = reference(p);
  ASSERT_EQ(out.size(), dense.size());
  for (size_t i = 0; i < dense.size(); ++i) ASSERT_NEAR(out[i], dense[i], 2e-5) << name << " at " << i;
}

const Shape kShapes[] = {{64, 4, 4, 16}, {64, 8, 2, 32}, {128, 8, 1, 16}, {128, 4, 4, 32}, {64, 16, 2, 16}};

INSTANTIATE_TEST_SUITE_P(Plugins, AttentionConformance,
                         ::testing::Combine(::testing::ValuesIn(conformance::plugin_names()),
                                            ::testing::ValuesIn(kShapes)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + shape_name(std::get<1>(info.param));
                         });

TEST(AttentionNaive, RefusesWhatItCannotDo) {
  ThreadPool threads(1);
  PluginHost host(threads, {});
  loom_attention_create_args a{};
  a.struct_size = sizeof(a);
  a.n_heads = 4;
  a.n_kv_heads = 4;
  a.head_dim = 8;
  a.scale = 0.35f;
  a.kv_dtype = LOOM_DTYPE_F16;
  a.block_size = 16;
  try {
    host.create(PluginSpec{LOOM_KIND_ATTENTION, "naive", "", "{}"}, &a);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kv_dtype f16"), std::string::npos) << e.what();
  }
  a.kv_dtype = LOOM_DTYPE_F32;
  EXPECT_THROW(host.create(PluginSpec{LOOM_KIND_ATTENTION, "naive", "", R"({"tile": 4})"}, &a), Error);
}

}  // namespace
}  // namespace loom
