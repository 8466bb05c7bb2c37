// gguf-kernel-bench: the AVX2 Q4_0 and Q8_0 kernels on the file layout (tile_q0) against the
// x8 layout (gguf_repack.hpp), one thread, same run, at the llama-1b shapes; also checks that
// the two agree; then (gguf_kernel_bench_kquant.cpp) the K-quant kernels, AVX2 against portable.
// Not a test (timings are noisy); run it on a quiet machine:
//   <build>/bin/gguf-kernel-bench [repetitions [decode|prefill [x8|kquant]]]
//   <build>/bin/gguf-kernel-bench repetitions legacy   (the Q4_1/Q5_0/Q5_1/IQ4_NL kernels, gguf_legacy_bench.cpp)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gguf_kernels.hpp"
#include "gguf_repack.hpp"
#include "loom/sdk_gguf_blocks.hpp"

namespace g = loom::sdk::gguf;

int bench_kquant(int reps, const char* mode);  // gguf_kernel_bench_kquant.cpp

namespace {

constexpr int64_t kTile = 32;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Case {
  bool q8;
  int64_t out, in, n;
};

}  // namespace

int run_legacy_bench(int reps);  // gguf_legacy_bench.cpp

int main(int argc, char** argv) {
#ifdef LOOM_GGUF_HAVE_AVX2
  const int reps = argc > 1 ? std::atoi(argv[1]) : 3;
  const std::string part = argc > 3 ? argv[3] : "";
  if (part == "kquant") return bench_kquant(reps, argc > 2 ? argv[2] : nullptr);
  if (!loom_gguf::cpu_has_avx2_fma()) {
    std::puts("no AVX2/FMA: nothing to compare");
    return 0;
  }
  if (argc > 2 && std::string(argv[2]) == "legacy") return run_legacy_bench(reps);
  const loom_gguf::Kernels k = loom_gguf::avx2_kernels();

  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<Case> cases;
  for (const bool q8 : {false, true})
    for (const int64_t n : {1, 512})
      if (argc <= 2 || std::string(argv[2]) == (n == 1 ? "decode" : "prefill"))
      for (const auto& [out, in] : {std::pair<int64_t, int64_t>{2048, 2048}, {8192, 2048}, {2048, 8192}})
        cases.push_back(Case{q8, out, in, n});
  for (const Case c : cases) {
    const loom_gguf::TileKernel old_kernel = c.q8 ? k.q8_0 : k.q4_0;
    const loom_gguf::PackedKernel x8 = c.q8 ? loom_gguf::avx2_q8_0_x8_kernel() : loom_gguf::avx2_q4_0_x8_kernel();
    const int64_t nb = c.in / g::kQK;
    const int64_t row_bytes = nb * static_cast<int64_t>(c.q8 ? sizeof(g::BlockQ8_0) : sizeof(g::BlockQ4_0));
    // Decode streams from memory: enough copies of W to overflow the last-level cache.
    const int64_t copies = c.n == 1 ? std::max<int64_t>(1, (96 << 20) / (c.out * row_bytes)) : 1;
    std::vector<std::vector<uint8_t>> w(static_cast<size_t>(copies));
    std::vector<loom_gguf::PackedWeight> packed;
    std::vector<float> row(static_cast<size_t>(c.in));
    for (auto& m : w) {
      m.resize(static_cast<size_t>(c.out * row_bytes));
      for (int64_t o = 0; o < c.out; ++o) {
        for (auto& e : row) e = u(rng);
        if (c.q8)
          g::quantize_q8_0(row.data(), reinterpret_cast<g::BlockQ8_0*>(m.data() + o * row_bytes), nb);
        else
          g::quantize_q4_0(row.data(), reinterpret_cast<g::BlockQ4_0*>(m.data() + o * row_bytes), nb);
      }
      packed.push_back((c.q8 ? &loom_gguf::pack_q8_0 : &loom_gguf::pack_q4_0)(m.data(), row_bytes, c.out, nb));
    }
    const int64_t xq_row_bytes = nb * static_cast<int64_t>(sizeof(g::BlockQ8_0));
    std::vector<uint8_t> xq(static_cast<size_t>(c.n * xq_row_bytes));
    for (int64_t t = 0; t < c.n; ++t) {
      for (auto& e : row) e = u(rng);
      k.quantize_q8_0(row.data(), reinterpret_cast<g::BlockQ8_0*>(xq.data() + t * xq_row_bytes), nb);
    }
    std::vector<float> xd(static_cast<size_t>(c.n * nb));
    std::vector<int32_t> xoff(xd.size());
    std::vector<float> y_old(static_cast<size_t>(c.n * c.out)), y_new(y_old.size());
    double best_old = 1e30, best_new = 1e30;
    const int iters = c.n == 1 ? 20 : 1;
    for (int rep = 0; rep < reps; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      for (int it = 0; it < iters; ++it) {
        const uint8_t* wd = w[static_cast<size_t>(it % copies)].data();
        for (int64_t o0 = 0; o0 < c.out; o0 += kTile)
          old_kernel(wd + o0 * row_bytes, row_bytes, std::min(kTile, c.out - o0), xq.data(), xq_row_bytes, c.n, c.in,
                 y_old.data() + o0, c.out);
      }
      best_old = std::min(best_old, seconds_since(t0) / iters);
      t0 = std::chrono::steady_clock::now();
      for (int it = 0; it < iters; ++it) {
        const loom_gguf::ActivationBlockInfo info{xd.data(), xoff.data()};
        loom_gguf::activation_block_info(xq.data(), xq_row_bytes, c.n, nb, info);
        const loom_gguf::PackedWeight& p = packed[static_cast<size_t>(it % copies)];
        const int64_t n_groups = (c.out + 7) / 8;
        for (int64_t g0 = 0; g0 < n_groups; g0 += kTile / 8)
          x8(p, g0, std::min(g0 + kTile / 8, n_groups), xq.data(), xq_row_bytes, info, c.n, y_new.data() + g0 * 8,
             c.out);
      }
      best_new = std::min(best_new, seconds_since(t0) / iters);
    }
    double max_rel = 0;
    for (size_t i = 0; i < y_old.size(); ++i)
      max_rel = std::max(max_rel, std::abs(double{y_old[i]} - y_new[i]) / (1.0 + std::abs(double{y_old[i]})));
    const double gmac = static_cast<double>(c.out * c.in * c.n) * 1e-9;
    std::printf("%s out=%5lld in=%5lld n=%3lld  file layout %8.3f ms (%6.1f GMAC/s)  x8 %8.3f ms (%6.1f GMAC/s)  "
                "speedup %.2fx  max rel diff %.1e\n",
                c.q8 ? "q8_0" : "q4_0", static_cast<long long>(c.out), static_cast<long long>(c.in), static_cast<long long>(c.n), best_old * 1e3,
                gmac / best_old, best_new * 1e3, gmac / best_new, best_old / best_new, max_rel);
  }
  if (part.empty()) return bench_kquant(reps, argc > 2 ? argv[2] : nullptr);
#else
  (void)argc;
  (void)argv;
  std::puts("not x86-64: nothing to compare");
#endif
  return 0;
}
