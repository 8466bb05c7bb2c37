#include "tools/bench/arrival_process.hpp"

#include <cmath>
#include <random>
#include <string>

#include "core/common/error.hpp"

namespace loom::bench {

std::vector<double> arrival_offsets(size_t n, const ArrivalOptions& options) {
  if (!(options.burstiness > 0)) {
    throw Error("--burstiness must be > 0, got " + std::to_string(options.burstiness));
  }
  std::vector<double> offsets(n, 0.0);
  if (!(options.request_rate > 0) || std::isinf(options.request_rate)) return offsets;
  // Gamma(shape B, scale 1/(rate*B)) has mean 1/rate whatever B is.
  std::mt19937_64 rng(options.seed);
  std::gamma_distribution<double> gap(options.burstiness,
                                      1.0 / (options.request_rate * options.burstiness));
  for (size_t i = 1; i < n; ++i) offsets[i] = offsets[i - 1] + gap(rng);
  return offsets;
}

}  // namespace loom::bench
