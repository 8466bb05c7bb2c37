// The per-request transforms of one logits row that come before sampling and before the sampled
// token's logprobs: min_tokens masking, logit_bias, then the repetition, frequency and presence
// penalties, in that order, as vLLM's sampler applies them (bans and biases on the model's own
// logits first, penalties last so a penalty scales a biased logit the way the user sees it).
//
// Definitions (vLLM / OpenAI / llama.cpp), for a token t with logit l:
//   min_tokens:          while fewer than min_tokens tokens are generated, l = -inf for every
//                        end-of-generation token and every stop_token_ids entry.
//   logit_bias:          l += bias[t]                       (bias in [-100, 100])
//   repetition_penalty:  if t occurs in prompt or output: l = l > 0 ? l / r : l * r   (r > 0)
//   frequency_penalty:   l -= f * count(t in output)        (f in [-2, 2])
//   presence_penalty:    l -= p * (count(t in output) > 0)  (p in [-2, 2])
// A request that sets none of them never has its row copied or touched (LogitsProcessing::active).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace loom {

struct LogitsProcessing {
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  float repetition_penalty = 1.0f;                 // 1 = off
  std::vector<std::pair<int32_t, float>> logit_bias;  // (token id, bias), ids in the vocabulary
  int32_t min_tokens = 0;                          // EOS and stop_token_ids banned until reached
  std::vector<int32_t> stop_token_ids;             // also banned below min_tokens

  bool active() const {
    return presence_penalty != 0.0f || frequency_penalty != 0.0f || repetition_penalty != 1.0f ||
           !logit_bias.empty() || min_tokens > 0;
  }
};

// Applies `p` to `row` ([vocab] logits) for a sequence whose prompt is `prompt` and whose output
// so far is `output`. `eog_ids` are the vocabulary's end-of-generation tokens. `counts` is
// scratch of at least row.size() zeros; it is left all zeros again. Token ids outside the row
// are ignored.
void apply_logits_processors(std::span<float> row, const LogitsProcessing& p, std::span<const int32_t> prompt,
                             std::span<const int32_t> output, std::span<const int32_t> eog_ids,
                             std::vector<int32_t>& counts);

}  // namespace loom
