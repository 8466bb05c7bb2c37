// A request's grammar constraint as the engine sees it: mask the logits row before sampling,
// accept the token sampled, say whether the output is complete. The state advances only in
// accept(), which the engine calls once per token it emits, so recomputing a preempted
// request's KV (which samples nothing) never feeds it a token twice, and each forked choice
// starts its own state from the grammar.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/grammar/grammar_matcher.hpp"
#include "core/grammar/token_mask.hpp"

namespace loom {

class Tokenizer;

class ConstraintState {
 public:
  explicit ConstraintState(std::shared_ptr<MaskCache> cache);

  // `row` with every token the grammar forbids at -inf, in `out` (resized to the row). End-of-
  // generation tokens are allowed only where the grammar is complete. False when no token at
  // all is allowed (the vocabulary cannot continue the grammar).
  bool mask(std::span<const float> row, std::vector<float>& out);
  // The token the engine emitted. False (state unchanged) when the grammar does not allow it,
  // which only a row whose allowed logits are all -inf or NaN can make the sampler choose.
  bool accept(int32_t token);
  // Jump-forward: while the grammar leaves exactly one token possible (and the output is not
  // complete, so no end token competes), accepts it and appends it to `tokens`, at most `room`
  // of them. Such a token has probability 1 under the mask, so emitting it without sampling
  // changes no output's distribution; the engine computes its K/V with the next step's batch
  // (as a chunk, like a recompute), so it costs no model step of its own.
  void append_forced(std::vector<int32_t>& tokens, int32_t room);
  // The output so far is a whole sentence of the grammar.
  bool is_complete() const { return ended_ || matcher_.is_complete(); }
  // Complete, and the grammar allows nothing more (or an end token was accepted).
  bool is_finished() const { return ended_ || (matcher_.is_complete() && !matcher_.can_continue()); }

 private:
  std::shared_ptr<MaskCache> cache_;
  GrammarMatcher matcher_;
  bool ended_ = false;
};

// One per engine: the vocabulary's bytes (built on first use) and a mask cache per grammar text,
// so requests with the same schema share their masks. Engine thread only.
class ConstraintRegistry {
 public:
  explicit ConstraintRegistry(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  std::unique_ptr<ConstraintState> start(const std::shared_ptr<const Grammar>& grammar);

 private:
  static constexpr size_t kMaxGrammars = 16;  // each holds up to ~8 MB of masks and transitions
  const Tokenizer& tokenizer_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  std::unordered_map<std::string, std::shared_ptr<MaskCache>> caches_;
};

}  // namespace loom
