// When each request of a run is sent, as offsets from the start: all at once for an infinite
// rate, otherwise gamma-distributed gaps with shape B (the burstiness) and mean 1/rate, as vLLM
// does: B = 1 is a Poisson process, B < 1 burstier, B > 1 more regular. The first request goes at
// offset 0 and each gap is drawn after the request before it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace loom::bench {

struct ArrivalOptions {
  double request_rate = 0;  // requests per second; <= 0 or infinity: all at once
  double burstiness = 1.0;  // gamma shape, > 0
  uint64_t seed = 0;
};

// [n] non-decreasing offsets in seconds. Throws loom::Error for burstiness <= 0.
std::vector<double> arrival_offsets(size_t n, const ArrivalOptions& options);

}  // namespace loom::bench
