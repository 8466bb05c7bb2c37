// Micro-benchmark of linear_top_k (none_head_top_k.hpp) on a classifier head, built only on request
// (`cmake --build B --target loom-none-head-bench`): the plugin's exact linear against its
// linear_top_k(k = 1), both through its C ABI (the .so beside this binary, a host API of plain
// threads), bf16 weights [out, in], random x, n = 1, 8 and 32 rows, with the plugin's int8 screen
// (its default) or its bf16 one. It also checks the selection against linear's row and counts the
// screen's candidates per row with the plugin's own helpers.
//   loom-none-head-bench [threads=2] [reps=5] [out=128256] [in=768] [screen=int8|bf16] [simd=auto|avx2]
// (simd = "avx2": the int8 screen's AVX2 kernel and portable scans, as an AVX2-only CPU runs them)
// Prints ms per call, best of reps after one warm-up call.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "loom/plugin.h"
#include "loom/quantization.h"
#include "loom/sdk_half.hpp"
#include "loom/sdk_top_k.hpp"
#include "common/quant_plugin.hpp"
#include "none_bf16.hpp"
#include "none_head_int8.hpp"
#include "none_head_screen.hpp"

#ifdef LOOM_NONE_HAVE_AVX2
namespace {

int g_threads = 2;

// The host's parallel_for: `g_threads` contiguous ranges, the first on the calling thread.
void parallel_for(void*, int64_t n, loom_parallel_fn fn, void* ctx) {
  const int64_t parts = std::min<int64_t>(g_threads, n);
  std::vector<std::thread> pool;
  for (int64_t i = 1; i < parts; ++i)
    pool.emplace_back([=] { fn(ctx, n * i / parts, n * (i + 1) / parts, static_cast<int32_t>(i)); });
  fn(ctx, 0, n / parts, 0);
  for (auto& t : pool) t.join();
}

loom_tensor_view mat(const void* data, loom_dtype dtype, int64_t rows, int64_t cols) {
  return loom_quant::matrix_view(data, dtype, rows, cols, cols);
}

double best_ms(const std::function<void()>& f, int reps) {
  f();  // warm: scratch grown, weights touched
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// Candidates per row of the screen (the plugin's steps, one thread), and the rows it would hand to
// linear.
void count_candidates(const std::vector<uint16_t>& w, int64_t out, int64_t in, const std::vector<float>& x, int64_t n,
                      bool int8, double* per_row, int64_t* full) {
  loom_none::PanelView v{LOOM_DTYPE_BF16, out, in, (out + loom_none::kPanel - 1) / loom_none::kPanel, nullptr};
  std::vector<char> panels(static_cast<size_t>(loom_none::panel_bytes(v) * v.n_panels));
  loom_none::pack_panels(w.data(), in, v, panels.data(), 0, v.n_panels);
  v.data = panels.data();
  const int64_t ss = v.n_panels * loom_none::kPanel, kpn = loom_none::pairs_of(in);
  std::vector<float> norms(static_cast<size_t>(ss)), s(static_cast<size_t>(n * ss)), run(1);
  loom_none::head_norms(v, 0, v.n_panels, norms.data());
  const float max_norm = *std::max_element(norms.begin(), norms.end());
  std::vector<loom_none::RowBound> b(static_cast<size_t>(n));
  if (int8) {
    loom_none::Int8Head h;
    loom_none::int8_head_shape(v, &h);
    h.rho = static_cast<float>(loom_none::int8_head_panels(v, 0, v.n_panels, &h));
    const int64_t nb = h.in_pad / loom_none::kInt8Block;
    std::vector<int8_t> q(static_cast<size_t>(n * h.in_pad));
    std::vector<float> e(static_cast<size_t>(n * nb));
    std::vector<int32_t> sums(static_cast<size_t>(n * nb));
    for (int64_t t = 0; t < n; ++t)
      loom_none::pack_int8_row(x.data() + t * in, in, h.in_pad, h.rho, max_norm, &q[t * h.in_pad], &e[t * nb],
                               &sums[t * nb], &b[t]);
    loom_none::head_screen_int8_avx2(h, 0, v.n_panels, q.data(), e.data(), sums.data(), n, s.data(), ss);
  } else {
    std::vector<uint32_t> xp(static_cast<size_t>(n * kpn));
    for (int64_t t = 0; t < n; ++t)
      loom_none::pack_screen_row(x.data() + t * in, in, v.dtype, max_norm, &xp[t * kpn], &b[t]);
    loom_none::head_screen_avx512bf16(v, 0, v.n_panels, xp.data(), n, s.data(), ss);
  }
  std::vector<int32_t> cand(static_cast<size_t>(out));
  int64_t total = 0;
  *full = 0;
  for (int64_t t = 0; t < n; ++t) {
    const float* st = s.data() + t * ss;
    const float bar = loom_none::screen_threshold_portable(st, norms.data(), out, b[t], 1, run.data());
    const int64_t c = loom_none::screen_candidates_portable(st, norms.data(), out, b[t], bar, cand.data(), out);
    total += c;
    *full += c > out / 8 ? 1 : 0;
  }
  *per_row = static_cast<double>(total) / static_cast<double>(n);
}

}  // namespace

int main(int argc, char** argv) {
  g_threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  const int64_t out = argc > 3 ? std::atoll(argv[3]) : 128256, in = argc > 4 ? std::atoll(argv[4]) : 768;
  const std::string screen = argc > 5 ? argv[5] : "int8";
  const bool int8 = screen == "int8";
  const std::string simd = argc > 6 ? argv[6] : "auto";
  if (int8 ? !loom_none::cpu_has_avx2_fma_f16c() : !loom_none::cpu_has_avx512_bf16()) {
    std::printf("this CPU lacks %s: linear_top_k does not screen here\n", int8 ? "AVX2" : "AVX512-BF16");
    return 1;
  }
  const std::string config = "{\"head_screen\": \"" + screen + "\", \"simd\": \"" + simd + "\"}";
  // The plugin beside this binary.
  std::string dir(4096, '\0');
  dir.resize(static_cast<size_t>(std::max<ssize_t>(0, readlink("/proc/self/exe", dir.data(), dir.size()))));
  dir = dir.substr(0, dir.rfind('/') + 1);
  void* lib = dlopen((dir + "libloom-quantization-none.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::printf("dlopen: %s\n", dlerror());
    return 1;
  }
  const auto entry = *reinterpret_cast<loom_plugin_entry_fn*>(dlsym(lib, LOOM_PLUGIN_ENTRY_SYMBOL));
  const loom_plugin_desc* desc = entry();
  loom_host_api api{sizeof(loom_host_api), LOOM_ABI_VERSION, nullptr, nullptr, parallel_for, g_threads, 0};
  loom_quantization_create_args args{sizeof(args), loom_device{LOOM_DEVICE_CPU, 0}};
  char text[512] = {};
  loom_error_buf err{text, sizeof text};
  void* self = nullptr;
  const void* table = nullptr;
  if (desc->create(&api, &args, config.c_str(), &self, &table, &err) != LOOM_OK) {
    std::printf("create: %s\n", text);
    return 1;
  }
  const auto* vt = static_cast<const loom_quantization_vtable*>(table);

  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0F, 1.0F);
  std::vector<uint16_t> w(static_cast<size_t>(out * in));
  for (auto& e : w) e = loom::sdk::f32_to_bf16(0.05F * u(rng));
  const loom_tensor_view wv = mat(w.data(), LOOM_DTYPE_BF16, out, in);
  loom_weight_info info{};
  info.struct_size = sizeof(info);
  info.name = "token_embd.weight";  // a tied head: the plugin leaves the source's pages alone
  info.role = LOOM_WEIGHT_OUTPUT;
  info.layer = info.expert = -1;
  info.out_features = out;
  info.in_features = in;
  void* h = nullptr;
  if (vt->prepare_weight_info(self, &wv, &info, &h, &err) != LOOM_OK) {
    std::printf("prepare: %s\n", text);
    return 1;
  }
  std::printf("head [%lld, %lld] bf16, %d threads, %s screen, k = 1\n", static_cast<long long>(out),
              static_cast<long long>(in), g_threads,
              int8 ? (simd == "auto" && loom_none::cpu_has_avx512_vnni() ? "int8 (AVX512-VNNI)" : "int8 (AVX2)")
                   : "bf16 (AVX512-BF16)");
  for (const int64_t n : {int64_t{1}, int64_t{8}, int64_t{32}}) {
    std::vector<float> x(static_cast<size_t>(n * in)), y(static_cast<size_t>(n * out)), v(static_cast<size_t>(n));
    for (auto& e : x) e = u(rng);
    std::vector<int32_t> ids(static_cast<size_t>(n));
    const loom_tensor_view xv = mat(x.data(), LOOM_DTYPE_F32, n, in);
    loom_tensor_view yv = mat(y.data(), LOOM_DTYPE_F32, n, out);
    const double t_linear = best_ms([&] { vt->linear(self, h, &xv, &yv, &err); }, reps);
    const double t_top = best_ms([&] { vt->linear_top_k(self, h, &xv, 1, ids.data(), v.data(), &err); }, reps);
    bool same = true;
    for (int64_t t = 0; t < n; ++t) {
      int32_t id = -1;
      float value = 0;
      loom::sdk::select_top_k(y.data() + t * out, out, 1, &id, &value);
      same = same && id == ids[t] && std::memcmp(&value, &v[t], sizeof value) == 0;
    }
    double per_row = 0;
    int64_t full = 0;
    count_candidates(w, out, in, x, n, int8, &per_row, &full);
    std::printf("n %2lld: linear %7.2f ms, linear_top_k %7.2f ms (%.2fx) | candidates per row %.2f, rows in full %lld "
                "| selection %s\n",
                static_cast<long long>(n), t_linear, t_top, t_linear / t_top, per_row, static_cast<long long>(full),
                same ? "equal" : "DIFFERENT");
  }
  vt->release_weight(self, h);
  desc->destroy(self);
  return 0;
}
#else
int main() { return 1; }
#endif
