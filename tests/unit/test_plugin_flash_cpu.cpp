// attention/flash_cpu: exact results where softmax weights are exactly representable (one key;
// equal keys across several blocks, and across several split-K partitions), the online rescaling
// across blocks against a double reference, the portable and SIMD kernels agreeing, and what
// create refuses. Shapes are tiny: head_dim 4..8, block_size 2, one sequence. Encoded KV pools
// (f16, bf16, int8, fp8_e4m3): both kernels agree and stay near the f32 result. (Random shapes
// against `naive` live in tests/conformance/conformance_attention*.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "core/common/error.hpp"
#include "core/common/thread_pool.hpp"
#include "core/plugin/plugin_host.hpp"
#include "loom/attention.h"
#include "loom/sdk_kv_quant.hpp"
#include "plugins/attention/flash_cpu/flash_cpu_split.hpp"

namespace loom {
namespace {

loom_tensor_view view(float* data, std::initializer_list<int64_t> shape) {
  loom_tensor_view v{};
  v.data = data;
  v.dtype = LOOM_DTYPE_F32;
  v.ndim = static_cast<int32_t>(shape.size());
  int32_t d = 0;
  for (int64_t s : shape) v.shape[d++] = s;
  for (d = 0; d < LOOM_MAX_DIMS; ++d) v.strides[d] = 1;
  for (d = v.ndim - 2; d >= 0; --d) v.strides[d] = v.strides[d + 1] * v.shape[d + 1];
  return v;
}

// One sequence prefilled from position 0 in one step: num_tokens = context.
struct OneSeq {
  int32_t H, KVH, D, bs = 2, T;
  std::vector<float> q, k, v, out, k_cache, v_cache;  // [T,H,D] [T,KVH,D] [T,KVH,D] [T,H,D] pools
  std::vector<int32_t> query_start, seq_lens, positions, slots, table;
  int32_t num_blocks;
  loom_dtype kv_dtype = LOOM_DTYPE_F32;
  std::vector<char> k_pool, v_pool;  // encoded pools (kv_dtype != f32), SDK block layout

  OneSeq(int32_t h, int32_t kvh, int32_t d, int32_t t) : H(h), KVH(kvh), D(d), T(t) {
    q.assign(size_t(T * H * D), 0.0f);
    k.assign(size_t(T * KVH * D), 0.0f);
    v.assign(size_t(T * KVH * D), 0.0f);
    out.assign(size_t(T * H * D), NAN);
    const int32_t nb = (T + bs - 1) / bs;
    num_blocks = nb + 2;
    k_cache.assign(size_t(num_blocks * bs * KVH * D), 0.0f);
    v_cache = k_cache;
    // Blocks in reverse order, so the table is really walked.
    for (int32_t i = 0; i < nb; ++i) table.push_back(num_blocks - 1 - i);
    query_start = {0, T};
    seq_lens = {T};
    for (int32_t p = 0; p < T; ++p) {
      positions.push_back(p);
      slots.push_back(table[size_t(p / bs)] * bs + p % bs);
    }
  }

  void run(const LoadedPlugin& plugin) {
    loom_attention_batch b{};
    b.struct_size = sizeof(b);
    b.num_seqs = 1;
    b.num_tokens = T;
    b.query_start = query_start.data();
    b.seq_lens = seq_lens.data();
    b.positions = positions.data();
    b.slot_mapping = slots.data();
    b.block_tables = table.data();
    b.max_blocks_per_seq = static_cast<int32_t>(table.size());
    b.block_size = bs;
    const auto qv = view(q.data(), {T, H, D}), kv = view(k.data(), {T, KVH, D}), vv = view(v.data(), {T, KVH, D});
    auto ov = view(out.data(), {T, H, D});
    auto kc = view(k_cache.data(), {num_blocks, bs, KVH, D}), vc = view(v_cache.data(), {num_blocks, bs, KVH, D});
    if (kv_dtype != LOOM_DTYPE_F32) {
      const int64_t block = sdk::kv::block_bytes(kv_dtype, bs, KVH, D);
      k_pool.resize(static_cast<size_t>(num_blocks * block));
      v_pool.resize(k_pool.size());
      kc.data = k_pool.data();
      vc.data = v_pool.data();
      for (auto* c : {&kc, &vc}) {
        c->dtype = kv_dtype;
        c->strides[0] = block / sdk::kv::element_size(kv_dtype);
      }
    }
    plugin.call("forward", &loom_attention_vtable::forward, &b, &qv, &kv, &vv, &kc, &vc, &ov);
  }
  float& at(std::vector<float>& x, int32_t heads, int32_t t, int32_t h, int32_t d) {
    return x[size_t((t * heads + h) * D + d)];
  }
};

class FlashCpu : public ::testing::Test {
 protected:
  std::unique_ptr<LoadedPlugin> make(int32_t H, int32_t KVH, int32_t D, const std::string& config = "{}",
                                     loom_dtype kv = LOOM_DTYPE_F32) {
    loom_attention_create_args a{};
    a.struct_size = sizeof(a);
    a.n_heads = H;
    a.n_kv_heads = KVH;
    a.head_dim = D;
    a.scale = 0.5f;
    a.kv_dtype = kv;
    a.block_size = 2;
    a.device = loom_device{LOOM_DEVICE_CPU, 0};
    return host_.create(PluginSpec{LOOM_KIND_ATTENTION, "flash_cpu", "", config}, &a);
  }
  ThreadPool threads_{2};
  PluginHost host_{threads_, {}};
};

TEST_F(FlashCpu, EqualKeysAverageValuesExactlyAndWriteThePool) {
  // 4 tokens over 2 blocks, equal keys: token p's output is the mean of V rows 0..p, and every
  // weight is exp(0) = 1, so the result is exact (means of small integers).
  OneSeq s(2, 1, 4, 4);
  for (int32_t t = 0; t < 4; ++t) {
    for (int32_t d = 0; d < 4; ++d) {
      s.at(s.k, 1, t, 0, d) = 1.0f;
      s.at(s.v, 1, t, 0, d) = static_cast<float>(t * 4 + d);
      for (int32_t h = 0; h < 2; ++h) s.at(s.q, 2, t, h, d) = static_cast<float>(h + 1);
    }
  }
  s.run(*make(2, 1, 4));
  for (int32_t t = 0; t < 4; ++t) {
    for (int32_t h = 0; h < 2; ++h) {
      for (int32_t d = 0; d < 4; ++d)
        EXPECT_EQ(s.at(s.out, 2, t, h, d), static_cast<float>(t * 2 + d)) << t << " " << h << " " << d;
    }
    // Slot of token t: the pool row holds its K/V exactly.
    const size_t slot = size_t(s.slots[size_t(t)]);
    for (int32_t d = 0; d < 4; ++d) {
      EXPECT_EQ(s.v_cache[slot * 4 + size_t(d)], s.at(s.v, 1, t, 0, d));
      EXPECT_EQ(s.k_cache[slot * 4 + size_t(d)], 1.0f);
    }
  }
}

TEST_F(FlashCpu, EqualKeysAverageValuesExactlyAcrossPartitions) {
  // The same over 2P + 6 tokens: rows past P merge two or three split-K partials, whose weights
  // are all exp(0) = 1 and whose sums are integers below 2^24, so the merge is exact too.
  const int32_t T = 2 * flash_cpu::kPartitionTokens + 6;
  OneSeq s(2, 1, 4, T);
  for (int32_t t = 0; t < T; ++t) {
    for (int32_t d = 0; d < 4; ++d) {
      s.at(s.k, 1, t, 0, d) = 1.0f;
      s.at(s.v, 1, t, 0, d) = static_cast<float>(t * 4 + d);
      for (int32_t h = 0; h < 2; ++h) s.at(s.q, 2, t, h, d) = static_cast<float>(h + 1);
    }
  }
  for (const char* config : {R"({"simd": "auto"})", R"({"simd": "portable"})"}) {
    s.run(*make(2, 1, 4, config));
    for (int32_t t = 0; t < T; ++t) {
      for (int32_t h = 0; h < 2; ++h) {
        for (int32_t d = 0; d < 4; ++d)
          ASSERT_EQ(s.at(s.out, 2, t, h, d), static_cast<float>(t * 2 + d)) << config << " " << t << " " << h << " " << d;
      }
    }
  }
}

TEST_F(FlashCpu, RescalesAcrossBlocksLikeExactSoftmax) {
  // Scores grow block after block (the running max moves every block) and GQA groups 4 heads.
  OneSeq s(4, 1, 8, 7);
  for (int32_t t = 0; t < 7; ++t) {
    for (int32_t d = 0; d < 8; ++d) {
      s.at(s.k, 1, t, 0, d) = 0.25f * static_cast<float>(t) * (d % 2 == 0 ? 1.0f : -0.5f);
      s.at(s.v, 1, t, 0, d) = static_cast<float>((t * 3 + d) % 5) - 2.0f;
      for (int32_t h = 0; h < 4; ++h) s.at(s.q, 4, t, h, d) = static_cast<float>(h) - 1.5f + 0.1f * d;
    }
  }
  s.run(*make(4, 1, 8));
  for (int32_t t = 0; t < 7; ++t) {
    for (int32_t h = 0; h < 4; ++h) {
      std::vector<double> w(size_t(t) + 1);
      double mx = -INFINITY, sum = 0;
      for (int32_t j = 0; j <= t; ++j) {
        double dot = 0;
        for (int32_t d = 0; d < 8; ++d) dot += double(s.at(s.q, 4, t, h, d)) * s.at(s.k, 1, j, 0, d);
        w[size_t(j)] = 0.5 * dot;
        mx = std::max(mx, w[size_t(j)]);
      }
      for (auto& x : w) sum += (x = std::exp(x - mx));
      for (int32_t d = 0; d < 8; ++d) {
        double acc = 0;
        for (int32_t j = 0; j <= t; ++j) acc += w[size_t(j)] * s.at(s.v, 1, j, 0, d);
        EXPECT_NEAR(s.at(s.out, 4, t, h, d), acc / sum, 1e-6) << t << " " << h << " " << d;
      }
    }
  }
}

TEST_F(FlashCpu, PortableAndSimdKernelsAgree) {
  OneSeq a(8, 2, 12, 9);  // head_dim 12: not a multiple of the 16-lane dot, exercises the tail
  for (size_t i = 0; i < a.q.size(); ++i) a.q[i] = std::sin(0.37f * static_cast<float>(i));
  for (size_t i = 0; i < a.k.size(); ++i) a.k[i] = std::cos(0.11f * static_cast<float>(i));
  for (size_t i = 0; i < a.v.size(); ++i) a.v[i] = std::sin(0.05f * static_cast<float>(i) + 1.0f);
  OneSeq b = a;
  a.run(*make(8, 2, 12, R"({"simd": "auto"})"));
  b.run(*make(8, 2, 12, R"({"simd": "portable"})"));
  for (size_t i = 0; i < a.out.size(); ++i) EXPECT_NEAR(a.out[i], b.out[i], 1e-6) << i;
}

TEST_F(FlashCpu, EncodedKvPoolsAgreeAcrossKernelsAndStayNearF32) {
  // head_dim 12 runs the F16C tail; 9 tokens over 5 blocks re-encode int8 block-heads (fp8 rows
  // carry their own scales).
  OneSeq base(8, 2, 12, 9);
  for (size_t i = 0; i < base.q.size(); ++i) base.q[i] = std::sin(0.37f * static_cast<float>(i));
  for (size_t i = 0; i < base.k.size(); ++i) base.k[i] = std::cos(0.11f * static_cast<float>(i)) * (0.5f + 0.1f * static_cast<float>(i % 13));
  for (size_t i = 0; i < base.v.size(); ++i) base.v[i] = std::sin(0.05f * static_cast<float>(i) + 1.0f);
  OneSeq f32 = base;
  f32.run(*make(8, 2, 12));
  // Largest |out - f32 out| allowed, outputs being of order 1.
  const std::pair<loom_dtype, float> bounds[] = {
      {LOOM_DTYPE_F16, 2e-3f}, {LOOM_DTYPE_BF16, 2e-2f}, {LOOM_DTYPE_I8, 3e-2f}, {LOOM_DTYPE_FP8_E4M3, 1e-1f}};
  for (const auto& [dtype, bound] : bounds) {
    OneSeq a = base, b = base;
    a.kv_dtype = b.kv_dtype = dtype;
    a.run(*make(8, 2, 12, R"({"simd": "auto"})", dtype));
    b.run(*make(8, 2, 12, R"({"simd": "portable"})", dtype));
    EXPECT_EQ(a.k_pool, b.k_pool) << sdk::kv::dtype_name(dtype);  // one encoder for both kernels
    EXPECT_EQ(a.v_pool, b.v_pool) << sdk::kv::dtype_name(dtype);
    for (size_t i = 0; i < a.out.size(); ++i) {
      ASSERT_NEAR(a.out[i], b.out[i], 1e-6) << sdk::kv::dtype_name(dtype) << " " << i;
      ASSERT_NEAR(a.out[i], f32.out[i], bound) << sdk::kv::dtype_name(dtype) << " " << i;
    }
  }
}

TEST_F(FlashCpu, HalfPoolsHoldTheSdkEncodingOfEveryValue) {
  // The SIMD kernel's writers encode 8 values at a time (F16C for f16, integer rounding for
  // bf16); the pool must hold exactly what sdk::kv::write_row writes: halfway cases of both
  // formats (ties to even up and down), subnormals, overflow, infinities, signed zeros and NaN
  // with and without a payload in the bits bf16 drops (in a group of 8 and in the tail of
  // head_dim 12).
  const auto bits = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  const float specials[] = {0.0f, -0.0f, 1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 0x1p-25f, 0x1.8p-24f, 3e-5f,
                            -0x1p-15f, 65519.0f, 65520.0f, 70000.0f, -1e9f, INFINITY, -INFINITY, NAN,
                            0.1f, -2.5e-6f, 2049.0f, 4097.0f, 0x1.ffep-15f, 1e-30f, -65504.0f, 0.333333f,
                            1.0f + 0x1p-8f, 1.0f + 0x3p-8f, -(1.0f + 0x1p-8f), 1.0f + 0x1.02p-8f, bits(0x7f7fffffu),
                            bits(0x7f7f8000u), bits(0x00008000u), bits(0x80018000u), bits(0x7f800001u),
                            bits(0xffc00001u), bits(0x7fbfffffu), 3.4e38f, -1e-40f};
  const size_t n = std::size(specials);
  for (const loom_dtype dtype : {LOOM_DTYPE_F16, LOOM_DTYPE_BF16}) {
    OneSeq s(2, 1, 12, 3);
    s.kv_dtype = dtype;
    for (size_t i = 0; i < s.k.size(); ++i) s.k[i] = specials[i % n];
    for (size_t i = 0; i < s.v.size(); ++i) s.v[i] = specials[(i * 7 + 3) % n];
    for (size_t i = 0; i < s.q.size(); ++i) s.q[i] = 0.25f;
    s.run(*make(2, 1, 12, R"({"simd": "auto"})", dtype));
    std::vector<char> k_want(s.k_pool.size(), 0), v_want(s.v_pool.size(), 0);
    const int64_t block = sdk::kv::block_bytes(dtype, s.bs, 1, 12);
    for (int32_t t = 0; t < s.T; ++t) {
      const int32_t slot = s.slots[size_t(t)];
      sdk::kv::write_row(dtype, k_want.data() + (slot / s.bs) * block, slot % s.bs, 0, &s.k[size_t(t * 12)], s.bs,
                         1, 12);
      sdk::kv::write_row(dtype, v_want.data() + (slot / s.bs) * block, slot % s.bs, 0, &s.v[size_t(t * 12)], s.bs,
                         1, 12);
    }
    EXPECT_EQ(s.k_pool, k_want) << sdk::kv::dtype_name(dtype);
    EXPECT_EQ(s.v_pool, v_want) << sdk::kv::dtype_name(dtype);
  }
}

TEST_F(FlashCpu, RefusesWhatItCannotDo) {
  auto expect_refusal = [&](auto&& fn, const std::string& needle) {
    try {
      fn();
      ADD_FAILURE() << "no refusal, expected " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_refusal([&] { make(4, 4, 8, "{}", LOOM_DTYPE_Q8_0); }, "kv_dtype q8_0");
  expect_refusal([&] { make(4, 4, 8, "{}", LOOM_DTYPE_U8); }, "kv_dtype u8");
  expect_refusal([&] { make(4, 4, 6); }, "head_dim 6");
  expect_refusal([&] { make(4, 4, 260); }, "head_dim 260");
  expect_refusal([&] { make(4, 3, 8); }, "n_kv_heads 3");
  // Every config problem at once.
  expect_refusal([&] { make(4, 4, 8, R"({"tile": 4, "simd": "avx512"})"); }, "unknown key \"tile\"");
  expect_refusal([&] { make(4, 4, 8, R"({"tile": 4, "simd": "avx512"})"); }, "\"simd\" must be");
}

}  // namespace
}  // namespace loom
