#include <string>

#include "core/common/error.hpp"
#include "tools/bench/workload.hpp"

namespace loom::bench {

std::vector<Conversation> shared_prefix_workload(size_t n, const SharedPrefixOptions& options,
                                                 const PromptText& text, uint64_t seed) {
  if (options.num_groups <= 0) {
    throw Error("--num-groups must be > 0, got " + std::to_string(options.num_groups));
  }
  if (options.prefix_len <= 0 || options.suffix_len <= 0 || options.output_len <= 0) {
    throw Error("--prefix-len, --suffix-len and --output-len must be > 0");
  }
  std::mt19937_64 rng(seed);
  std::vector<std::string> prefixes;  // [num_groups]
  for (int64_t g = 0; g < options.num_groups; ++g) {
    prefixes.push_back(text.random_text(options.prefix_len, rng));
  }
  std::vector<Conversation> out(n);
  for (size_t i = 0; i < n; ++i) {
    out[i].system = prefixes[i % prefixes.size()];
    out[i].turns.push_back(PromptTurn{text.random_text(options.suffix_len, rng), options.output_len});
  }
  return out;
}

}  // namespace loom::bench
