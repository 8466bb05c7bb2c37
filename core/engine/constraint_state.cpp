#include "core/engine/constraint_state.hpp"

#include <algorithm>
#include <limits>

#include "core/common/error.hpp"
#include "core/tokenizer/tokenizer.hpp"

namespace loom {

ConstraintState::ConstraintState(std::shared_ptr<MaskCache> cache)
    : cache_(std::move(cache)), matcher_(cache_->grammar_ptr()) {}

bool ConstraintState::mask(std::span<const float> row, std::vector<float>& out) {
  constexpr float kNever = -std::numeric_limits<float>::infinity();
  const TokenVocabulary& vocab = cache_->vocab();
  LOOM_CHECK(static_cast<int32_t>(row.size()) == vocab.size(), "grammar: logits row and vocabulary differ in size");
  out.assign(row.size(), kNever);
  int32_t allowed = 0;
  if (!ended_) {
    const TokenMask& m = cache_->mask(matcher_.stacks());
    for (size_t w = 0; w < m.bits.size(); ++w) {
      for (uint64_t bits = m.bits[w]; bits != 0; bits &= bits - 1) {
        const size_t id = w * 64 + static_cast<size_t>(__builtin_ctzll(bits));
        out[id] = row[id];
      }
    }
    allowed = m.allowed;
  }
  if (is_complete()) {
    for (int32_t id : vocab.eog_ids) out[static_cast<size_t>(id)] = row[static_cast<size_t>(id)];
    allowed += static_cast<int32_t>(vocab.eog_ids.size());
  }
  return allowed > 0;
}

bool ConstraintState::accept(int32_t token) {
  const TokenVocabulary& vocab = cache_->vocab();
  const std::string& bytes = vocab.bytes[static_cast<size_t>(token)];
  if (bytes.empty()) {
    // An end-of-generation token where the output is complete; any other empty one is a control
    // token no mask allows.
    const bool end = is_complete() && std::find(vocab.eog_ids.begin(), vocab.eog_ids.end(), token) != vocab.eog_ids.end();
    ended_ = ended_ || end;
    return end;
  }
  return !ended_ && matcher_.accept_bytes(bytes);
}

void ConstraintState::append_forced(std::vector<int32_t>& tokens, int32_t room) {
  for (; room > 0 && !ended_ && !matcher_.is_complete(); --room) {
    const TokenMask& m = cache_->mask(matcher_.stacks());
    if (m.allowed != 1) return;
    if (!accept(m.first)) return;
    tokens.push_back(m.first);
  }
}

std::unique_ptr<ConstraintState> ConstraintRegistry::start(const std::shared_ptr<const Grammar>& grammar) {
  if (!vocab_) vocab_ = std::make_shared<const TokenVocabulary>(vocabulary_of(tokenizer_));
  auto& cache = caches_[grammar->source];
  if (!cache) {
    if (caches_.size() > kMaxGrammars) {
      caches_.clear();  // rare: many distinct grammars; their masks are rebuilt on demand
      return start(grammar);
    }
    cache = std::make_shared<MaskCache>(grammar, vocab_);
  }
  return std::make_unique<ConstraintState>(cache);
}

}  // namespace loom
