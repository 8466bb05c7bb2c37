#include <cmath>
#include <string>

#include "core/common/error.hpp"
#include "tools/bench/workload.hpp"

namespace loom::bench {

int64_t draw_length(int64_t len, double ratio, std::mt19937_64& rng, const char* what) {
  if (len <= 0) throw Error(std::string(what) + " must be > 0, got " + std::to_string(len));
  if (!(ratio >= 0 && ratio < 1)) {
    throw Error("--random-range-ratio must be in [0, 1), got " + std::to_string(ratio));
  }
  const auto lo = static_cast<int64_t>(std::floor(static_cast<double>(len) * (1 - ratio)));
  const auto hi = static_cast<int64_t>(std::ceil(static_cast<double>(len) * (1 + ratio)));
  std::uniform_int_distribution<int64_t> pick(std::max<int64_t>(lo, 1), std::max<int64_t>(hi, 1));
  return pick(rng);
}

std::vector<Conversation> random_workload(size_t n, const RandomOptions& options,
                                          const PromptText& text, uint64_t seed) {
  if (options.prefix_len < 0) {
    throw Error("--random-prefix-len must be >= 0, got " + std::to_string(options.prefix_len));
  }
  std::mt19937_64 rng(seed);
  const std::string prefix = text.random_text(options.prefix_len, rng);
  std::vector<Conversation> out(n);
  for (Conversation& c : out) {
    const int64_t input_len = draw_length(options.input_len, options.range_ratio, rng,
                                          "--random-input-len");
    const int64_t output_len = draw_length(options.output_len, options.range_ratio, rng,
                                           "--random-output-len");
    std::string prompt = prefix;
    if (!prompt.empty()) prompt += ' ';
    prompt += text.random_text(input_len, rng);
    c.turns.push_back(PromptTurn{std::move(prompt), output_len});
  }
  return out;
}

}  // namespace loom::bench
