// loom-server --speculative-config JSON, vLLM's flag: the [speculator] table from vLLM's keys.
//   {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 1, "prompt_lookup_max": 4}
//   {"method": "suffix", "suffix_decoding_max_tree_depth": 32, "suffix_decoding_min_token_prob": 0.1,
//    "suffix_decoding_max_cached_requests": 1000}
// plus Loom's "adaptive" (default true). Methods Loom has no speculator for, and unknown keys, are
// refused naming the valid ones.
#pragma once

#include <string_view>

#include "core/config/config.hpp"

namespace loom {

void apply_speculative_config(Config& config, std::string_view json);

}  // namespace loom
