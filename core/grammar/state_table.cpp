#include "core/grammar/state_table.hpp"

namespace loom {

int32_t StateTable::intern(const StackSet& state) {
  key_.clear();
  state.append_key(key_);
  auto [it, added] = index_.emplace(key_, static_cast<int32_t>(states_.size()));
  if (added) {
    states_.push_back(state);
    next_.emplace_back();
    next_.back().fill(kUnknown);
  }
  return it->second;
}

int32_t StateTable::compute(int32_t id, uint8_t b) {
  grammar_step(grammar_, states_[static_cast<size_t>(id)], b, scratch_);
  const int32_t to = scratch_.empty() ? kDead : intern(scratch_);
  next_[static_cast<size_t>(id)][b] = to;
  return to;
}

void StateTable::clear() {
  states_.clear();
  next_.clear();
  index_.clear();
}

}  // namespace loom
