// gguf-kernel-bench legacy: the Q4_1, Q5_0, Q5_1 and IQ4_NL x8 kernels (AVX2, and AVX512-VNNI
// where the CPU has it) beside Q4_0's, one thread, at the llama-1b shapes, tiled as the plugin
// tiles them; decode streams weights from memory (copies overflow the last-level cache), so its
// GB/s is the weight bytes read per second. Also checks the portable kernel agrees.
//   <build>/bin/gguf-kernel-bench REPS legacy
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

#include "gguf_legacy_kernels.hpp"
#include "loom/sdk_dtype.hpp"

namespace g = loom::sdk::gguf;

#ifdef LOOM_GGUF_HAVE_AVX2

namespace {

constexpr int64_t kTileGroups = 4;  // the plugin's 32-row tiles

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Best seconds per call of `run` over reps repetitions of iters calls.
template <class Run>
double best_of(int reps, int iters, Run&& run) {
  double best = 1e30;
  for (int rep = 0; rep < reps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < iters; ++it) run(it);
    best = std::min(best, seconds_since(t0) / iters);
  }
  return best;
}

}  // namespace

int run_legacy_bench(int reps) {
  const bool vnni = loom_gguf::cpu_has_avx512_vnni();
  std::printf("ISA: AVX2%s; one thread\n", vnni ? " + AVX512-VNNI" : "");
  const loom_gguf::LegacyPackedKernels avx2 = loom_gguf::avx2_legacy_x8_kernels();
  const loom_gguf::LegacyPackedKernels vnni_k = vnni ? loom_gguf::vnni_legacy_x8_kernels() : avx2;
  const loom_gguf::LegacyKernels portable = loom_gguf::legacy_portable_kernels();
  const loom_gguf::Kernels base = loom_gguf::avx2_kernels();
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const loom_dtype t : {LOOM_DTYPE_Q4_1, LOOM_DTYPE_Q5_0, LOOM_DTYPE_Q5_1, LOOM_DTYPE_IQ4_NL}) {
    for (const int64_t n : {1, 2, 3, 4, 512}) {
      for (const auto& [out, in] : {std::pair<int64_t, int64_t>{2048, 2048}, {8192, 2048}, {2048, 8192}}) {
        const g::BlockGeometry geo = g::block_geometry(t);
        const int64_t nb = in / g::kQK, row_bytes = nb * geo.bytes;
        const int64_t copies = n <= 4 ? std::max<int64_t>(1, (96 << 20) / (out * row_bytes)) : 1;
        std::vector<std::vector<uint8_t>> rows(static_cast<size_t>(copies));
        std::vector<loom_gguf::PackedWeight> packed;
        std::vector<float> row(static_cast<size_t>(in));
        for (auto& m : rows) {
          m.resize(static_cast<size_t>(out * row_bytes));
          // One quantized row repeated: the IQ4_NL scale search is slow and timing needs no variety.
          for (auto& e : row) e = u(rng);
          g::quantize_row(t, row.data(), m.data(), in);
          for (int64_t o = 1; o < out; ++o) std::copy(m.begin(), m.begin() + row_bytes, m.begin() + o * row_bytes);
          packed.push_back(loom_gguf::pack_legacy(t, m.data(), row_bytes, out, nb));
        }
        const bool q8_1 = loom_gguf::legacy_takes_q8_1(t);
        const int64_t xq_row_bytes = nb * static_cast<int64_t>(q8_1 ? sizeof(g::BlockQ8_1) : sizeof(g::BlockQ8_0));
        std::vector<uint8_t> xq(static_cast<size_t>(n * xq_row_bytes));
        for (int64_t r = 0; r < n; ++r) {
          for (auto& e : row) e = u(rng);
          uint8_t* dst = xq.data() + r * xq_row_bytes;
          if (q8_1) {
            loom_gguf::quantize_q8_1(base.quantize_q8_0, row.data(), reinterpret_cast<g::BlockQ8_1*>(dst), nb);
          } else {
            base.quantize_q8_0(row.data(), reinterpret_cast<g::BlockQ8_0*>(dst), nb);
          }
        }
        std::vector<float> d(static_cast<size_t>(n * nb)), s(d.size());
        std::vector<int32_t> off(d.size());
        const loom_gguf::LegacyActivationInfo info{d.data(), s.data(), off.data()};
        std::vector<float> y(static_cast<size_t>(n * out)), y_portable(y.size());
        const int64_t n_groups = (out + 7) / 8;
        const auto packed_run = [&](loom_gguf::LegacyPackedKernel k) {
          return [&, k](int it) {
            loom_gguf::legacy_activation_info(q8_1, xq.data(), xq_row_bytes, n, nb, info);
            const loom_gguf::PackedWeight& p = packed[static_cast<size_t>(it % copies)];
            for (int64_t g0 = 0; g0 < n_groups; g0 += kTileGroups)
              k(p, g0, std::min(g0 + kTileGroups, n_groups), xq.data(), xq_row_bytes, info, n, y.data() + g0 * 8, out);
          };
        };
        const int iters = n <= 4 ? 20 : 1;
        const double t_avx2 = best_of(reps, iters, packed_run(avx2.of(t)));
        const double t_vnni = best_of(reps, iters, packed_run(vnni_k.of(t)));
        const loom_gguf::TileKernel tile = t == LOOM_DTYPE_Q4_1   ? portable.q4_1
                                           : t == LOOM_DTYPE_Q5_0 ? portable.q5_0
                                           : t == LOOM_DTYPE_Q5_1 ? portable.q5_1
                                                                  : portable.iq4_nl;
        tile(rows[0].data(), row_bytes, out, xq.data(), xq_row_bytes, std::min<int64_t>(n, 4), in, y_portable.data(), out);
        packed_run(avx2.of(t))(0);
        double max_rel = 0;
        for (size_t i = 0; i < static_cast<size_t>(std::min<int64_t>(n, 4) * out); ++i)
          max_rel = std::max(max_rel, std::abs(double{y[i]} - y_portable[i]) / (1.0 + std::abs(double{y[i]})));
        const double gbytes = static_cast<double>(out * row_bytes) * 1e-9, gmac = static_cast<double>(out * in * n) * 1e-9;
        std::printf("%-6s out=%5lld in=%5lld n=%3lld  avx2 %8.3f ms (%6.1f GB/s, %6.1f GMAC/s)  vnni %8.3f ms "
                    "(%6.1f GB/s, %6.1f GMAC/s)  vs portable %.1e\n",
                    loom::sdk::type_name(t).c_str(), static_cast<long long>(out), static_cast<long long>(in),
                    static_cast<long long>(n), t_avx2 * 1e3, gbytes / t_avx2, gmac / t_avx2, t_vnni * 1e3,
                    gbytes / t_vnni, gmac / t_vnni, max_rel);
      }
    }
  }
  return 0;
}

#else

int run_legacy_bench(int) {
  std::puts("not x86-64: nothing to compare");
  return 0;
}

#endif
