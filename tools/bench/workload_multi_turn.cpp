#include <string>

#include "core/common/error.hpp"
#include "tools/bench/workload.hpp"

namespace loom::bench {

std::vector<Conversation> multi_turn_workload(size_t n, const MultiTurnOptions& options,
                                              const PromptText& text, uint64_t seed) {
  if (options.num_turns <= 0) {
    throw Error("--num-turns must be > 0, got " + std::to_string(options.num_turns));
  }
  std::mt19937_64 rng(seed);
  std::vector<Conversation> out(n);
  for (Conversation& c : out) {
    for (int64_t k = 0; k < options.num_turns; ++k) {
      const int64_t input_len = draw_length(options.input_len, 0.0, rng, "--random-input-len");
      const int64_t output_len = draw_length(options.output_len, 0.0, rng, "--random-output-len");
      c.turns.push_back(PromptTurn{text.random_text(input_len, rng), output_len});
    }
  }
  return out;
}

}  // namespace loom::bench
