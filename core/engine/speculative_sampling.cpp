#include "core/engine/speculative_sampling.hpp"

#include <algorithm>

#include "core/engine/sampler.hpp"

namespace loom {

DraftVerdict verify_draft(std::span<const double> p, std::span<const float> q, int32_t draft, std::mt19937_64& rng) {
  const auto d = static_cast<size_t>(draft);
  const double qd = q.empty() ? 1.0 : static_cast<double>(q[d]);
  // u < p/q without dividing (q(d) > 0: d was drawn from q).
  if (Sampler::uniform(rng) * qd < p[d]) return {true, draft};
  auto residual = [&](size_t i) {
    const double qi = q.empty() ? (i == d ? 1.0 : 0.0) : static_cast<double>(q[i]);
    return std::max(0.0, p[i] - qi);
  };
  double mass = 0.0;
  for (size_t i = 0; i < p.size(); ++i) mass += residual(i);
  const double r = Sampler::uniform(rng) * mass;
  double cum = 0.0;
  size_t last = d;
  for (size_t i = 0; i < p.size(); ++i) {
    const double w = residual(i);
    if (w <= 0.0) continue;
    cum += w;
    last = i;
    if (r < cum) return {false, static_cast<int32_t>(i)};
  }
  // Rounding left r at the top: the last token with residual mass (d itself if none has any,
  // which only happens when p == q up to rounding, where accepting d is exact).
  return {false, static_cast<int32_t>(last)};
}

}  // namespace loom
