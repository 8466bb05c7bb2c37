// Mixture-of-experts routing on the host: from a step's router logits to each token's top-k
// experts and weights, and the grouping of the routed rows by expert that lets the expert GEMMs
// read each active expert's weights once per step (quantization interface 1.4 linear_experts).
//
// Region map of the grouped rows (slots: token t's rank-r choice is slot t * k + r):
//   grouped row  [offsets[e], offsets[e + 1])  the slots routed to expert e, in token order
//   row_of_slot[slot]                          where that slot's row sits in the grouped rows
//   token_of_row[row]                          the token a grouped row came from
// Everything is a function of each token's own logits (ties go to the lower expert index), and a
// token's expert outputs are summed in its rank order, so its result never depends on the other
// tokens of the step.
#pragma once

#include <cstdint>
#include <vector>

namespace loom {

struct ExpertRoutes {
  int32_t n_tokens = 0, n_experts = 0, k = 0;
  std::vector<int32_t> expert;        // [n_tokens * k] chosen expert of each slot, by falling probability
  std::vector<float> weight;          // [n_tokens * k] its weight (renormalised when norm_topk)
  std::vector<int32_t> offsets;       // [n_experts + 1] grouped-row ranges, offsets[0] = 0
  std::vector<int32_t> row_of_slot;   // [n_tokens * k]
  std::vector<int32_t> token_of_row;  // [n_tokens * k]
};

// Routes n_tokens rows of router logits [n_tokens, n_experts]: softmax (in double), the k most
// probable experts, their probabilities renormalised to sum 1 when norm_topk, then the grouping.
// Reuses `out`'s buffers. Throws loom::Error unless 1 <= k <= n_experts.
void route_experts(const float* logits, int32_t n_tokens, int32_t n_experts, int32_t k, bool norm_topk,
                   ExpertRoutes& out);

}  // namespace loom
