// Attention conformance problems shared by conformance_attention*.cpp: random q/k/v for a plan
// of sequences (context already cached, tokens of the step under test), a runner that feeds them
// through one plugin in two steps, and a dense double-precision reference (optionally windowed).
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/executor/batch_builder.hpp"
#include "core/executor/kv_pool.hpp"
#include "core/plugin/plugin_host.hpp"
#include "loom/attention.h"
#include "tests/conformance/conformance_support.hpp"

namespace loom::attention_problem {

struct Shape {
  int32_t head_dim, n_heads, n_kv_heads, block_size;
};

inline std::string shape_name(const Shape& s) {
  return "d" + std::to_string(s.head_dim) + "_h" + std::to_string(s.n_heads) + "_kv" + std::to_string(s.n_kv_heads) +
         "_bs" + std::to_string(s.block_size);
}

// Per sequence: tokens already in the cache before the step under test, and tokens of the step.
struct SeqPlan {
  int32_t prior, fresh;
};
inline const std::vector<SeqPlan> kPlan = {{0, 1}, {10, 7}, {33, 1}, {0, 29}, {64, 3}, {5, 1}};

inline loom_tensor_view view(float* data, std::initializer_list<int64_t> shape) {
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

// All q/k/v of every sequence's full context, and what one plugin produced for the test step.
struct Problem {
  Shape shape;
  std::vector<SeqPlan> plan;
  std::vector<std::vector<float>> q, k, v;  // per seq: [ctx, heads, D] / [ctx, kv_heads, D]
  std::vector<std::vector<int32_t>> tables;
  int32_t num_blocks = 0;
};

inline Problem make_problem(const Shape& s, uint64_t seed, const std::vector<SeqPlan>& plan = kPlan) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Problem p;
  p.shape = s;
  p.plan = plan;
  int32_t blocks = 0;
  for (const SeqPlan& sp : p.plan) {
    const int32_t ctx = sp.prior + sp.fresh;
    auto fill = [&](int32_t heads) {
      std::vector<float> x(static_cast<size_t>(ctx) * heads * s.head_dim);
      for (auto& e : x) e = u(rng) * 2.0f;  // scores of a few units: a real softmax, not uniform
      return x;
    };
    p.q.push_back(fill(s.n_heads));
    p.k.push_back(fill(s.n_kv_heads));
    p.v.push_back(fill(s.n_kv_heads));
    const int32_t nb = (ctx + s.block_size - 1) / s.block_size + 1;  // one spare block
    blocks += nb;
    p.tables.emplace_back(static_cast<size_t>(nb));
  }
  p.num_blocks = blocks + 3;
  std::vector<int32_t> ids(static_cast<size_t>(p.num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  size_t next = 0;
  for (auto& t : p.tables)
    for (auto& b : t) b = ids[next++];
  return p;
}

// Runs the two steps (prior context, then the step under test) through one plugin instance;
// returns the test step's output [num_tokens, heads, D] and leaves the pool filled.
// With `rope`, forward_rope_k gets the problem's k as it is (without RoPE) and rotates it.
// With `window` > 0 the test step runs through forward_window (rope as given), and every block
// wholly before all of a sequence's windows reads -1 in its table, as a cache that released it
// would leave it: a plugin that still read it would fail.
// With `fill_window` > 0 the first step (whose outputs are dropped: it only fills the pool) runs
// through forward_window with it, so long contexts cost a plugin O(context), not O(context^2).
inline std::vector<float> run(const LoadedPlugin& plugin, const Problem& p, KvPool& pool,
                              const loom_rope* rope = nullptr, int32_t window = 0, int32_t fill_window = 0) {
  const Shape& s = p.shape;
  BatchBuilder builder(s.block_size);
  std::vector<float> out;
  for (int step = 0; step < 2; ++step) {
    std::vector<SeqSchedule> seqs;
    std::vector<std::vector<int32_t>> dummy_ids;
    std::vector<size_t> which;
    std::vector<std::vector<int32_t>> tables = p.tables;
    for (size_t i = 0; i < p.plan.size(); ++i) {
      const int32_t from = step == 0 ? 0 : p.plan[i].prior;
      const int32_t n = step == 0 ? p.plan[i].prior : p.plan[i].fresh;
      if (n == 0) continue;
      if (step == 1 && window > 0) {  // the first query's window starts at from - window + 1
        const int32_t first = std::max(0, from - window + 1);
        for (int32_t b = 0; (b + 1) * s.block_size <= first; ++b) tables[i][static_cast<size_t>(b)] = -1;
      }
      dummy_ids.emplace_back(static_cast<size_t>(n), 0);
      which.push_back(i);
      seqs.push_back(SeqSchedule{{}, from, tables[i], true});
    }
    for (size_t j = 0; j < seqs.size(); ++j) seqs[j].token_ids = dummy_ids[j];
    BuiltBatch batch;
    builder.build(seqs, batch);
    const int64_t T = batch.num_tokens(), H = s.n_heads, KVH = s.n_kv_heads, D = s.head_dim;
    std::vector<float> q(static_cast<size_t>(T * H * D)), k(static_cast<size_t>(T * KVH * D)),
        v(static_cast<size_t>(T * KVH * D));
    out.assign(static_cast<size_t>(T * H * D), NAN);
    int64_t t = 0;
    for (size_t j = 0; j < seqs.size(); ++j) {
      const size_t i = which[j];
      for (int32_t pos = seqs[j].start_pos; pos < batch.seq_lens[j]; ++pos, ++t) {
        std::copy_n(p.q[i].begin() + pos * H * D, H * D, q.begin() + t * H * D);
        std::copy_n(p.k[i].begin() + pos * KVH * D, KVH * D, k.begin() + t * KVH * D);
        std::copy_n(p.v[i].begin() + pos * KVH * D, KVH * D, v.begin() + t * KVH * D);
      }
    }
    const loom_attention_batch ab = batch.attention();
    const loom_tensor_view qv = view(q.data(), {T, H, D}), kv = view(k.data(), {T, KVH, D}),
                           vv = view(v.data(), {T, KVH, D});
    loom_tensor_view ov = view(out.data(), {T, H, D});
    if (step == 0 && fill_window > 0)
      plugin.call("forward_window", &loom_attention_vtable::forward_window, &ab, fill_window, rope, &qv, &kv, &vv,
                  &pool.k(0), &pool.v(0), &ov);
    else if (step == 1 && window > 0)
      plugin.call("forward_window", &loom_attention_vtable::forward_window, &ab, window, rope, &qv, &kv, &vv,
                  &pool.k(0), &pool.v(0), &ov);
    else if (rope != nullptr)
      plugin.call("forward_rope_k", &loom_attention_vtable::forward_rope_k, &ab, rope, &qv, &kv, &vv, &pool.k(0),
                  &pool.v(0), &ov);
    else
      plugin.call("forward", &loom_attention_vtable::forward, &ab, &qv, &kv, &vv, &pool.k(0), &pool.v(0), &ov);
  }
  return out;
}

// Dense reference for the test step, in double: [num_tokens, heads, D] in batch order.
// window > 0: position pos attends to pos - window + 1 .. pos only.
inline std::vector<double> reference(const Problem& p, int32_t window = 0) {
  const Shape& s = p.shape;
  const int32_t H = s.n_heads, KVH = s.n_kv_heads, D = s.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> out;
  for (size_t i = 0; i < p.plan.size(); ++i) {
    for (int32_t pos = p.plan[i].prior; pos < p.plan[i].prior + p.plan[i].fresh; ++pos) {
      for (int32_t h = 0; h < H; ++h) {
        const int32_t kvh = h / (H / KVH);
        const int32_t first = window > 0 ? std::max(0, pos - window + 1) : 0;
        std::vector<double> w(static_cast<size_t>(pos) + 1, 0.0);
        double mx = -INFINITY;
        for (int32_t j = first; j <= pos; ++j) {
          double dot = 0;
          for (int32_t d = 0; d < D; ++d)
            dot += double(p.q[i][(pos * H + h) * D + d]) * p.k[i][(j * KVH + kvh) * D + d];
          w[static_cast<size_t>(j)] = dot * scale;
          mx = std::max(mx, w[static_cast<size_t>(j)]);
        }
        double sum = 0;
        for (int32_t j = first; j <= pos; ++j) sum += (w[static_cast<size_t>(j)] = std::exp(w[static_cast<size_t>(j)] - mx));
        for (int32_t d = 0; d < D; ++d) {
          double acc = 0;
          for (int32_t j = first; j <= pos; ++j) acc += w[static_cast<size_t>(j)] * p.v[i][(j * KVH + kvh) * D + d];
          out.push_back(acc / sum);
        }
      }
    }
  }
  return out;
}

// An instance of attention plugin `name` for `s` (scale 1/sqrt(head_dim)) with `config`, or nullptr
// with the reason in *skip when it cannot run here (conformance::create_or_skip).
inline std::unique_ptr<LoadedPlugin> create_attention(const PluginHost& host, const std::string& name, const Shape& s,
                                                      std::string* skip, loom_dtype kv_dtype = LOOM_DTYPE_F32,
                                                      const std::string& config = "{}") {
  loom_attention_create_args a{};
  a.struct_size = sizeof(a);
  a.n_heads = s.n_heads;
  a.n_kv_heads = s.n_kv_heads;
  a.head_dim = s.head_dim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  a.kv_dtype = kv_dtype;
  a.block_size = s.block_size;
  a.device = loom_device{LOOM_DEVICE_CPU, 0};
  return conformance::create_or_skip(host, LOOM_KIND_ATTENTION, name, &a, skip, config);
}

}  // namespace loom::attention_problem
