// A STREAM-style read bandwidth: every thread sums its share of a buffer far larger than the
// last-level cache, which is what a memory-bound decode step does with the weights.
#pragma once

#include <cstdint>

#include "core/common/thread_pool.hpp"

namespace loom::bench {

// Best-of-`passes` read bandwidth in bytes/s over a `bytes`-sized buffer.
double read_bandwidth(ThreadPool& threads, int64_t bytes, int32_t passes);

}  // namespace loom::bench
