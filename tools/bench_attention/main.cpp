// loom-bench-attention: times attention plugins side by side on two workloads of a Llama-8B-like
// layer (32 query heads, 8 KV heads, head_dim 128, block_size 16):
//   decode:  32 sequences x 1 new token, context 1024 each
//   prefill: 1 sequence, a 512-token chunk from position 0
// on one long decode of a Gemma-3-270M-like layer (4 query heads, 1 KV head, head_dim 256),
// at contexts 2048 and 8192: the case split-K spreads over the threads; and on the decode step of
// a serving batch of llama-125m (12 heads, head_dim 64, 8 or 32 sequences at context 300), all 12
// layers one after the other, so the KV comes from memory as it does in a model.
// Not a test: it prints the median wall time of each plugin per workload, nothing is asserted.
//   loom-bench-attention [--threads N] [--iters N] [--kv-dtype T] [--workload NAME ...] [plugin ...]
//   (default: naive flash_cpu, or flash_cpu alone with an encoded KV pool: naive takes f32 only)
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
#include "loom/sdk_kv_quant.hpp"

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
// `layers` > 1 runs one forward per layer of a pool with that many layers, as a model's decode
// step does, so the KV read each call comes from memory rather than from the caches; the time is
// per step (all layers).
struct Workload {
  const char* name;
  int32_t heads, kv_heads, head_dim;
  int32_t seqs, prior, fresh;
  int32_t layers = 1;
};

// Median milliseconds of `iters` forward calls of one plugin on one workload.
double time_plugin(const loom::PluginHost& host, const std::string& plugin, const Workload& w, int32_t iters,
                   loom_dtype kv_dtype) {
  const int32_t kHeads = w.heads, kKvHeads = w.kv_heads, kHeadDim = w.head_dim;
  loom_attention_create_args a{};
  a.struct_size = sizeof(a);
  a.n_heads = kHeads;
  a.n_kv_heads = kKvHeads;
  a.head_dim = kHeadDim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  a.kv_dtype = kv_dtype;
  a.block_size = kBlockSize;
  a.device = loom_device{LOOM_DEVICE_CPU, 0};
  const auto p = host.create(loom::PluginSpec{LOOM_KIND_ATTENTION, plugin, "", "{}"}, &a);

  const int32_t ctx = w.prior + w.fresh, per_seq = (ctx + kBlockSize - 1) / kBlockSize;
  const int32_t num_blocks = w.seqs * per_seq;
  loom::KvPool pool(loom::KvPoolShape{w.layers, num_blocks, kBlockSize, kKvHeads, kHeadDim, kv_dtype});
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  // Every row of every block, encoded as the plugins write it (scales included).
  const int64_t es = loom::sdk::kv::element_size(kv_dtype);
  std::vector<float> row(static_cast<size_t>(kHeadDim));
  for (int32_t l = 0; l < w.layers; ++l) {
    for (loom_tensor_view* c : {&pool.k(l), &pool.v(l)}) {
      for (int32_t b = 0; b < num_blocks; ++b) {
        char* block = static_cast<char*>(c->data) + b * c->strides[0] * es;
        for (int32_t slot = 0; slot < kBlockSize; ++slot)
          for (int32_t h = 0; h < kKvHeads; ++h) {
            for (float& x : row) x = u(rng);
            loom::sdk::kv::write_row(kv_dtype, block, slot, h, row.data(), kBlockSize, kKvHeads, kHeadDim);
          }
      }
    }
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
    for (int32_t l = 0; l < w.layers; ++l)
      p->call("forward", &loom_attention_vtable::forward, &ab, &qv, &kv, &vv, &pool.k(l), &pool.v(l), &ov);
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
  std::string kv_name = "f32";
  app.add_option("--kv-dtype", kv_name, "KV pool dtype: f32, f16, bf16, int8, fp8_e4m3 (default f32)");
  app.add_option("PLUGIN", plugins,
                 "attention plugins to time (default: naive flash_cpu; flash_cpu alone for an encoded KV pool)");
  if (auto status = loom::cli::parse(app, argc, argv)) return *status;
  const loom_dtype kv = loom::sdk::kv::dtype_from_name(kv_name.c_str());
  if (kv == LOOM_DTYPE_INVALID) {
    std::fprintf(stderr, "loom-bench-attention: --kv-dtype %s is not one of f32, f16, bf16, int8, fp8_e4m3\n",
                 kv_name.c_str());
    return 2;
  }
  // naive reads an f32 pool only.
  if (plugins.empty()) plugins = kv == LOOM_DTYPE_F32 ? std::vector<std::string>{"naive", "flash_cpu"}
                                                      : std::vector<std::string>{"flash_cpu"};
  try {
    loom::ThreadPool pool(threads);
    const loom::PluginHost host(pool, {});
    const Workload workloads[] = {{"decode 32x1 @1024", 32, 8, 128, 32, 1023, 1},
                                  {"prefill 1x512 @0", 32, 8, 128, 1, 0, 512},
                                  {"g3 decode 1x1 @2048", 4, 1, 256, 1, 2047, 1},
                                  {"g3 decode 1x1 @8192", 4, 1, 256, 1, 8191, 1},
                                  // llama-125m's 12 layers (12 heads, head_dim 64): a serving step
                                  {"125m decode 8x1 @300", 12, 12, 64, 8, 299, 1, 12},
                                  {"125m decode 32x1 @300", 12, 12, 64, 32, 299, 1, 12}};
    std::printf("heads 32/8, head_dim 128 (g3: heads 4/1, head_dim 256; 125m: 12/12, head_dim 64, all 12 layers), "
                "%s KV, block_size %d, %d threads, median of %d\n",
                kv_name.c_str(), kBlockSize, threads, iters);
    std::printf("%-20s", "workload");
    for (const auto& p : plugins) std::printf(" %12s", (p + " ms").c_str());
    std::printf("\n");
    for (const Workload& w : workloads) {
      const auto named = [&](const std::string& part) { return std::string(w.name).find(part) != std::string::npos; };
      if (!only.empty() && std::none_of(only.begin(), only.end(), named)) continue;
      std::printf("%-20s", w.name);
      for (const auto& p : plugins) std::printf(" %12.2f", time_plugin(host, p, w, iters, kv));
      std::printf("\n");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom-bench-attention: %s\n", e.what());
    return 1;
  }
  return 0;
}
