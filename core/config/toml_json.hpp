// Plugin tables cross the plugin ABI as JSON object text (DESIGN.md §3): TOML values become JSON
// here, and JSON becomes TOML again when the effective config is printed.
#pragma once

#include <toml++/toml.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/config/toml_reader.hpp"

namespace loom::config_detail {

// The JSON form of a TOML value: tables -> objects, arrays -> arrays, dates and times -> their
// TOML spelling as strings. Non-finite floats (no JSON form) are recorded as problems.
nlohmann::json toml_to_json(const toml::node& node, const std::string& key_path,
                            Problems& problems);

// TOML spellings: a basic string with escapes, a bare or quoted key, and an inline value
// (objects become inline tables) for a JSON value as produced by toml_to_json.
std::string toml_string(std::string_view text);
std::string toml_key(std::string_view key);
std::string toml_inline_value(const nlohmann::json& value);

}  // namespace loom::config_detail
