// The k largest of a row of outputs, in the one order the host and every quantization plugin use
// for a classifier head's selection (quantization interface 1.5 linear_top_k): larger value
// first, the lower index first among equal values, NaN below every number (and among NaNs, the
// lower index first). Header-only, so plugins and the host share the definition.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace loom::sdk {

// Whether output (a, ia) ranks before output (b, ib).
inline bool ranks_before(float a, int32_t ia, float b, int32_t ib) {
  const bool na = std::isnan(a), nb = std::isnan(b);
  if (na != nb) return nb;  // a number before NaN
  if (!na && a != b) return a > b;
  return ia < ib;
}

// Offers (v, id) to the sorted run ids/values[0, kept) of at most k best: it enters at its rank
// when the run has room or it ranks before the run's last, which then drops out.
inline void offer_ranked(float v, int32_t id, int32_t k, int32_t& kept, int32_t* ids, float* values) {
  if (kept == k && !ranks_before(v, id, values[k - 1], ids[k - 1])) return;
  int32_t at = kept < k ? kept++ : k - 1;  // the slot it enters from: the end of the run
  while (at > 0 && ranks_before(v, id, values[at - 1], ids[at - 1])) {
    values[at] = values[at - 1];
    ids[at] = ids[at - 1];
    --at;
  }
  values[at] = v;
  ids[at] = id;
}

// Writes the k best of row[0, n) (by ranks_before) to ids[0, k) and values[0, k), best first.
// 1 <= k <= n. One pass with a sorted run of the k best so far: O(n) for the small k a sampler
// uses, as a row rarely displaces one of them.
inline void select_top_k(const float* row, int64_t n, int32_t k, int32_t* ids, float* values) {
  int32_t kept = 0;
  for (int64_t j = 0; j < n; ++j) offer_ranked(row[j], static_cast<int32_t>(j), k, kept, ids, values);
}

// The same over candidates: the k best of (values[c], ids[c]) for c < count, moved to the front
// of both arrays in rank order. 1 <= k <= count. (Entry c is read before the run, which never
// reaches past c, can write it.)
inline void select_top_k_of(int32_t* ids, float* values, int64_t count, int32_t k) {
  int32_t kept = 0;
  for (int64_t c = 0; c < count; ++c) offer_ranked(values[c], ids[c], k, kept, ids, values);
}

}  // namespace loom::sdk
