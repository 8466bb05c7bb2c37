// Regular expressions (the common subset of Python's `re` and ECMAScript) compiled to GBNF:
// literals and escapes (\n \t \r \f \v \xHH \uHHHH, escaped punctuation), classes with ranges
// and negation, \d \w \s and their negations, '.', groups ((...), (?:...), (?P<n>...),
// (?<n>...)), alternation, quantifiers * + ? {m} {m,} {m,n} (a lazy '?' suffix changes no
// language and is accepted), '^' at the very start and '$' at the very end. Refused, naming
// them: backreferences, lookahead/lookbehind, word boundaries, other anchors, inline flags,
// possessive quantifiers.
#pragma once

#include <string>
#include <string_view>

namespace loom {

struct RegexOptions {
  // The match sits inside a JSON string (JSON Schema `pattern`): '"', '\' and control
  // characters are written as JSON escapes, and classes never produce them raw.
  bool json_string = false;
  // Search semantics (JSON Schema `pattern`): an end without its anchor may have any text.
  bool unanchored = false;
};

// A GBNF expression (no rules) matching the regex's language. Throws loom::Error
// "regex offset N: ..." on what is refused or malformed.
std::string regex_to_gbnf_expression(std::string_view regex, const RegexOptions& options = {});

// `root ::= <expression>`: the whole output must match (as vLLM's `regex` does).
std::string regex_grammar(std::string_view regex);

}  // namespace loom
