// Micro-benchmark of the none plugin's panel GEMM on llama-1b shapes, built only on request
// (`cmake --build B --target loom-none-gemm-bench`): the AVX2 kernel against the portable one (the
// reference), same packed weights, same run; the two round differently, so it prints their
// largest difference relative to each row's largest output.
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

// Weights packed in panels of 16 features (once, outside the timing), equal shares of panels per
// thread (as none_quantization.cpp does).
void run_gemm(loom_none::PanelGemm gemm, const loom_none::PanelView& pw, const Shape& s, const float* x, float* y,
              int threads) {
  run_threads(threads, threads, [&](int64_t b, int64_t e) {
    static thread_local std::vector<float> scratch;
    scratch.resize(static_cast<size_t>(loom_none::scratch_floats(s.n, s.in)));
    gemm(pw, pw.n_panels * b / threads, pw.n_panels * e / threads, x, s.in, s.n, y, s.out, scratch.data());
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
  std::vector<Shape> shapes = {Shape{512, 2048, 2048}, Shape{512, 2048, 8192}, Shape{512, 8192, 2048},
                               Shape{37, 2051, 200}, Shape{1, 2048, 8192}, Shape{1, 8192, 2048}};
  if (argc > 3) {  // decode shapes: n = 1..8 rows on IN x OUT
    shapes.clear();
    for (int64_t n = 1; n <= 8; ++n) shapes.push_back(Shape{n, std::atoll(argv[3]), std::atoll(argv[4])});
  }
  for (const Shape s : shapes) {
    std::vector<float> x(static_cast<size_t>(s.n * s.in)), w(static_cast<size_t>(s.out * s.in));
    for (auto& v : x) v = u(rng);
    for (auto& v : w) v = u(rng);
    std::vector<uint16_t> w16(w.size());
    for (size_t i = 0; i < w.size(); ++i) w16[i] = loom::sdk::f32_to_f16(w[i]);
    for (const WeightType type : {WeightType::f16, WeightType::f32}) {
      const void* wd = type == WeightType::f32 ? static_cast<const void*>(w.data()) : w16.data();
      std::vector<float> y_ref(static_cast<size_t>(s.n * s.out)), y_avx2(y_ref.size());
      const loom_dtype dt = type == WeightType::f32 ? LOOM_DTYPE_F32 : LOOM_DTYPE_F16;
      loom_none::PanelView pw{dt, s.out, s.in, (s.out + loom_none::kPanel - 1) / loom_none::kPanel, nullptr};
      std::vector<char> packed(static_cast<size_t>(loom_none::panel_bytes(pw) * pw.n_panels));
      loom_none::pack_panels(wd, s.in, pw, packed.data(), 0, pw.n_panels);
      pw.data = packed.data();
      const Times t_ref =
          times_of([&] { run_gemm(loom_none::panel_gemm_portable, pw, s, x.data(), y_ref.data(), threads); }, reps);
      const Times t_avx2 =
          times_of([&] { run_gemm(loom_none::panel_gemm_avx2, pw, s, x.data(), y_avx2.data(), threads); }, reps);
      std::vector<float> y_512(y_ref.size());
      const bool has512 = loom_none::cpu_has_avx512f();
      const Times t_512 = has512 ? times_of([&] {
        run_gemm(loom_none::panel_gemm_avx512, pw, s, x.data(), y_512.data(), threads);
      }, reps) : Times{0, 0};
      const double gflop = 2.0 * static_cast<double>(s.n * s.in * s.out) * 1e-9;
      double err = 0;  // largest |avx2 - portable| relative to the row's largest |portable|
      for (int64_t t = 0; t < s.n; ++t) {
        double big = 1e-30, d = 0;
        for (int64_t o = 0; o < s.out; ++o) {
          const size_t i = static_cast<size_t>(t * s.out + o);
          big = std::max(big, static_cast<double>(std::abs(y_ref[i])));
          d = std::max(d, static_cast<double>(std::abs(y_avx2[i] - y_ref[i])));
        }
        err = std::max(err, d / big);
      }
      std::printf("n %4lld in %5lld out %5lld %s: wall portable %6.1f avx2 %6.1f GFLOP/s (%.2fx) | per core portable "
                  "%5.1f avx2 %5.1f | max rel diff %.1e\n",
                  static_cast<long long>(s.n), static_cast<long long>(s.in), static_cast<long long>(s.out),
                  type == WeightType::f32 ? "f32" : "f16", gflop / t_ref.wall, gflop / t_avx2.wall,
                  t_ref.wall / t_avx2.wall, gflop / t_ref.cpu, gflop / t_avx2.cpu, err);
      if (has512)
        std::printf("    avx512f %6.1f GFLOP/s wall (%.2fx avx2), %s bits\n", gflop / t_512.wall, t_avx2.wall / t_512.wall,
                    std::memcmp(y_512.data(), y_avx2.data(), y_512.size() * sizeof(float)) == 0 ? "same" : "DIFFERENT");
    }
  }
  return 0;
}
#else
int main() { return 1; }
#endif
