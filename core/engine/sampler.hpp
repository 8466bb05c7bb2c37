// Turning one row of logits into one token: greedy, or temperature + top-k + top-p + min-p.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace loom {

struct SamplerSettings {
  float temperature = 0.0f;  // 0 = greedy (argmax, lowest id on ties)
  int32_t top_k = 0;         // keep the k most likely tokens; 0 = off
  float top_p = 1.0f;        // keep the smallest most-likely set whose mass reaches top_p; 1 = off
  float min_p = 0.0f;        // keep tokens with p >= min_p * p_max; 0 = off
};

// One token's log-probability under the model's distribution.
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

// Log-probabilities of one row: log_softmax of the raw logits (before temperature and the
// filters, as vLLM reports them by default).
struct RowLogprobs {
  TokenLogprob sampled;           // the token that was chosen
  std::vector<TokenLogprob> top;  // the top_n most likely, best first (lower id on ties)
  int32_t sampled_rank = 0;       // prompt logprobs: 1 + tokens with a higher logit; 0 = not computed
};

// Samples with reusable scratch (one per engine thread): no allocation once warmed up.
// Order: softmax(logits / T) -> top-k -> top-p (on the mass left after top-k) -> min-p ->
// renormalise -> draw u in [0, 1) from the top 53 bits of one rng() output. Deterministic for a
// given seed on every platform. Candidates are ranked by logit (the order of probability), then
// by lower id.
// Throws loom::Error naming a setting outside its range (temperature < 0, top_p not in (0, 1],
// min_p not in [0, 1], top_k < 0) or an empty logits row.
class Sampler {
 public:
  int32_t sample(std::span<const float> logits, const SamplerSettings& settings, std::mt19937_64& rng);
  // sample() from a row's best logits alone, best first as loom::sdk::select_top_k orders them
  // (the head's selection, model_executor.hpp): the same token for the same rng, for greedy
  // (ids[0]) and for top_k sampling given at least top_k of them. Throws otherwise.
  int32_t sample_top(std::span<const int32_t> ids, std::span<const float> values, const SamplerSettings& settings,
                     std::mt19937_64& rng);

  // log_softmax of `logits` at `token` and the top_n most likely tokens (top_n >= 0, at most the
  // vocabulary): one pass for the maximum, one for the sum of exponentials, and a bounded heap
  // of top_n entries. NaN logits count as impossible (-inf). Throws on an empty or all-NaN row
  // or a token outside it.
  static void logprobs(std::span<const float> logits, int32_t token, int32_t top_n, RowLogprobs& out);

  // The index of the largest logit, lowest on ties; NaNs are never chosen unless all are NaN.
  static int32_t argmax(std::span<const float> logits);

  // The distribution sample() draws from, dense over the row: [vocab] probabilities summing to 1
  // (one-hot at the argmax for temperature 0). Speculative verification needs it whole.
  void distribution(std::span<const float> logits, const SamplerSettings& settings, std::vector<double>& probs);
  // The uniform draw sample() uses: [0, 1) from the top 53 bits of one rng() output.
  static double uniform(std::mt19937_64& rng);

 private:
  // softmax(logits / T) -> top-k -> top-p -> min-p into cand_; returns how many lead cand_ (all of
  // them, unsorted, when nothing filters). Settings checked, temperature > 0.
  size_t filter(std::span<const float> logits, const SamplerSettings& settings);
  // top-p, then min-p, on the first `kept` of cand_ (ranked); returns how many stay.
  size_t truncate(size_t kept, const SamplerSettings& settings);
  // The draw among the first `kept` of cand_, in proportion to their (unnormalised) p.
  int32_t draw(size_t kept, std::mt19937_64& rng);
  struct Candidate {
    double p;
    int32_t id;
  };
  std::vector<Candidate> cand_;  // [vocab] scratch
};

// Convenience over a thread-local Sampler.
int32_t sample_token(std::span<const float> logits, const SamplerSettings& settings, std::mt19937_64& rng);

}  // namespace loom
