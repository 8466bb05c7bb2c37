// An incremental recogniser for the grammar IR: a pushdown automaton run on a set of stacks (as
// llama.cpp's sampler does). Each stack holds positions in Grammar::elements: the top is the byte
// set to match next, the rest are where to continue when the rule above finishes. A byte keeps
// the stacks whose top accepts it, advances them and expands rule references at the new top.
//
// Why stacks and not an Earley parser: the grammars here are JSON-shaped and nearly
// deterministic, so the set holds one or a few stacks; a step is then a few vector copies, the
// whole state is a small canonical value (sorted, deduplicated stacks) that keys the mask cache
// exactly, and copying a state for the vocabulary walk is cheap. Earley handles left recursion
// and heavy ambiguity better but its chart grows with the input and has no cheap canonical key.
// Left recursion is refused when the grammar is built; right recursion is run as a tail call (a
// reference at the end of an alternative pushes no return position), so x* keeps stacks flat.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/grammar/grammar.hpp"

namespace loom {

using GrammarStack = std::vector<uint32_t>;

// Stacks with reused storage: slots past size() keep their capacity for the next fill.
class StackSet {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const GrammarStack& operator[](size_t i) const { return slots_[i]; }
  void clear() { size_ = 0; }
  void push(const GrammarStack& s);
  // Sorts and deduplicates: equal sets become equal sequences.
  void canonicalize();
  // The canonical stacks as one byte string (a cache key).
  void append_key(std::string& key) const;
  bool operator==(const StackSet& o) const;

 private:
  std::vector<GrammarStack> slots_;
  size_t size_ = 0;
};

// The stacks a state reaches after byte b, canonical; empty when b is rejected.
void grammar_step(const Grammar& g, const StackSet& in, uint8_t b, StackSet& out);

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

  // False (state unchanged) when the grammar rejects the byte / any byte of the string.
  bool accept_byte(uint8_t b);
  bool accept_bytes(std::string_view bytes);
  // The bytes so far are a whole sentence of the grammar.
  bool is_complete() const;
  // Some continuation with more bytes is possible.
  bool can_continue() const;
  const StackSet& stacks() const { return stacks_; }
  const Grammar& grammar() const { return *grammar_; }
  const std::shared_ptr<const Grammar>& grammar_ptr() const { return grammar_; }

 private:
  std::shared_ptr<const Grammar> grammar_;
  StackSet stacks_;
  StackSet scratch_;
};

}  // namespace loom
