// Helpers for the grammar tests: whole-string matching through the incremental matcher.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/grammar/gbnf_parser.hpp"
#include "core/grammar/grammar_matcher.hpp"

namespace loom::test {

inline std::shared_ptr<const Grammar> gbnf(std::string_view text) {
  return std::make_shared<const Grammar>(parse_gbnf(text));
}

// True when `input` is a whole sentence of the grammar.
inline bool full_match(const std::shared_ptr<const Grammar>& g, std::string_view input) {
  GrammarMatcher m(g);
  return m.accept_bytes(input) && m.is_complete();
}

// True when `input` can still be continued into (or already is) a sentence.
inline bool prefix_ok(const std::shared_ptr<const Grammar>& g, std::string_view input) {
  GrammarMatcher m(g);
  return m.accept_bytes(input);
}

// The message of the loom::Error `f` throws ("" when it does not throw).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace loom::test
