// The grammar IR: a context-free grammar over bytes. Every rule is a list of alternatives and
// every alternative a sequence of elements, each a byte set (one byte out of up to 256) or a
// reference to a rule. Character classes over code points are lowered to UTF-8 byte sequences
// when the grammar is built (utf8_ranges.hpp), so the matcher never decodes UTF-8 and a token
// that ends inside a character is checked exactly like any other byte string.
//
// Repetition is lowered by the builder too: x* is R ::= x R | "" (right recursion, which the
// matcher runs without growing its stacks), x{m,n} is m copies of x followed by n - m nested
// optionals (no ambiguity, so one stack per parse).
#pragma once

#include <bitset>
#include <optional>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace loom {

using ByteSet = std::bitset<256>;

struct GrammarElement {
  enum Kind : uint8_t { kBytes, kRule, kEnd };
  Kind kind = kEnd;
  uint32_t value = 0;  // kBytes: index into byte_sets; kRule: the rule id
};

struct Grammar {
  // Every alternative is stored here as its elements followed by one kEnd.
  std::vector<GrammarElement> elements;
  std::vector<std::vector<uint32_t>> rule_alternatives;  // rule -> start index of each alternative
  std::vector<std::string> rule_names;                   // rule -> name (for messages)
  std::vector<ByteSet> byte_sets;
  uint32_t root = 0;
  // The text the grammar was parsed from: equal texts give equal grammars (a cache key).
  std::string source;
};

// A symbol while a grammar is being built: a byte set or a rule.
struct GrammarSymbol {
  bool is_rule = false;
  uint32_t id = 0;
};
using SymbolSequence = std::vector<GrammarSymbol>;

// Builds a Grammar: names rules, deduplicates byte sets, lowers repetition and character
// classes. finish() checks that every referenced rule is defined and that no rule is left
// recursive (the stack matcher would expand it forever), and throws loom::Error naming the rule.
class GrammarBuilder {
 public:
  // The rule called `name`, created (undefined) on first use.
  uint32_t rule(const std::string& name);
  // A fresh helper rule named after `base` (e.g. "item-star-3").
  uint32_t helper_rule(const std::string& base, const std::string& what);
  bool is_defined(uint32_t rule) const { return defined_[rule]; }
  // Sets the rule's alternatives (a rule is defined once).
  void define(uint32_t rule, const std::vector<SymbolSequence>& alternatives);

  GrammarSymbol bytes(const ByteSet& set);
  GrammarSymbol byte(uint8_t b);
  // The UTF-8 encodings of the code points in `ranges` (inclusive pairs), or of every code point
  // outside them (surrogates excluded) when negated. A single symbol when all are one byte long.
  GrammarSymbol char_class(const std::vector<std::pair<uint32_t, uint32_t>>& ranges, bool negated,
                           const std::string& context_rule);
  // seq wrapped as one symbol (itself when it is a single symbol).
  GrammarSymbol group(const SymbolSequence& seq, const std::string& context_rule);
  GrammarSymbol group(const std::vector<SymbolSequence>& alternatives, const std::string& context_rule);
  // x{min,max}, max < 0 for unbounded, appended to `out`.
  void repeat(GrammarSymbol x, int64_t min, int64_t max, const std::string& context_rule, SymbolSequence& out);

  Grammar finish(const std::string& root_name, std::string source);

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> index_;
  std::vector<bool> defined_;
  std::vector<std::vector<SymbolSequence>> alternatives_;
  std::vector<ByteSet> byte_sets_;
  std::unordered_map<ByteSet, uint32_t> byte_set_index_;
  int helper_count_ = 0;
};

// Up to how many copies a bounded repetition may spell out (x{0,100000} would be huge).
inline constexpr int64_t kMaxRepetition = 10000;

}  // namespace loom
