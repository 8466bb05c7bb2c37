#include "core/config/speculator_config.hpp"

namespace loom::config_detail {

namespace {
std::string k_problem(int64_t k) {
  return "must be in [1, " + std::to_string(kMaxSpeculativeTokens) + "], got " + std::to_string(k);
}
}  // namespace

void read_speculation(const toml::table& table, Problems& problems, SpeculationConfig& out) {
  if (const toml::node* n = table.get("num_speculative_tokens")) {
    const std::optional<int64_t> k = n->value<int64_t>();
    if (!n->is_integer() || !k) {
      problems.add(pos_of(n->source()), "speculator.num_speculative_tokens", "expected an integer, got " + type_name(n->type()));
    } else if (*k < 1 || *k > kMaxSpeculativeTokens) {
      problems.add(pos_of(n->source()), "speculator.num_speculative_tokens", k_problem(*k));
    } else {
      out.num_speculative_tokens = static_cast<int32_t>(*k);
    }
  }
  if (const toml::node* n = table.get("adaptive")) {
    if (const std::optional<bool> b = n->is_boolean() ? n->value<bool>() : std::nullopt) {
      out.adaptive = *b;
    } else {
      problems.add(pos_of(n->source()), "speculator.adaptive", "expected true or false, got " + type_name(n->type()));
    }
  }
}

void check_speculation(Problems& problems, const SpeculationConfig& speculation) {
  const int32_t k = speculation.num_speculative_tokens;
  if (k < 1 || k > kMaxSpeculativeTokens) problems.add(SourcePos{}, "speculator.num_speculative_tokens", k_problem(k));
}

std::string speculation_lines(const SpeculationConfig& speculation) {
  return "num_speculative_tokens = " + std::to_string(speculation.num_speculative_tokens) +
         "\nadaptive = " + (speculation.adaptive ? "true" : "false") + "\n";
}

}  // namespace loom::config_detail
