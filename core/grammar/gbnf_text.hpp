// Writing GBNF text: the compilers (JSON Schema, regex, choices) emit GBNF and parse it with
// parse_gbnf, so every compiled grammar can be read, logged and cached by its text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loom {

// A quoted GBNF literal matching exactly `text` (UTF-8; quotes, backslashes and control
// characters escaped).
std::string gbnf_literal(std::string_view text);

// A GBNF character class matching the code points in `ranges` (inclusive, non-empty).
std::string gbnf_class(const std::vector<std::pair<uint32_t, uint32_t>>& ranges);

// `root ::= "a" | "b" | ...`: exactly one of the strings. Throws loom::Error when the list is
// empty.
std::string choice_grammar(const std::vector<std::string>& choices);

}  // namespace loom
