#include "core/grammar/grammar.hpp"

#include <functional>
#include <optional>

#include "core/common/error.hpp"
#include "core/grammar/utf8_ranges.hpp"

namespace loom {

uint32_t GrammarBuilder::rule(const std::string& name) {
  auto [it, added] = index_.emplace(name, static_cast<uint32_t>(names_.size()));
  if (!added) return it->second;
  names_.push_back(name);
  defined_.push_back(false);
  alternatives_.emplace_back();
  return static_cast<uint32_t>(names_.size() - 1);
}

uint32_t GrammarBuilder::helper_rule(const std::string& base, const std::string& what) {
  return rule(base + "-" + what + "-" + std::to_string(++helper_count_));
}

void GrammarBuilder::define(uint32_t r, const std::vector<SymbolSequence>& alternatives) {
  LOOM_CHECK(!defined_[r], "rule '" + names_[r] + "' is defined twice");
  defined_[r] = true;
  alternatives_[r] = alternatives;
}

GrammarSymbol GrammarBuilder::bytes(const ByteSet& set) {
  auto [it, added] = byte_set_index_.emplace(set, static_cast<uint32_t>(byte_sets_.size()));
  if (added) byte_sets_.push_back(set);
  return GrammarSymbol{false, it->second};
}

GrammarSymbol GrammarBuilder::byte(uint8_t b) {
  ByteSet set;
  set.set(b);
  return bytes(set);
}

GrammarSymbol GrammarBuilder::char_class(const std::vector<std::pair<uint32_t, uint32_t>>& ranges, bool negated,
                                         const std::string& context_rule) {
  std::vector<ByteRangeSequence> seqs;
  for (const auto& r : normalize_code_ranges(ranges, negated)) utf8_range_sequences(r.first, r.second, seqs);
  // One-byte encodings share one set; each longer sequence is an alternative of a helper rule.
  ByteSet ascii;
  std::vector<SymbolSequence> alts;
  for (const auto& seq : seqs) {
    if (seq.size() == 1) {
      for (int b = seq[0].lo; b <= seq[0].hi; ++b) ascii.set(static_cast<size_t>(b));
      continue;
    }
    SymbolSequence s;
    for (const ByteRange& br : seq) {
      ByteSet set;
      for (int b = br.lo; b <= br.hi; ++b) set.set(static_cast<size_t>(b));
      s.push_back(bytes(set));
    }
    alts.push_back(std::move(s));
  }
  if (ascii.any()) alts.insert(alts.begin(), SymbolSequence{bytes(ascii)});
  LOOM_CHECK(!alts.empty(), "a character class in rule '" + context_rule + "' matches no character");
  return group(alts, context_rule);
}

GrammarSymbol GrammarBuilder::group(const SymbolSequence& seq, const std::string& context_rule) {
  if (seq.size() == 1) return seq[0];
  return group(std::vector<SymbolSequence>{seq}, context_rule);
}

GrammarSymbol GrammarBuilder::group(const std::vector<SymbolSequence>& alternatives, const std::string& context_rule) {
  if (alternatives.size() == 1 && alternatives[0].size() == 1) return alternatives[0][0];
  const uint32_t r = helper_rule(context_rule, "group");
  define(r, alternatives);
  return GrammarSymbol{true, r};
}

void GrammarBuilder::repeat(GrammarSymbol x, int64_t min, int64_t max, const std::string& context_rule,
                            SymbolSequence& out) {
  LOOM_CHECK(min >= 0 && (max < 0 || max >= min), "repetition in rule '" + context_rule + "': bad bounds");
  LOOM_CHECK(min <= kMaxRepetition && max <= kMaxRepetition,
             "repetition in rule '" + context_rule + "': more than " + std::to_string(kMaxRepetition) + " copies");
  for (int64_t i = 0; i < min; ++i) out.push_back(x);
  if (max < 0) {
    const uint32_t star = helper_rule(context_rule, "star");
    define(star, {SymbolSequence{x, GrammarSymbol{true, star}}, SymbolSequence{}});
    out.push_back(GrammarSymbol{true, star});
    return;
  }
  // Nested optionals, innermost first: opt_k ::= x opt_{k-1} | "".
  std::optional<GrammarSymbol> inner;
  for (int64_t k = 0; k < max - min; ++k) {
    const uint32_t opt = helper_rule(context_rule, "opt");
    SymbolSequence body{x};
    if (inner) body.push_back(*inner);
    define(opt, {body, SymbolSequence{}});
    inner = GrammarSymbol{true, opt};
  }
  if (inner) out.push_back(*inner);
}

Grammar GrammarBuilder::finish(const std::string& root_name, std::string source) {
  Grammar g;
  const auto root_it = index_.find(root_name);
  LOOM_CHECK(root_it != index_.end() && defined_[root_it->second], "the grammar has no '" + root_name + "' rule");
  for (uint32_t i = 0; i < names_.size(); ++i) {
    LOOM_CHECK(defined_[i], "rule '" + names_[i] + "' is used but never defined");
  }
  g.root = rule(root_name);
  g.rule_names = names_;
  g.byte_sets = byte_sets_;
  g.rule_alternatives.resize(names_.size());
  for (uint32_t r = 0; r < names_.size(); ++r) {
    for (const SymbolSequence& alt : alternatives_[r]) {
      g.rule_alternatives[r].push_back(static_cast<uint32_t>(g.elements.size()));
      for (const GrammarSymbol& s : alt) {
        g.elements.push_back({s.is_rule ? GrammarElement::kRule : GrammarElement::kBytes, s.id});
      }
      g.elements.push_back({GrammarElement::kEnd, 0});
    }
  }
  // Nullable rules (a fixpoint), then left recursion: a rule reachable from itself through the
  // leading, possibly-empty part of its alternatives.
  const size_t n = names_.size();
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const SymbolSequence& alt : alternatives_[r]) {
        bool all = true;
        for (const GrammarSymbol& s : alt) all = all && s.is_rule && nullable[s.id];
        if (all) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  std::vector<std::vector<uint32_t>> leading(n);
  for (size_t r = 0; r < n; ++r) {
    for (const SymbolSequence& alt : alternatives_[r]) {
      for (const GrammarSymbol& s : alt) {
        if (!s.is_rule) break;
        leading[r].push_back(s.id);
        if (!nullable[s.id]) break;
      }
    }
  }
  std::vector<int> mark(n, 0);  // 0 unvisited, 1 on the path, 2 done
  std::function<void(uint32_t)> visit = [&](uint32_t r) {
    mark[r] = 1;
    for (uint32_t next : leading[r]) {
      LOOM_CHECK(mark[next] != 1, "rule '" + names_[next] + "' is left recursive (it can begin with itself" +
                                      (nullable[next] ? ", possibly by repeating something that matches nothing" : "") +
                                      ")");
      if (mark[next] == 0) visit(next);
    }
    mark[r] = 2;
  };
  for (uint32_t r = 0; r < n; ++r) {
    if (mark[r] == 0) visit(r);
  }
  g.source = std::move(source);
  return g;
}

}  // namespace loom
