// quantization/none: weights kept at their stored precision (f32, f16 or bf16) and y = x W^T on them.
//
// prepare_weight repacks each weight into column panels of 16 output features stored k-major
// (none_panel.hpp: the same element bytes, reordered), so the GEMM's micro-kernel does outer
// products: 2 weight vectors x 6 broadcast x values -> 12 FMAs per k step, out of L1. The model
// file's copy is then given back to the OS (except the token embedding, which the embedding
// lookup keeps reading when it doubles as the classifier), so resident memory stays about the
// file's size. linear (and linear_group, several weights on one x: Q/K/V, gate/up) hands each
// host thread an equal share of whole panels for a few rows; for a prefill the threads share one
// packed copy of x and take (row block, weight, panel chunk) items as they free up. Every output
// element is one multiply-add chain in increasing k whatever the batch size, the blocking, the
// group or the thread: batched == alone, bit for bit. The kernel is AVX2+FMA when the CPU has it
// (prefill tiles on AVX-512F where it has that, same bits; config key "simd"), else portable.
// compute = "bf16" (opt-in, none_bf16.hpp) trades those bits for AVX512-BF16 dot products on
// weights and activations rounded to bfloat16; batched == alone still holds within the mode.
// linear_top_k (interface 1.5, none_head_top_k.hpp) selects a head's largest outputs with linear's
// bits: it screens every output under a rigorous bound and computes only the candidates exactly:
// by default from an int8 copy of the head made at load (none_head_int8.hpp; any AVX2 CPU; under
// compute = "bf16" too, against its products), or with head_screen = "bf16" in bf16 on the exact
// panels (AVX512-BF16 CPUs, no copy; exact path only). The head's norms are kept from load.
// Written against the C ABI directly (not sdk.hpp) because supports() must give its reason in the
// error buffer while returning LOOM_OK with *ok = 0, which sdk.hpp's supports(dtype, ok) cannot.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "common/quant_plugin.hpp"
#include "loom/quantization.h"
#include "loom/sdk.hpp"
#include "loom/sdk_dtype.hpp"
#include "common/weight_pages.hpp"
#include "none_bf16.hpp"
#include "none_head_top_k.hpp"
#include "none_panel.hpp"

namespace {

using loom::sdk::ConfigError;
using loom::sdk::Error;

using loom_none::kPanel;

// Panels per step of a thread's share: the decode kernel takes 4 panels at a time.
constexpr int64_t kShareAlign = 4;

enum class HeadScreen { kInt8, kBf16, kOff };

struct Options {
  int simd = loom_quant::kSimdAuto;  // "simd": "auto" (default), "avx2" or "portable" (quant_plugin.hpp)
  bool bf16 = false;  // "compute": "exact" (default) or "bf16" (none_bf16.hpp)
  HeadScreen head_screen = HeadScreen::kInt8;  // "head_screen": "int8" (default), "bf16" or "off"
};

// The kernels the options ask for on this CPU. compute = "bf16" runs only where the CPU has
// AVX512-BF16 (and simd is "auto"); elsewhere the exact kernels run, and the start-up log says so.
loom_none::PanelKernels choose_kernels(const loom::sdk::Host& host, const Options& opt, bool& bf16) {
  bf16 = false;
#ifdef LOOM_NONE_HAVE_AVX2
  if (opt.bf16 && opt.simd == loom_quant::kSimdAuto && loom_none::cpu_has_avx512_bf16()) {
    bf16 = true;
    host.log(LOOM_LOG_INFO, "quantization none: compute bf16: weights rounded to bfloat16 at load, activations per "
                            "linear, products summed in f32 by AVX512-BF16 vdpbf16ps (not the exact path's bits)");
    return loom_none::select_bf16_kernels();
  }
#endif
  if (opt.bf16)
    host.log(LOOM_LOG_WARN, "quantization none: compute = \"bf16\" ",
             opt.simd == loom_quant::kSimdAuto ? "needs AVX512-BF16, which this CPU lacks" : "needs simd = \"auto\"",
             "; computing exactly instead");
  loom_none::PanelKernels k =
      loom_none::select_panel_kernels(opt.simd != loom_quant::kSimdPortable, opt.simd == loom_quant::kSimdAuto);
  host.log(LOOM_LOG_INFO, "quantization none: ", k.name, " kernels",
           opt.simd == loom_quant::kSimdAvx2 ? " (simd = \"avx2\": no AVX-512)" : "");
  return k;
}

bool is_supported(loom_dtype t) {
  return t == LOOM_DTYPE_F32 || t == LOOM_DTYPE_F16 || t == LOOM_DTYPE_BF16;
}

// A prepared weight: its panels, owned, and (for linear_top_k's screen) its row norms and, for the
// int8 screen, its int8 copy: from load for the classifier head, else made by the first
// linear_top_k on it.
struct Weight {
  struct Free {
    void operator()(void* p) const { ::operator delete(p, std::align_val_t{64}); }
  };
  loom_none::PanelView view;
  std::unique_ptr<void, Free> panels;
  loom_none::HeadNorms norms;
  loom_none::Int8Head int8;
};

// How linear_top_k screens on this CPU, if it does (`on`): the int8 screen on AVX2 (its VNNI
// kernel where allowed and present), on the exact path or compute bf16's pair panels; the bf16
// one on the exact path, on AVX512-BF16 with every kernel allowed. The start-up log says which,
// or why none.
struct ScreenChoice {
  bool on = false;
  bool int8 = false;
  loom_none::Screening how;
};

ScreenChoice choose_screen(const loom::sdk::Host& host, const Options& opt, bool bf16) {
  ScreenChoice c;
#ifdef LOOM_NONE_HAVE_AVX2
  const bool all = opt.simd == loom_quant::kSimdAuto;
  if (opt.head_screen == HeadScreen::kOff) return c;
  if (bf16 && opt.head_screen == HeadScreen::kBf16) {
    // The bf16 screen reads the exact path's panels, which compute bf16 does not keep.
    host.log(LOOM_LOG_WARN, "quantization none: head_screen = \"bf16\" screens the exact path only; under compute "
                            "= \"bf16\" the head's selection takes whole rows (head_screen = \"int8\" screens it)");
    return c;
  }
  if (opt.head_screen == HeadScreen::kBf16) {
    if (all && loom_none::cpu_has_avx512_bf16()) {
      c.on = true;
      c.how.scans = loom_none::Scans::kAvx512;
      host.log(LOOM_LOG_INFO, "quantization none: head screen bf16 (AVX512-BF16 on the exact panels)");
    } else {
      host.log(LOOM_LOG_WARN, "quantization none: head_screen = \"bf16\" ",
               all ? "needs AVX512-BF16, which this CPU lacks" : "needs simd = \"auto\"",
               "; heads are computed whole");
    }
    return c;
  }
  if (opt.simd == loom_quant::kSimdPortable || !loom_none::cpu_has_avx2_fma_f16c()) {
    host.log(LOOM_LOG_INFO, "quantization none: head screen int8 needs AVX2 kernels; heads are computed whole");
    return c;
  }
  c.on = c.int8 = true;
  const bool vnni = all && loom_none::cpu_has_avx512_vnni();
  c.how.int8_kernel = vnni ? loom_none::head_screen_int8_vnni : loom_none::head_screen_int8_avx2;
  c.how.scans = all && loom_none::cpu_has_avx512f() ? loom_none::Scans::kAvx512 : loom_none::Scans::kAvx2;
  c.how.pairs = bf16;  // the copy made from the pair panels, bounded against the pair kernels' chain
  host.log(LOOM_LOG_INFO, "quantization none: head screen int8 (", vnni ? "AVX512-VNNI" : "AVX2",
           bf16 ? ", against compute bf16's products" : "",
           "; an int8 copy of the classifier head is kept beside it)");
#else
  (void)host, (void)opt, (void)bf16;
#endif
  return c;
}

class NoneQuantization {
 public:
  static constexpr const char* kName = "none";
  using WeightType = Weight;
  static const loom::sdk::ConfigSpec<Options>& config_spec() {
    static const auto spec = loom_quant::simd_spec<Options>("quantization none")
        .choice("compute", &Options::bf16, {{"exact", false}, {"bf16", true}},
                "\"exact\" (default): f32 arithmetic on the stored weights, batch-invariant bits; \"bf16\": "
                "weights and activations rounded to bfloat16, AVX512-BF16 dot products (faster, less exact)")
        .choice("head_screen", &Options::head_screen,
                {{"int8", HeadScreen::kInt8}, {"bf16", HeadScreen::kBf16}, {"off", HeadScreen::kOff}},
                "how the classifier head's top-k selection screens its outputs before computing the few that "
                "can win exactly (same tokens and bits either way): \"int8\" (default): from an int8 copy of "
                "the head (half an f16 head's bytes more memory, any AVX2 CPU); \"bf16\": on the exact "
                "panels with AVX512-BF16 (no copy; compute = \"exact\" only); \"off\": every output computed");
    return spec;
  }

  NoneQuantization(const loom::sdk::Host& host, const loom_quantization_create_args& args, const Options& opt)
      : host_(host), kernel_(choose_kernels(host, opt, bf16_)), screen_(choose_screen(host, opt, bf16_)),
        top_k_(host.num_threads()) {
    loom_quant::require_cpu(args, kName);
    scratch_.resize(static_cast<size_t>(host_.num_threads()));
  }

  // f32/f16/bf16 are this plugin's own: read as stored, on the packed-panel kernels.
  loom::sdk::Reading reads(std::string_view, loom_dtype dtype) const {
    if (is_supported(dtype)) return loom::sdk::Reading::native();
    return loom::sdk::Reading::cannot(supports(dtype).reason);
  }

  loom::sdk::Verdict supports(loom_dtype dtype) const {
    if (is_supported(dtype)) return loom::sdk::Verdict::yes();
    return loom::sdk::Verdict::no(std::string("quantization none: weights of dtype ") + loom::sdk::type_name(dtype) +
                                  " are not supported (f32, f16 and bf16 are)");
  }

  Weight* prepare_weight(const loom_tensor_view* w, const loom_weight_info* info) const {
    if (w == nullptr || w->data == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "weight is null");
    if (!is_supported(w->dtype))
      throw Error(LOOM_ERR_UNSUPPORTED, std::string("quantization none: weights of dtype ") +
                                            loom::sdk::type_name(w->dtype) + " are not supported (f32, f16 and bf16 are)");
    if (w->ndim != 2 || w->shape[0] <= 0 || w->shape[1] <= 0 || w->strides[1] != 1 ||
        w->strides[0] < w->shape[1])
      throw Error(LOOM_ERR_INVALID_ARGUMENT,
                  "quantization none: weight must be a 2-d [out, in] view with contiguous rows");
    const int64_t out = w->shape[0], in = w->shape[1];
    auto weight = std::make_unique<Weight>();
    // compute bf16: pair panels of bf16 whatever the stored type (none_bf16.hpp).
    weight->view = loom_none::PanelView{bf16_ ? LOOM_DTYPE_BF16 : w->dtype, out, in, (out + kPanel - 1) / kPanel, nullptr};
    const int64_t panel = bf16_ ? loom_none::pairs_of(in) * kPanel * 4 : loom_none::panel_bytes(weight->view);
    const auto bytes = static_cast<size_t>(panel * weight->view.n_panels);
    weight->panels.reset(::operator new(bytes, std::align_val_t{64}));
    loom_quant::advise_huge_pages(weight->panels.get(), static_cast<int64_t>(bytes));
    // Every thread packs a share of the panels: the copy, and the kernel's zeroing of the fresh
    // (huge) pages it faults in, are most of a model's load time.
    const loom_none::PanelView& v = weight->view;
    host_.parallel_for(v.n_panels, [&](int64_t begin, int64_t end) {
      if (bf16_)
        loom_none::pack_pair_panels(w->data, w->dtype, w->strides[0], v, static_cast<uint32_t*>(weight->panels.get()),
                                    begin, end);
      else
        loom_none::pack_panels(w->data, w->strides[0], v, weight->panels.get(), begin, end);
    });
    weight->view.data = weight->panels.get();
    if (screen_.on && info != nullptr && info->role == LOOM_WEIGHT_OUTPUT) prepare_screen(*weight);
    // The file's copy is not read again, unless it is the token embedding serving as the tied
    // classifier (the embedding lookup reads it) or nothing says which tensor it is.
    if (info != nullptr && info->name != nullptr && std::strcmp(info->name, "token_embd.weight") != 0) {
      const int64_t elem = loom_none::element_bytes(w->dtype);
      loom_quant::release_file_pages(w->data, ((out - 1) * w->strides[0] + in) * elem);
    }
    return weight.release();
  }

  void linear(const Weight& weight, const loom_tensor_view* x, loom_tensor_view* y) {
    void* handle = const_cast<Weight*>(&weight);
    linear_group(&handle, 1, x, y);
  }

  // Quantization interface 1.2: linears on one x (a layer's Q, K and V; gate and up) in one pass
  // of the threads, and in prefill one packed copy of x. Every tile is computed as linear
  // computes it, whatever else shares the pass, so each y gets linear's bits.
  void linear_group(void* const* handles, int32_t count, const loom_tensor_view* x, loom_tensor_view* y) {
    if (handles == nullptr || y == nullptr || count <= 0)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization none: empty linear group");
    group_.resize(static_cast<size_t>(count));
    bool one_dtype = true;
    for (int32_t i = 0; i < count; ++i) {
      if (handles[i] == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "weight handle is null");
      const loom_none::PanelView& w = static_cast<const Weight*>(handles[i])->view;
      loom_quant::check_linear(kName, w.in, w.out, x, &y[i]);
      group_[static_cast<size_t>(i)] = Target{&w, static_cast<float*>(y[i].data), y[i].strides[0], 0, 0, nullptr, 0};
      one_dtype = one_dtype && w.dtype == group_[0].w->dtype;
    }
    const int64_t n = x->shape[0];
    if (n == 0) return;
    const int64_t xs = x->strides[0];
    const auto* xd = static_cast<const float*>(x->data);
    if (kernel_.pack_x != nullptr && n >= kernel_.prefill_rows && host_.num_threads() > 1 && one_dtype) {
      prefill(xd, xs, n);
      return;
    }
    const auto need = static_cast<size_t>(loom_none::scratch_floats(n, group_[0].w->in));

    for (Target& t : group_) t.x = xd, t.n = n;
    decode(xs, need);
  }

  // Quantization interface 1.4: a mixture-of-experts layer's expert GEMMs, rows grouped by
  // expert. An expert with a prefill's worth of rows runs as its own linear (the shared-x
  // prefill); the others' panels go end to end through one decode pass of the threads, each
  // expert's panels reading that expert's rows. Either way a row gets linear's bits.
  void linear_experts(void* const* handles, int32_t count, const int32_t* offsets, const loom_tensor_view* x,
                      loom_tensor_view* y) {
    if (handles == nullptr || offsets == nullptr || x == nullptr || y == nullptr || count <= 0 || offsets[0] != 0)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization none: linear_experts needs handles and offsets from 0");
    if (offsets[count] != x->shape[0])
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization none: linear_experts offsets end at " +
                                                 std::to_string(offsets[count]) + ", x has " +
                                                 std::to_string(x->shape[0]) + " rows");
    group_.clear();
    const auto* xd = static_cast<const float*>(x->data);
    auto* yd = static_cast<float*>(y->data);
    int64_t widest = 0;
    for (int32_t e = 0; e < count; ++e) {
      const int64_t lo = offsets[e], n = int64_t{offsets[e + 1]} - lo;
      if (n < 0) throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization none: linear_experts offsets decrease");
      if (handles[e] == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "weight handle is null");
      const loom_none::PanelView& w = static_cast<const Weight*>(handles[e])->view;
      loom_quant::check_linear(kName, w.in, w.out, x, y);
      if (n == 0) continue;
      if (kernel_.pack_x != nullptr && n >= kernel_.prefill_rows && host_.num_threads() > 1) {
        loom_tensor_view xe = *x, ye = *y;
        xe.data = const_cast<float*>(xd + lo * x->strides[0]);
        ye.data = yd + lo * y->strides[0];
        xe.shape[0] = ye.shape[0] = n;
        std::vector<Target> pooled = std::move(group_);
        void* h = handles[e];
        linear_group(&h, 1, &xe, &ye);
        group_ = std::move(pooled);
        continue;
      }
      group_.push_back(Target{&w, yd + lo * y->strides[0], y->strides[0], 0, 0, xd + lo * x->strides[0], n});
      widest = std::max(widest, n);
    }
    if (!group_.empty()) decode(x->strides[0], static_cast<size_t>(loom_none::scratch_floats(widest, group_[0].w->in)));
  }

  // Quantization interface 1.5: each row's k largest outputs, exactly as selected from linear's
  // row (none_head_top_k.hpp).
  void linear_top_k(void* handle, const loom_tensor_view* x, int32_t k, int32_t* ids, float* values) {
    if (handle == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "weight handle is null");
    Weight& weight = *static_cast<Weight*>(handle);
    const loom_none::PanelView& w = weight.view;
    if (x == nullptr || x->data == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "x is null");
    if (x->dtype != LOOM_DTYPE_F32) throw Error(LOOM_ERR_UNSUPPORTED, "quantization none: x must be f32");
    if (x->ndim != 2 || x->shape[0] < 0 || x->shape[1] != w.in || x->strides[1] != 1 ||
        (x->shape[0] > 1 && x->strides[0] < w.in))
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization none: linear_top_k expects x [n, " + std::to_string(w.in) +
                                                 "] with contiguous rows, got [" + std::to_string(x->shape[0]) +
                                                 ", " + std::to_string(x->shape[1]) + "]");
    if (k < 1 || k > w.out)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization none: linear_top_k needs 1 <= k <= " +
                                                 std::to_string(w.out) + " (out features), got " + std::to_string(k));
    const int64_t n = x->shape[0];
    if (n == 0) return;
    if (ids == nullptr || values == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "ids or values is null");
    const auto* xd = static_cast<const float*>(x->data);
    const loom_none::LinearRows rows = [this, &weight](const float* xr, int64_t xs, int64_t m, float* y) {
      const loom_tensor_view xv = loom_quant::matrix_view(xr, LOOM_DTYPE_F32, m, weight.view.in, xs);
      loom_tensor_view yv = loom_quant::matrix_view(y, LOOM_DTYPE_F32, m, weight.view.out, weight.view.out);
      linear(weight, &xv, &yv);
    };
#ifdef LOOM_NONE_HAVE_AVX2
    if (screen_.on && loom_none::HeadTopK::screens(w.out, w.in, k)) {
      if (weight.norms.n.empty()) prepare_screen(weight);
      loom_none::Screening how = screen_.how;
      if (screen_.int8) how.int8 = &weight.int8;
      top_k_.screened(host_, kernel_.gemm, w, weight.norms, how, xd, x->strides[0], n, k, ids, values, rows);
      return;
    }
#endif
    top_k_.by_linear(host_, w.out, xd, x->strides[0], n, k, ids, values, rows);
  }

 private:
  // The screen's data for a head: its norms and, for the int8 screen, its int8 copy (each thread
  // quantizes a share of the panels).
  void prepare_screen(Weight& weight) const {
    const bool pairs = screen_.how.pairs;
    weight.norms = loom_none::HeadTopK::norms_of(host_, weight.view, pairs);
    if (!screen_.int8) return;
    loom_none::int8_head_shape(weight.view, &weight.int8);
    std::mutex mutex;
    double rho = 0.0;
    host_.parallel_for(weight.view.n_panels, [&](int64_t begin, int64_t end) {
      const double r = loom_none::int8_head_panels(weight.view, begin, end, &weight.int8, pairs);
      const std::lock_guard<std::mutex> lock(mutex);
      rho = std::max(rho, r);
    });
    weight.int8.rho = static_cast<float>(rho);  // rounded up by 2^-20 already: far above float's rounding
  }

  // One linear of a group: its weight, input rows and output, and (prefill) its panel chunking.
  struct Target {
    const loom_none::PanelView* w;
    float* y;
    int64_t ys;
    int64_t chunk;   // panels per prefill item
    int64_t chunks;  // prefill items per row block
    const float* x;  // decode: its n rows of x, xs apart
    int64_t n;
  };

  // Decode: the targets' panels end to end, equal shares of them per thread (rounded to
  // kShareAlign), each thread packing its own rows of x (`need` floats of scratch at most).
  void decode(int64_t xs, size_t need) {
    int64_t total = 0;
    for (const Target& t : group_) total += t.w->n_panels;
    const int64_t shares = std::max<int64_t>(1, std::min<int64_t>(host_.num_threads(), total));
    const auto share_begin = [&](int64_t i) {
      if (i >= shares) return total;
      return std::min(total, (total * i / shares + kShareAlign / 2) / kShareAlign * kShareAlign);
    };
    host_.parallel_for(shares, [&](int64_t begin, int64_t end, int32_t thread) {
      if (thread < 0 || static_cast<size_t>(thread) >= scratch_.size())
        throw Error(LOOM_ERR_INTERNAL, "parallel_for thread index out of range");
      std::vector<float>& scratch = scratch_[static_cast<size_t>(thread)];  // packed x, grown to the largest need
      if (scratch.size() < need) scratch.resize(need);
      const int64_t p_begin = share_begin(begin), p_end = share_begin(end);
      int64_t base = 0;  // the first panel of target t in the group's panels
      for (const Target& t : group_) {
        const int64_t lo = std::max(p_begin, base), hi = std::min(p_end, base + t.w->n_panels);
        if (lo < hi) kernel_.gemm(*t.w, lo - base, hi - base, t.x, xs, t.n, t.y, t.ys, scratch.data());
        base += t.w->n_panels;
      }
    });
  }

  // The shared-x prefill (none_panel.hpp) of the group's linears: every thread packs blocks of
  // x, then computes (row block, linear, panel chunk) items, each taking the next item as it
  // frees up. Items go row block by row block, so the threads read the same packed rows (from
  // L3) at about the same time.
  void prefill(const float* x, int64_t xs, int64_t n) {
    const int64_t threads = host_.num_threads();
    const loom_none::PanelView& w0 = *group_[0].w;  // every linear of the group has its in and dtype
    packed_.resize(static_cast<size_t>(loom_none::packed_x_floats(n, w0.in, w0.dtype)));
    float* xp = packed_.data();
    const int64_t blocks = loom_none::packed_x_blocks(n, w0.in, w0.dtype);
    std::atomic<int64_t> next{0};
    host_.parallel_for(threads, [&](int64_t, int64_t, int32_t) {
      for (int64_t b; (b = next.fetch_add(1, std::memory_order_relaxed)) < blocks;)
        kernel_.pack_x(w0, x, xs, n, b, xp);
    });
    // Chunks of up to 8 panels (128 features: the packed rows come from L2 for all of them),
    // at least 4 per thread and row block so that a late thread leaves little to wait for.
    int64_t per_block = 0;
    for (Target& t : group_) {
      t.chunk = std::clamp<int64_t>(t.w->n_panels / (4 * threads), 1, 8);
      t.chunks = (t.w->n_panels + t.chunk - 1) / t.chunk;
      per_block += t.chunks;
    }
    const int64_t items = (n + loom_none::kBlockRows - 1) / loom_none::kBlockRows * per_block;
    next.store(0, std::memory_order_relaxed);
    host_.parallel_for(threads, [&](int64_t, int64_t, int32_t) {
      for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < items;) {
        int64_t c = i % per_block;
        size_t j = 0;
        while (c >= group_[j].chunks) c -= group_[j++].chunks;
        const Target& t = group_[j];
        const int64_t p0 = c * t.chunk;
        kernel_.packed_gemm(*t.w, p0, std::min(t.w->n_panels, p0 + t.chunk), xp, n, i / per_block, t.y, t.ys);
      }
    });
  }

  loom::sdk::Host host_;
  bool bf16_ = false;  // compute bf16 is on: weights in pair panels, kernel_ the bf16 set
  loom_none::PanelKernels kernel_;
  ScreenChoice screen_;            // how linear_top_k screens (choose_screen())
  loom_none::HeadTopK top_k_;      // linear_top_k's scratch
  std::vector<std::vector<float>> scratch_;  // per thread: packed rows of x, reused
  std::vector<float> packed_;                // the prefill's shared packed x, reused
  std::vector<Target> group_;                // the linears of the current call, reused
};

}  // namespace

LOOM_QUANTIZATION_PLUGIN(NoneQuantization, "none", "0.1.0",
                         "unquantized f32/f16/bf16 weights in column panels; threaded, cache-blocked GEMM "
                         "(AVX2+FMA when available; compute = \"bf16\": AVX512-BF16 dot products)");
