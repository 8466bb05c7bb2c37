// linear_top_k's two paths (none_head_top_k.hpp): the screened selection and linear + select.
#include "none_head_top_k.hpp"

#include <algorithm>
#include <cmath>

#include "loom/sdk_top_k.hpp"
#include "none_bf16.hpp"

namespace loom_none {

namespace {

// Panels per thread share of the screen, as linear's decode shares them.
constexpr int64_t kShareAlign = 4;

}  // namespace

HeadNorms HeadTopK::norms_of(const loom::sdk::Host& host, const PanelView& w, bool pairs) {
  HeadNorms h;
  h.n.assign(static_cast<size_t>(w.n_panels * kPanel), 0.0F);
  host.parallel_for(w.n_panels, [&](int64_t begin, int64_t end) { head_norms(w, begin, end, h.n.data(), pairs); });
  for (const float v : h.n) h.max = std::isfinite(v) ? std::max(h.max, v) : INFINITY;
  return h;
}

HeadTopK::PerThread& HeadTopK::thread_scratch(int32_t thread) {
  if (thread < 0 || static_cast<size_t>(thread) >= per_thread_.size())
    throw loom::sdk::Error(LOOM_ERR_INTERNAL, "parallel_for thread index out of range");
  return per_thread_[static_cast<size_t>(thread)];
}

#if defined(__x86_64__) && defined(__GNUC__)

bool HeadTopK::refine(PerThread& pt, PanelGemm exact, const PanelView& w, const HeadNorms& norms,
                      const Screening& how, const float* x, int64_t t, int32_t k, int32_t* ids, float* values) {
  const Scans scans = how.scans;
  const auto threshold = scans == Scans::kAvx512 ? screen_threshold_avx512
                         : scans == Scans::kAvx2 ? screen_threshold_avx2
                                                 : screen_threshold_portable;
  const auto candidates = scans == Scans::kAvx512 ? screen_candidates_avx512
                          : scans == Scans::kAvx2 ? screen_candidates_avx2
                                                  : screen_candidates_portable;
  const int64_t ss = w.n_panels * kPanel;
  const float* s = s_.data() + t * ss;
  const RowBound& b = bounds_[static_cast<size_t>(t)];
  pt.run.resize(static_cast<size_t>(k));
  const float bar = threshold(s, norms.n.data(), w.out, b, k, pt.run.data());
  if (std::isnan(bar)) return false;
  const int64_t most = w.out / 8;
  pt.ids.resize(static_cast<size_t>(most));
  pt.values.resize(static_cast<size_t>(most));
  const int64_t count = candidates(s, norms.n.data(), w.out, b, bar, pt.ids.data(), most);
  if (count < k) return false;  // -1: too many; fewer than k cannot happen, but then no answer
  // Each candidate's panel for this row alone, by linear's kernel on a one-panel view: an output's
  // chain does not depend on the rows or panels computed with it (none_panel.hpp), so these are
  // the bits linear writes.
  pt.gemm.resize(static_cast<size_t>(scratch_floats(1, w.in)));
  int64_t done = -1;
  for (int64_t c = 0; c < count; ++c) {
    const int64_t o = pt.ids[static_cast<size_t>(c)], p = o / kPanel;
    if (p != done) {
      const PanelView one{w.dtype, std::min(kPanel, w.out - p * kPanel), w.in, 1,
                          static_cast<const char*>(w.data) + p * stored_panel_bytes(w, how.pairs)};
      exact(one, 0, 1, x, w.in, 1, pt.panel, kPanel, pt.gemm.data());
      done = p;
    }
    pt.values[static_cast<size_t>(c)] = pt.panel[o % kPanel];
  }
  loom::sdk::select_top_k_of(pt.ids.data(), pt.values.data(), count, k);
  std::copy(pt.ids.begin(), pt.ids.begin() + k, ids);
  std::copy(pt.values.begin(), pt.values.begin() + k, values);
  return true;
}

bool HeadTopK::pack_rows(const PanelView& w, const HeadNorms& norms, const Screening& how, const float* x,
                         int64_t xs, int64_t m) {
  bounds_.resize(static_cast<size_t>(m));
  full_.assign(static_cast<size_t>(m), 1);
  const Int8Head* h = how.int8;
  if (h != nullptr) {
    const int64_t nb = h->in_pad / kInt8Block;
    xq_.resize(static_cast<size_t>(m * h->in_pad));
    xe_.resize(static_cast<size_t>(m * nb));
    xsum_.resize(static_cast<size_t>(m * nb));
  } else {
    xp_.resize(static_cast<size_t>(m * pairs_of(w.in)));
  }
  if (h == nullptr && how.pairs)
    throw loom::sdk::Error(LOOM_ERR_INTERNAL, "the bf16 screen reads the exact panels, not pair panels");
  bool any = false;
  for (int64_t t = 0; t < m; ++t) {
    RowBound* b = &bounds_[static_cast<size_t>(t)];
    const bool ok = h != nullptr
                        ? pack_int8_row(x + t * xs, w.in, h->in_pad, h->rho, norms.max, xq_.data() + t * h->in_pad,
                                        xe_.data() + t * (h->in_pad / kInt8Block),
                                        xsum_.data() + t * (h->in_pad / kInt8Block), b,
                                        how.pairs ? HeadChain::kPairs : HeadChain::kExact)
                        : pack_screen_row(x + t * xs, w.in, w.dtype, norms.max, xp_.data() + t * pairs_of(w.in), b);
    full_[static_cast<size_t>(t)] = ok ? 0 : 1;
    any = any || ok;
  }
  return any;
}

void HeadTopK::screened(const loom::sdk::Host& host, PanelGemm exact, const PanelView& w, const HeadNorms& norms,
                        const Screening& how, const float* x, int64_t xs, int64_t n, int32_t k, int32_t* ids,
                        float* values, const LinearRows& linear) {
  const int64_t ss = w.n_panels * kPanel;
  for (int64_t t0 = 0; t0 < n; t0 += kChunkRows) {
    const int64_t m = std::min(kChunkRows, n - t0);
    const float* xc = x + t0 * xs;
    int32_t* ic = ids + t0 * k;
    float* vc = values + t0 * k;
    if (pack_rows(w, norms, how, xc, xs, m)) {
      s_.resize(static_cast<size_t>(m * ss));
      const int64_t shares = std::max<int64_t>(1, std::min<int64_t>(host.num_threads(), w.n_panels));
      const auto share_begin = [&](int64_t i) {
        if (i >= shares) return w.n_panels;
        return std::min(w.n_panels, (w.n_panels * i / shares + kShareAlign / 2) / kShareAlign * kShareAlign);
      };
      host.parallel_for(shares, [&](int64_t begin, int64_t end) {
        if (how.int8 != nullptr)
          how.int8_kernel(*how.int8, share_begin(begin), share_begin(end), xq_.data(), xe_.data(), xsum_.data(), m,
                          s_.data(), ss);
        else
          head_screen_avx512bf16(w, share_begin(begin), share_begin(end), xp_.data(), m, s_.data(), ss);
      });
      host.parallel_for(m, [&](int64_t begin, int64_t end, int32_t thread) {
        PerThread& pt = thread_scratch(thread);
        for (int64_t t = begin; t < end; ++t) {
          uint8_t& full = full_[static_cast<size_t>(t)];
          if (full == 0)
            full = refine(pt, exact, w, norms, how, xc + t * xs, t, k, ic + t * k, vc + t * k) ? 0 : 1;
        }
      });
    }
    full_rows(host, w.out, w.in, xc, xs, m, k, ic, vc, linear);
  }
}

#endif

void HeadTopK::full_rows(const loom::sdk::Host& host, int64_t out, int64_t in, const float* x, int64_t xs, int64_t m,
                         int32_t k, int32_t* ids, float* values, const LinearRows& linear) {
  std::vector<int64_t>& rows = rows_;
  rows.clear();
  for (int64_t t = 0; t < m; ++t)
    if (full_[static_cast<size_t>(t)] != 0) rows.push_back(t);
  if (rows.empty()) return;
  const auto r = static_cast<int64_t>(rows.size());
  rows_x_.resize(static_cast<size_t>(r * in));
  for (int64_t i = 0; i < r; ++i) std::copy_n(x + rows[static_cast<size_t>(i)] * xs, in, rows_x_.data() + i * in);
  y_.resize(static_cast<size_t>(r * out));
  linear(rows_x_.data(), in, r, y_.data());
  host.parallel_for(r, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t t = rows[static_cast<size_t>(i)];
      loom::sdk::select_top_k(y_.data() + i * out, out, k, ids + t * k, values + t * k);
    }
  });
}

void HeadTopK::by_linear(const loom::sdk::Host& host, int64_t out, const float* x, int64_t xs, int64_t n, int32_t k,
                         int32_t* ids, float* values, const LinearRows& linear) {
  for (int64_t t0 = 0; t0 < n; t0 += kChunkRows) {
    const int64_t m = std::min(kChunkRows, n - t0);
    y_.resize(static_cast<size_t>(m * out));
    linear(x + t0 * xs, xs, m, y_.data());
    host.parallel_for(m, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t)
        loom::sdk::select_top_k(y_.data() + t * out, out, k, ids + (t0 + t) * k, values + (t0 + t) * k);
    });
  }
}

}  // namespace loom_none
