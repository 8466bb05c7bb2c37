#include "core/executor/expert_routing.hpp"

#include <cmath>
#include <string>

#include "core/common/error.hpp"

namespace loom {

void route_experts(const float* logits, int32_t n_tokens, int32_t n_experts, int32_t k, bool norm_topk,
                   ExpertRoutes& out) {
  if (k < 1 || k > n_experts)
    throw Error("expert routing: top-" + std::to_string(k) + " of " + std::to_string(n_experts) + " experts");
  out.n_tokens = n_tokens;
  out.n_experts = n_experts;
  out.k = k;
  const size_t slots = static_cast<size_t>(n_tokens) * static_cast<size_t>(k);
  out.expert.resize(slots);
  out.weight.resize(slots);
  std::vector<double> prob(static_cast<size_t>(n_experts));
  std::vector<bool> taken(static_cast<size_t>(n_experts));
  for (int32_t t = 0; t < n_tokens; ++t) {
    const float* z = logits + static_cast<int64_t>(t) * n_experts;
    double mx = z[0];
    for (int32_t e = 1; e < n_experts; ++e) mx = std::max(mx, static_cast<double>(z[e]));
    double sum = 0.0;
    for (int32_t e = 0; e < n_experts; ++e) sum += prob[static_cast<size_t>(e)] = std::exp(z[e] - mx);
    taken.assign(taken.size(), false);
    double chosen = 0.0;
    for (int32_t r = 0; r < k; ++r) {  // k is small (2 to 8): selection beats a sort
      int32_t best = -1;
      for (int32_t e = 0; e < n_experts; ++e)
        if (!taken[static_cast<size_t>(e)] && (best < 0 || prob[static_cast<size_t>(e)] > prob[static_cast<size_t>(best)]))
          best = e;
      taken[static_cast<size_t>(best)] = true;
      out.expert[static_cast<size_t>(t) * k + r] = best;
      chosen += prob[static_cast<size_t>(best)];
    }
    for (int32_t r = 0; r < k; ++r) {
      const size_t slot = static_cast<size_t>(t) * k + r;
      const double p = prob[static_cast<size_t>(out.expert[slot])];
      out.weight[slot] = static_cast<float>(norm_topk ? p / chosen : p / sum);
    }
  }
  // Counting sort of the slots by expert, stable in token order.
  out.offsets.assign(static_cast<size_t>(n_experts) + 1, 0);
  for (int32_t e : out.expert) ++out.offsets[static_cast<size_t>(e) + 1];
  for (int32_t e = 0; e < n_experts; ++e) out.offsets[static_cast<size_t>(e) + 1] += out.offsets[static_cast<size_t>(e)];
  std::vector<int32_t> next(out.offsets.begin(), out.offsets.end() - 1);
  out.row_of_slot.resize(slots);
  out.token_of_row.resize(slots);
  for (size_t slot = 0; slot < slots; ++slot) {
    const int32_t row = next[static_cast<size_t>(out.expert[slot])]++;
    out.row_of_slot[slot] = row;
    out.token_of_row[static_cast<size_t>(row)] = static_cast<int32_t>(slot / static_cast<size_t>(k));
  }
}

}  // namespace loom
