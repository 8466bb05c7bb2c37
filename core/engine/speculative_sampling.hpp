// Verifying one draft token against the target's distribution (speculative sampling, Leviathan et
// al. 2023 / Chen et al. 2023). With target probabilities p and the draft's q (the token d was
// drawn from q):
//   accept d with probability min(1, p(d) / q(d));
//   otherwise draw the replacement from the residual norm(max(0, p - q)).
// The token that comes out is distributed exactly as p, whatever q is. A deterministic draft
// (n-gram, suffix: no q given) is q = one-hot at d: accept with probability p(d), else draw from p
// with d removed. Greedy requests never come here: their check is argmax == d.
#pragma once

#include <cstdint>
#include <random>
#include <span>

namespace loom {

struct DraftVerdict {
  bool accepted = false;
  int32_t token = 0;  // d when accepted, else the replacement
};

// p: [vocab] target probabilities (sum 1); q: [vocab] draft probabilities, or empty for a
// deterministic draft. Draws at most two uniforms from rng (one to accept, one for the residual).
DraftVerdict verify_draft(std::span<const double> p, std::span<const float> q, int32_t draft, std::mt19937_64& rng);

}  // namespace loom
