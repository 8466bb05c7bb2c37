// Micro-benchmark of the none plugin's prefill GEMM on llama-1b shapes, built only on request
// (`cmake --build B --target loom-none-gemm-bench`): the row-layout kernels before and the panel
// kernels after (see old_path / new_path), same data, same run; the two reduce in different orders, so
// it prints their largest difference relative to each row's largest output.
//   loom-none-gemm-bench [threads=2] [reps=3]
// Prints GFLOP/s on wall time (all threads together) and per busy core on CPU time (what the
// process got on a shared machine; an idle thread waiting for the other costs wall time only).
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "loom/sdk_half.hpp"
#include "none_gemm.hpp"
#include "none_panel.hpp"

#ifdef LOOM_NONE_HAVE_AVX2
namespace {

enum class WeightType { f32, f16, bf16 };

struct Shape {
  int64_t n, in, out;
};

// Splits [0, items) into `threads` contiguous ranges, like the host thread pool.
template <class Fn>
void run_threads(int threads, int64_t items, Fn fn) {
  std::vector<std::thread> pool;
  const int64_t chunk = (items + threads - 1) / threads;
  for (int i = 0; i < threads; ++i) {
    const int64_t b = std::min(items, chunk * i), e = std::min(items, b + chunk);
    pool.emplace_back([=, &fn] { if (b < e) fn(b, e); });
  }
  for (auto& t : pool) t.join();
}

// Widens rows [o0, o0 + n_rows) (f16) or points at them (f32), rows `stride` floats apart.
void load_rows(const void* w, WeightType type, const Shape& s, int64_t o0, int64_t n_rows, int64_t stride,
               std::vector<float>& wid, const float** rows) {
  for (int64_t j = 0; j < n_rows; ++j) {
    if (type == WeightType::f32) {
      rows[j] = static_cast<const float*>(w) + (o0 + j) * s.in;
    } else {
      loom_none::widen_f16c(static_cast<const uint16_t*>(w) + (o0 + j) * s.in, wid.data() + j * stride, s.in,
                            type == WeightType::bf16);
      rows[j] = wid.data() + j * stride;
    }
  }
}

constexpr int64_t kTile = 48;

// Before: equal shares of features (multiples of 12) per thread, tiles of 48 rows widened an odd
// number of cache lines apart, f16 rows read directly below 4 x rows (the row-layout plugin).
void old_path(const void* w, WeightType type, const Shape& s, const float* x, float* y, int threads) {
  const int64_t stride = 16 * (((s.in + 15) / 16) | 1);
  const auto share = [&](int64_t i) {
    return i == threads ? s.out : std::min(s.out, (s.out * i / threads + 6) / 12 * 12);
  };
  run_threads(threads, threads, [&](int64_t b, int64_t e) {
    std::vector<float> wid(static_cast<size_t>(kTile * stride));
    const float* rows[kTile];
    const uint16_t* rows16[kTile];
    for (int64_t o0 = share(b), end = share(e); o0 < end; o0 += kTile) {
      const int64_t nr = std::min(kTile, end - o0);
      if (type != WeightType::f32 && s.n < 4) {
        for (int64_t j = 0; j < nr; ++j) rows16[j] = static_cast<const uint16_t*>(w) + (o0 + j) * s.in;
        loom_none::tile_half_avx2(rows16, type == WeightType::bf16, nr, x, s.in, s.n, s.in, y + o0, s.out, nullptr,
                                  0);
        continue;
      }
      load_rows(w, type, s, o0, nr, stride, wid, rows);
      loom_none::tile_avx2(rows, nr, x, s.in, s.n, s.in, y + o0, s.out, nullptr, 0);
    }
  });
}

// After: weights packed in panels of 16 features (once, outside the timing), equal shares of
// panels per thread (as none_quantization.cpp does).
void new_path(const loom_none::PanelView& pw, const Shape& s, const float* x, float* y, int threads) {
  run_threads(threads, threads, [&](int64_t b, int64_t e) {
    static thread_local std::vector<float> scratch;
    scratch.resize(static_cast<size_t>(loom_none::scratch_floats(s.n, s.in)));
    loom_none::panel_gemm_avx2(pw, pw.n_panels * b / threads, pw.n_panels * e / threads, x, s.in, s.n, y, s.out,
                               scratch.data());
  });
}

struct Times {
  double wall, cpu;  // seconds, best of the repetitions
};

Times times_of(const std::function<void()>& f, int reps) {
  const auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  };
  Times best{1e30, 1e30};
  for (int r = 0; r < reps; ++r) {
    const auto w0 = std::chrono::steady_clock::now();
    const double c0 = cpu_now();
    f();
    best.cpu = std::min(best.cpu, cpu_now() - c0);
    best.wall = std::min(best.wall, std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 3;
  if (!loom_none::cpu_has_avx2_fma_f16c()) return 1;
  std::printf("threads %d\n", threads);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const Shape s : {Shape{512, 2048, 2048}, Shape{512, 2048, 8192}, Shape{512, 8192, 2048}, Shape{37, 2051, 200},
                        Shape{1, 2048, 8192}, Shape{1, 8192, 2048}}) {
    std::vector<float> x(static_cast<size_t>(s.n * s.in)), w(static_cast<size_t>(s.out * s.in));
    for (auto& v : x) v = u(rng);
    for (auto& v : w) v = u(rng);
    std::vector<uint16_t> w16(w.size());
    for (size_t i = 0; i < w.size(); ++i) w16[i] = loom::sdk::f32_to_f16(w[i]);
    for (const WeightType type : {WeightType::f16, WeightType::f32}) {
      const void* wd = type == WeightType::f32 ? static_cast<const void*>(w.data()) : w16.data();
      std::vector<float> y_old(static_cast<size_t>(s.n * s.out)), y_new(y_old.size());
      const Times t_old = times_of([&] { old_path(wd, type, s, x.data(), y_old.data(), threads); }, reps);
      const loom_dtype dt = type == WeightType::f32 ? LOOM_DTYPE_F32 : LOOM_DTYPE_F16;
      loom_none::PanelView pw{dt, s.out, s.in, (s.out + loom_none::kPanel - 1) / loom_none::kPanel, nullptr};
      std::vector<char> packed(static_cast<size_t>(loom_none::panel_bytes(pw) * pw.n_panels));
      loom_none::pack_panels(wd, s.in, pw, packed.data());
      pw.data = packed.data();
      const Times t_new = times_of([&] { new_path(pw, s, x.data(), y_new.data(), threads); }, reps);
      const double gflop = 2.0 * static_cast<double>(s.n * s.in * s.out) * 1e-9;
      double err = 0;  // largest |new - old| relative to the row's largest |old|
      for (int64_t t = 0; t < s.n; ++t) {
        double big = 1e-30, d = 0;
        for (int64_t o = 0; o < s.out; ++o) {
          const size_t i = static_cast<size_t>(t * s.out + o);
          big = std::max(big, static_cast<double>(std::abs(y_old[i])));
          d = std::max(d, static_cast<double>(std::abs(y_new[i] - y_old[i])));
        }
        err = std::max(err, d / big);
      }
      std::printf("n %4lld in %5lld out %5lld %s: wall old %6.1f new %6.1f GFLOP/s (%.2fx) | per core old %5.1f new "
                  "%5.1f | max rel diff %.1e\n",
                  static_cast<long long>(s.n), static_cast<long long>(s.in), static_cast<long long>(s.out),
                  type == WeightType::f32 ? "f32" : "f16", gflop / t_old.wall, gflop / t_new.wall,
                  t_old.wall / t_new.wall, gflop / t_old.cpu, gflop / t_new.cpu, err);
    }
  }
  return 0;
}
#else
int main() { return 1; }
#endif
