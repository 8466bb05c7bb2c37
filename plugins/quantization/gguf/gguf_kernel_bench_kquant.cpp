// gguf-kernel-bench, K-quant part: the file-layout kernels of Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and
// IQ4_XS against Q8_K activations, one thread, a llama-1b ffn_down shape (2048 x 8192): AVX2
// and, where the CPU has AVX512-BW/VNNI, AVX-512 against portable, whose bits every kernel
// must equal (checked); for Q4_K, Q5_K, Q6_K and IQ4_XS also the x8 layout's kernels the plugin runs (AVX2, and
// AVX-512 BW/VNNI where the CPU has it). Decode streams W from memory (enough
// copies to overflow the last-level cache), so its GB/s is the weight read rate one core reaches.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gguf_kernels.hpp"
#include "gguf_kquant_x8.hpp"
#include "loom/sdk_dtype.hpp"
#include "loom/sdk_gguf_blocks.hpp"

namespace g = loom::sdk::gguf;

int bench_kquant(int reps, const char* mode) {
#ifdef LOOM_GGUF_HAVE_AVX2
  if (!loom_gguf::cpu_has_avx2_fma()) {
    std::puts("no AVX2/FMA: nothing to compare");
    return 0;
  }
  constexpr int64_t kTile = 32;
  const loom_gguf::Kernels avx2 = loom_gguf::avx2_kernels(), portable = loom_gguf::portable_kernels();
  const bool has512 = loom_gguf::cpu_has_avx512_kquant();
  const loom_gguf::KQuantKernels k512 = has512 ? loom_gguf::avx512_kquant_kernels() : loom_gguf::KQuantKernels{};
  struct Type {
    loom_dtype t;
    loom_gguf::TileKernel fast, slow, wide;  // avx2, portable, avx512 (null: none)
  };
  const Type types[] = {{LOOM_DTYPE_Q2_K, avx2.kquant.q2_k, portable.kquant.q2_k, k512.q2_k},
                        {LOOM_DTYPE_Q3_K, avx2.kquant.q3_k, portable.kquant.q3_k, k512.q3_k},
                        {LOOM_DTYPE_Q4_K, avx2.kquant.q4_k, portable.kquant.q4_k, k512.q4_k},
                        {LOOM_DTYPE_Q5_K, avx2.kquant.q5_k, portable.kquant.q5_k, k512.q5_k},
                        {LOOM_DTYPE_Q6_K, avx2.kquant.q6_k, portable.kquant.q6_k, k512.q6_k},
                        {LOOM_DTYPE_IQ4_XS, avx2.kquant.iq4_xs, portable.kquant.iq4_xs, k512.iq4_xs}};
  std::printf("one thread; AVX-512 K-quant kernels: %s\n", has512 ? "yes" : "no (this CPU lacks AVX512-BW/VNNI)");
  std::mt19937_64 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const auto now = [] { return std::chrono::steady_clock::now(); };
  for (const int64_t n : {1, 128}) {
    if (mode != nullptr && std::string(mode) != (n == 1 ? "decode" : "prefill")) continue;
    for (const Type& ty : types) {
      const auto [out, in] = std::pair<int64_t, int64_t>{2048, 8192};
      const g::BlockGeometry geo = g::block_geometry(ty.t);
      const int64_t nb = in / g::kQKK, row_bytes = nb * geo.bytes;
      const int64_t copies = n == 1 ? std::max<int64_t>(1, (256 << 20) / (out * row_bytes)) : 1;
      std::vector<std::vector<uint8_t>> w(static_cast<size_t>(copies));
      std::vector<float> row(static_cast<size_t>(in));
      for (auto& m : w) {
        m.resize(static_cast<size_t>(out * row_bytes));
        for (int64_t o = 0; o < out; ++o) {
          if (o < 64 || &m == &w[0]) {  // quantizing is slow: fresh rows for the first copy, copies of those after
            for (auto& e : row) e = nd(rng);
            g::quantize_row(ty.t, row.data(), m.data() + o * row_bytes, in);
          } else {
            std::memcpy(m.data() + o * row_bytes, w[0].data() + o * row_bytes, static_cast<size_t>(row_bytes));
          }
        }
      }
      const int64_t xq_row_bytes = nb * static_cast<int64_t>(sizeof(g::BlockQ8_K));
      std::vector<uint8_t> xq(static_cast<size_t>(n * xq_row_bytes));
      for (int64_t t = 0; t < n; ++t) {
        for (auto& e : row) e = nd(rng);
        g::quantize_q8_k(row.data(), reinterpret_cast<g::BlockQ8_K*>(xq.data() + t * xq_row_bytes), nb);
      }
      std::vector<float> y_fast(static_cast<size_t>(n * out)), y_slow(y_fast.size()), y_wide(y_fast.size());
      const auto run = [&](loom_gguf::TileKernel k, std::vector<float>& y, int iters) {
        double best = 1e30;
        for (int rep = 0; rep < reps; ++rep) {
          const auto t0 = now();
          for (int it = 0; it < iters; ++it) {
            const uint8_t* wd = w[static_cast<size_t>(it % copies)].data();
            for (int64_t o0 = 0; o0 < out; o0 += kTile)
              k(wd + o0 * row_bytes, row_bytes, std::min(kTile, out - o0), xq.data(), xq_row_bytes, n, in,
                y.data() + o0, out);
          }
          best = std::min(best, std::chrono::duration<double>(now() - t0).count() / iters);
        }
        return best;
      };
      const int iters = n == 1 ? static_cast<int>(std::max<int64_t>(copies, 8)) : 1;
      const double fast = run(ty.fast, y_fast, iters);
      // Portable is a reference, ~30x slower: timed in decode; in prefill only its first tile of
      // weight rows is computed, for the bit check.
      double slow = 0;
      if (n == 1) {
        slow = run(ty.slow, y_slow, iters);
      } else {
        y_slow = y_fast;
        ty.slow(w[0].data(), row_bytes, kTile, xq.data(), xq_row_bytes, n, in, y_slow.data(), out);
      }
      const double wide = ty.wide != nullptr ? run(ty.wide, y_wide, iters) : 0;
      const auto same = [&](const std::vector<float>& y) {
        return std::memcmp(y.data(), y_slow.data(), y.size() * sizeof(float)) == 0 ? "=" : "!=";
      };
      const double gmac = static_cast<double>(out * in * n) * 1e-9;
      const auto gbs = [&](double s) { return static_cast<double>(out * row_bytes) * 1e-9 / s; };
      std::printf("%-6s n=%3lld", loom::sdk::type_name(ty.t).c_str(), static_cast<long long>(n));
      if (n == 1) std::printf("  portable %7.2f ms |", slow * 1e3);
      std::printf(" avx2 %7.3f ms %5.1f GMAC/s", fast * 1e3, gmac / fast);
      if (n == 1) std::printf(" %5.1f GB/s", gbs(fast));
      std::printf(" (bits %s portable)", same(y_fast));
      if (ty.wide != nullptr) {
        std::printf(" | avx512 %7.3f ms %5.1f GMAC/s", wide * 1e3, gmac / wide);
        if (n == 1) std::printf(" %5.1f GB/s", gbs(wide));
        std::printf(" (bits %s portable)", same(y_wide));
      }
      if (loom_gguf::is_kquant_x8_format(ty.t)) {
        std::vector<loom_gguf::PackedWeight> packed;
        for (const auto& m : w) packed.push_back(loom_gguf::pack_kquant(ty.t, m.data(), row_bytes, out, nb));
        std::vector<int32_t> side(static_cast<size_t>(n * nb * loom_gguf::kKQuantSide));
        loom_gguf::kquant_activation_info(xq.data(), xq_row_bytes, n, nb, side.data());
        const auto run_x8 = [&](loom_gguf::KQuantPackedKernel k, std::vector<float>& y) {
          double best = 1e30;
          constexpr int64_t kGroups = kTile / loom_gguf::kGroupRows;
          for (int rep = 0; rep < reps; ++rep) {
            const auto t0 = now();
            for (int it = 0; it < iters; ++it) {
              const loom_gguf::PackedWeight& pw = packed[static_cast<size_t>(it % copies)];
              for (int64_t g0 = 0; g0 < out / loom_gguf::kGroupRows; g0 += kGroups)
                k(pw, g0, g0 + kGroups, xq.data(), xq_row_bytes, side.data(), n, y.data() + g0 * loom_gguf::kGroupRows,
                  out);
            }
            best = std::min(best, std::chrono::duration<double>(now() - t0).count() / iters);
          }
          return best;
        };
        std::vector<std::pair<const char*, loom_gguf::KQuantPackedKernels>> sets = {
            {"x8 avx2", loom_gguf::avx2_kquant_x8_kernels()}};
        if (loom_gguf::cpu_has_avx512_kquant()) sets.push_back({"x8 avx512", loom_gguf::avx512_kquant_x8_kernels()});
        for (const auto& [name, set] : sets) {
          std::vector<float> y(y_fast.size());
          const double x8 = run_x8(set.of(ty.t), y);
          std::printf("\n%-6s n=%3lld   %s %7.3f ms %5.1f GMAC/s", loom::sdk::type_name(ty.t).c_str(),
                      static_cast<long long>(n), name, x8 * 1e3, gmac / x8);
          if (n == 1) std::printf(" %5.1f GB/s", gbs(x8));
          // Prefill's portable reference covers only the first tile.
          const size_t check = n == 1 ? y.size() : static_cast<size_t>(kTile);
          bool equal = true;
          for (int64_t t = 0; t < n && equal; ++t)
            equal = std::memcmp(y.data() + t * out, y_slow.data() + t * out, (n == 1 ? y.size() : check) * 4) == 0;
          std::printf(" (bits %s portable)", equal ? "=" : "!=");
        }
      }
      std::printf("\n");
    }
  }
#else
  (void)reps;
  (void)mode;
  std::puts("not x86-64: nothing to compare");
#endif
  return 0;
}
