// The split-K merge (flash_cpu_split.hpp). One compiled body for every caller, built with
// -ffp-contract=off (CMakeLists.txt): a partial merged inside one work item and the same partial
// merged by whichever thread finishes a split sequence last must round identically.
#include "flash_cpu_split.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace loom::flash_cpu {

void reset_partial(float* state, int32_t head_dim) {
  std::fill(state, state + head_dim, 0.0f);
  state[head_dim] = -std::numeric_limits<float>::infinity();
  state[head_dim + 1] = 0.0f;
}

void merge_partial(float* state, const float* p, int32_t head_dim) {
  const int32_t D = head_dim;
  const float m = state[D], m_p = p[D];
  const float m_new = std::max(m, m_p);
  // A fresh state has m = -inf: a = exp(-inf) = 0 and b = exp(0) = 1, so p is copied exactly.
  const float a = std::exp(m - m_new), b = std::exp(m_p - m_new);
  state[D] = m_new;
  state[D + 1] = state[D + 1] * a + p[D + 1] * b;
  for (int32_t d = 0; d < D; ++d) state[d] = state[d] * a + p[d] * b;
}

void finish_partial(const float* state, float* out, int32_t head_dim) {
  // A true division, like the kernels' own final step.
  const float l = state[head_dim + 1];
  for (int32_t d = 0; d < head_dim; ++d) out[d] = state[d] / l;
}

}  // namespace loom::flash_cpu
