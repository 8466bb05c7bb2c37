#include "core/grammar/token_mask.hpp"

namespace loom {

namespace {

TokenMask walk_vocabulary(StateTable& table, int32_t start, const TokenVocabulary& vocab) {
  TokenMask mask;
  mask.bits.assign((static_cast<size_t>(vocab.size()) + 63) / 64, 0);
  // levels[k]: the state after the first k bytes of the current token; valid up to `valid`.
  thread_local std::vector<int32_t> levels;
  levels.resize(vocab.max_length + 1);
  levels[0] = start;
  size_t valid = 0;
  const size_t n = vocab.order.size();
  for (size_t i = 0; i < n;) {
    const int32_t id = vocab.order[i];
    const std::string& bytes = vocab.bytes[static_cast<size_t>(id)];
    size_t k = std::min<size_t>(vocab.common_prefix[i], valid);
    bool alive = true;
    for (; k < bytes.size(); ++k) {
      levels[k + 1] = table.step(levels[k], static_cast<uint8_t>(bytes[k]));
      if (levels[k + 1] == StateTable::kDead) {
        alive = false;
        break;
      }
    }
    if (alive) {
      valid = bytes.size();
      mask.bits[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
      ++mask.allowed;
      if (mask.first < 0 || id < mask.first) mask.first = id;
      ++i;
      continue;
    }
    // Dead after k + 1 bytes: so is every following token that shares them.
    valid = k;
    ++i;
    while (i < n && vocab.common_prefix[i] > k) ++i;
  }
  return mask;
}

}  // namespace

TokenMask compute_token_mask(const Grammar& g, const StackSet& state, const TokenVocabulary& vocab) {
  StateTable table(g);
  return walk_vocabulary(table, table.intern(state), vocab);
}

MaskCache::MaskCache(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocab,
                     size_t max_entries)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)), max_entries_(max_entries), table_(*grammar_) {}

const TokenMask& MaskCache::mask(const StackSet& state) {
  key_.clear();
  state.append_key(key_);
  if (auto it = masks_.find(key_); it != masks_.end()) {
    ++hits_;
    return *it->second;
  }
  ++misses_;
  if (masks_.size() >= max_entries_) masks_.clear();
  auto& slot = masks_[key_];
  if (table_.full()) table_.clear();
  slot = std::make_unique<TokenMask>(walk_vocabulary(table_, table_.intern(state), *vocab_));
  return *slot;
}

}  // namespace loom
