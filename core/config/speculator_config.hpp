// The host's keys of the [speculator] table (SpeculationConfig in config.hpp): read with
// positions, checked when built in code, written back for --print-config. The table's other keys
// belong to the speculator plugin.
#pragma once

#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "core/config/config.hpp"
#include "core/config/toml_reader.hpp"

namespace loom::config_detail {

// The most drafts per request and step a config may ask for.
inline constexpr int32_t kMaxSpeculativeTokens = 16;

// Reads num_speculative_tokens and adaptive from a [speculator] table (absent keys keep their value).
void read_speculation(const toml::table& table, Problems& problems, SpeculationConfig& out);
void check_speculation(Problems& problems, const SpeculationConfig& speculation);
// "num_speculative_tokens = 3\nadaptive = true\n", to follow the plugin's section.
std::string speculation_lines(const SpeculationConfig& speculation);

}  // namespace loom::config_detail
