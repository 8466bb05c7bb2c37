// A request as the host shows it to a cache plugin, for the cache conformance tests: its tokens
// so far, how many have K/V, and the most it may grow to.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/types.h"

namespace loom::conformance {

struct CacheRequest {
  uint64_t id;
  std::vector<int32_t> tokens;
  int32_t computed = 0;
  int32_t max_total = 4096;
  loom_request_view view() const {
    loom_request_view v{};
    v.struct_size = sizeof(v);
    v.request_id = id;
    v.token_ids = tokens.data();
    v.num_tokens = static_cast<int32_t>(tokens.size());
    v.num_prompt_tokens = v.num_tokens;
    v.num_computed_tokens = computed;
    v.max_total_tokens = max_total;
    return v;
  }
};

}  // namespace loom::conformance
