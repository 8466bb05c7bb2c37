// loom-bench-attention: times attention plugins side by side on two workloads of a Llama-8B-like
// layer (32 query heads, 8 KV heads, head_dim 128, block_size 16):
//   decode:  32 sequences x 1 new token, context 1024 each
//   prefill: 1 sequence, a 512-token chunk from position 0
// and on one long decode of a Gemma-3-270M-like layer (4 query heads, 1 KV head, head_dim 256),
// at contexts 2048 and 8192: the case split-K spreads over the threads.
// Not a test: it prints the median wall time of each plugin per workload, nothing is asserted.
//   loom-bench-attention [--threads N] [--iters N] [--workload NAME ...] [plugin ...]   (default: naive flash_cpu)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/common/command_line.hpp"
#include "core/common/error.hpp"
#include "core/common/thread_pool.hpp"
#include "core/executor/batch_builder.hpp"
#include "core/executor/kv_pool.hpp"
#include "core/plugin/plugin_host.hpp"
#include "loom/attention.h"

namespace {

constexpr int32_t kBlockSize = 16;

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

// One workload: `seqs` sequences each computing `fresh` tokens after `prior` cached ones, on a
// layer of `heads` query heads, `kv_heads` KV heads of `head_dim`.
struct Workload {
  const char* name;
  int32_t heads, kv_heads, head_dim;
  int32_t seqs, prior, fresh;
};

// Median milliseconds of `iters` forward calls of one plugin on one workload.
double time_plugin(const loom::PluginHost& host, const std::string& plugin, const Workload& w, int32_t iters) {
  const int32_t kHeads = w.heads, kKvHeads = w.kv_heads, kHeadDim = w.head_dim;
  loom_attention_create_args a{};
  a.struct_size = sizeof(a);
  a.n_heads = kHeads;
  a.n_kv_heads = kKvHeads;
  a.head_dim = kHeadDim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  a.kv_dtype = LOOM_DTYPE_F32;
  a.block_size = kBlockSize;
  a.device = loom_device{LOOM_DEVICE_CPU, 0};
  const auto p = host.create(loom::PluginSpec{LOOM_KIND_ATTENTION, plugin, "", "{}"}, &a);

  const int32_t ctx = w.prior + w.fresh, per_seq = (ctx + kBlockSize - 1) / kBlockSize;
  loom::KvPool pool(loom::KvPoolShape{1, w.seqs * per_seq, kBlockSize, kKvHeads, kHeadDim, LOOM_DTYPE_F32});
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (loom_tensor_view* c : {&pool.k(0), &pool.v(0)}) {
    float* f = static_cast<float*>(c->data);
    for (int64_t i = 0; i < c->shape[0] * c->strides[0]; ++i) f[i] = u(rng);
  }
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(w.seqs)), ids(static_cast<size_t>(w.seqs));
  std::vector<loom::SeqSchedule> sched;
  for (int32_t s = 0; s < w.seqs; ++s) {
    for (int32_t b = 0; b < per_seq; ++b) tables[size_t(s)].push_back(s * per_seq + b);
    ids[size_t(s)].assign(size_t(w.fresh), 0);
    sched.push_back(loom::SeqSchedule{ids[size_t(s)], w.prior, tables[size_t(s)], true});
  }
  loom::BuiltBatch batch;
  loom::BatchBuilder(kBlockSize).build(sched, batch);
  const int64_t T = batch.num_tokens();
  std::vector<float> q(size_t(T * kHeads * kHeadDim)), k(size_t(T * kKvHeads * kHeadDim)), v(k.size()), out(q.size());
  for (auto* x : {&q, &k, &v})
    for (auto& e : *x) e = u(rng);
  const loom_attention_batch ab = batch.attention();
  const auto qv = view(q.data(), {T, kHeads, kHeadDim}), kv = view(k.data(), {T, kKvHeads, kHeadDim}),
             vv = view(v.data(), {T, kKvHeads, kHeadDim});
  auto ov = view(out.data(), {T, kHeads, kHeadDim});
  std::vector<double> ms;
  for (int32_t i = 0; i <= iters; ++i) {  // iteration 0 warms caches and scratch
    const auto t0 = std::chrono::steady_clock::now();
    p->call("forward", &loom_attention_vtable::forward, &ab, &qv, &kv, &vv, &pool.k(0), &pool.v(0), &ov);
    const auto t1 = std::chrono::steady_clock::now();
    if (i > 0) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int32_t threads = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  int32_t iters = 5;
  std::vector<std::string> plugins;
  CLI::App app{"Times attention plugins on a decode batch and a prefill chunk (a harness, not a test).",
               "loom-bench-attention"};
  loom::cli::apply_style(app);
  app.add_option("--threads", threads, "CPU threads (default: all)")->check(loom::cli::integer_in(1));
  app.add_option("--iters", iters, "timed runs, the median is reported (default 5)")->check(loom::cli::integer_in(1));
  std::vector<std::string> only;
  app.add_option("-w,--workload", only, "time only the workloads whose name contains this (repeatable)");
  app.add_option("PLUGIN", plugins, "attention plugins to time (default: naive flash_cpu)");
  if (auto status = loom::cli::parse(app, argc, argv)) return *status;
  if (plugins.empty()) plugins = {"naive", "flash_cpu"};
  try {
    loom::ThreadPool pool(threads);
    const loom::PluginHost host(pool, {});
    const Workload workloads[] = {{"decode 32x1 @1024", 32, 8, 128, 32, 1023, 1},
                                  {"prefill 1x512 @0", 32, 8, 128, 1, 0, 512},
                                  {"g3 decode 1x1 @2048", 4, 1, 256, 1, 2047, 1},
                                  {"g3 decode 1x1 @8192", 4, 1, 256, 1, 8191, 1}};
    std::printf("heads 32/8, head_dim 128 (g3: heads 4/1, head_dim 256), block_size %d, %d threads, median of %d\n",
                kBlockSize, threads, iters);
    std::printf("%-20s", "workload");
    for (const auto& p : plugins) std::printf(" %12s", (p + " ms").c_str());
    std::printf("\n");
    for (const Workload& w : workloads) {
      const auto named = [&](const std::string& part) { return std::string(w.name).find(part) != std::string::npos; };
      if (!only.empty() && std::none_of(only.begin(), only.end(), named)) continue;
      std::printf("%-20s", w.name);
      for (const auto& p : plugins) std::printf(" %12.2f", time_plugin(host, p, w, iters));
      std::printf("\n");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom-bench-attention: %s\n", e.what());
    return 1;
  }
  return 0;
}
