// Grammar states interned as small ids, with their byte transitions memoised: the vocabulary walk
// for a mask steps the same few states over and over (inside a JSON string every character leads
// back to the same state), so after the first time a trie edge is one table lookup instead of a
// stack-set step. Bounded: the owner clears it between walks when it has grown past max_states.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/grammar/grammar_matcher.hpp"

namespace loom {

class StateTable {
 public:
  static constexpr int32_t kDead = -1;

  explicit StateTable(const Grammar& grammar, size_t max_states = 2048) : grammar_(grammar), max_states_(max_states) {}

  // The id of a canonical state (added when new).
  int32_t intern(const StackSet& state);
  // The state after byte b, or kDead.
  int32_t step(int32_t id, uint8_t b) {
    const int32_t known = next_[static_cast<size_t>(id)][b];
    return known != kUnknown ? known : compute(id, b);
  }
  bool full() const { return states_.size() >= max_states_; }
  void clear();

 private:
  static constexpr int32_t kUnknown = -2;
  int32_t compute(int32_t id, uint8_t b);

  const Grammar& grammar_;
  size_t max_states_;
  std::vector<StackSet> states_;
  std::vector<std::array<int32_t, 256>> next_;
  std::unordered_map<std::string, int32_t> index_;
  StackSet scratch_;
  std::string key_;
};

}  // namespace loom
