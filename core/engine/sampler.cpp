#include "core/engine/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/common/error.hpp"
#include "loom/sdk_top_k.hpp"

namespace loom {
namespace {

void check_settings(const SamplerSettings& s) {
  if (!(s.temperature >= 0.0f) || !std::isfinite(s.temperature))
    throw Error("sampler: temperature " + std::to_string(s.temperature) + " must be a finite number >= 0");
  if (s.top_k < 0) throw Error("sampler: top_k " + std::to_string(s.top_k) + " must be >= 0 (0 = off)");
  if (!(s.top_p > 0.0f && s.top_p <= 1.0f))
    throw Error("sampler: top_p " + std::to_string(s.top_p) + " must be in (0, 1]");
  if (!(s.min_p >= 0.0f && s.min_p <= 1.0f))
    throw Error("sampler: min_p " + std::to_string(s.min_p) + " must be in [0, 1]");
}

// Uniform in [0, 1) from the top 53 bits: the same on every standard library.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

int32_t Sampler::argmax(std::span<const float> logits) {
  int32_t best = -1;
  for (int32_t i = 0; i < static_cast<int32_t>(logits.size()); ++i) {
    const float v = logits[static_cast<size_t>(i)];
    if (std::isnan(v)) continue;
    if (best < 0 || v > logits[static_cast<size_t>(best)]) best = i;
  }
  return best < 0 ? 0 : best;
}

size_t Sampler::filter(std::span<const float> logits, const SamplerSettings& settings) {
  // exp((l - max) / T) in double, unnormalised: every step after it (top-k, top-p on the mass
  // kept, min-p against the best, the draw scaled by the mass kept) is the same for any scale, so
  // sample_top() computes these very numbers from the k best logits alone. NaN logits get 0.
  const int32_t n = static_cast<int32_t>(logits.size());
  const double max_logit = logits[static_cast<size_t>(argmax(logits))];
  cand_.resize(logits.size());
  double total = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    const double l = logits[static_cast<size_t>(i)];
    // l == max_logit first, so an infinite maximum gives 1 rather than exp(inf - inf).
    const double p = std::isnan(l) ? 0.0 : l == max_logit ? 1.0 : std::exp((l - max_logit) / settings.temperature);
    cand_[static_cast<size_t>(i)] = Candidate{p, i};
    total += p;
  }
  if (!(total > 0.0) || !std::isfinite(total)) throw Error("sampler: the logits row has no finite values");

  // Ranked by logit (then lower id, NaN last), the head's selection order (loom/sdk_top_k.hpp): the
  // same order as by probability, except where exp rounds two close logits to one probability.
  auto by_rank = [&logits](const Candidate& a, const Candidate& b) {
    return sdk::ranks_before(logits[static_cast<size_t>(a.id)], a.id, logits[static_cast<size_t>(b.id)], b.id);
  };
  size_t kept = cand_.size();
  const bool filtering = settings.top_k > 0 || settings.top_p < 1.0f || settings.min_p > 0.0f;
  if (filtering) {
    if (settings.top_k > 0 && static_cast<size_t>(settings.top_k) < kept) {
      std::partial_sort(cand_.begin(), cand_.begin() + settings.top_k, cand_.end(), by_rank);
      kept = static_cast<size_t>(settings.top_k);
    } else {
      std::sort(cand_.begin(), cand_.end(), by_rank);
    }
    kept = truncate(kept, settings);
  }
  return kept;
}

size_t Sampler::truncate(size_t kept, const SamplerSettings& settings) {
  if (settings.top_p < 1.0f) {
    double mass = 0.0;
    for (size_t i = 0; i < kept; ++i) mass += cand_[i].p;
    double cum = 0.0;
    for (size_t i = 0; i < kept; ++i) {
      cum += cand_[i].p;
      if (cum >= settings.top_p * mass) {
        kept = i + 1;
        break;
      }
    }
  }
  if (settings.min_p > 0.0f) {
    const double threshold = settings.min_p * cand_[0].p;
    size_t i = 1;
    while (i < kept && cand_[i].p >= threshold) ++i;
    kept = i;
  }
  return kept;
}

int32_t Sampler::sample(std::span<const float> logits, const SamplerSettings& settings, std::mt19937_64& rng) {
  if (logits.empty()) throw Error("sampler: empty logits row");
  check_settings(settings);
  if (settings.temperature == 0.0f) return argmax(logits);
  return draw(filter(logits, settings), rng);
}

int32_t Sampler::sample_top(std::span<const int32_t> ids, std::span<const float> values, const SamplerSettings& settings,
                            std::mt19937_64& rng) {
  if (ids.empty() || ids.size() != values.size()) throw Error("sampler: the best logits and their ids differ in count");
  check_settings(settings);
  if (settings.temperature == 0.0f) return ids[0];
  if (settings.top_k <= 0 || ids.size() < static_cast<size_t>(settings.top_k))
    throw Error("sampler: sampling from the best logits needs top_k (" + std::to_string(settings.top_k) +
                ") of them, got " + std::to_string(ids.size()));
  // filter()'s numbers for its top_k candidates, in its rank order already.
  const auto k = static_cast<size_t>(settings.top_k);
  const double max_logit = values[0];
  cand_.resize(k);
  for (size_t i = 0; i < k; ++i) {
    const double l = values[i];
    const double p = std::isnan(l) ? 0.0 : l == max_logit ? 1.0 : std::exp((l - max_logit) / settings.temperature);
    cand_[i] = Candidate{p, ids[i]};
  }
  return draw(truncate(k, settings), rng);
}

int32_t Sampler::draw(size_t kept, std::mt19937_64& rng) {
  double mass = 0.0;
  for (size_t i = 0; i < kept; ++i) mass += cand_[i].p;
  const double r = uniform01(rng) * mass;
  double cum = 0.0;
  for (size_t i = 0; i < kept; ++i) {
    cum += cand_[i].p;
    if (r < cum) return cand_[i].id;
  }
  // Rounding left r at the very top: the last candidate with any mass.
  for (size_t i = kept; i-- > 0;)
    if (cand_[i].p > 0.0) return cand_[i].id;
  return cand_[0].id;
}

void Sampler::distribution(std::span<const float> logits, const SamplerSettings& settings, std::vector<double>& probs) {
  if (logits.empty()) throw Error("sampler: empty logits row");
  check_settings(settings);
  probs.assign(logits.size(), 0.0);
  if (settings.temperature == 0.0f) {
    probs[static_cast<size_t>(argmax(logits))] = 1.0;
    return;
  }
  const size_t kept = filter(logits, settings);
  double mass = 0.0;
  for (size_t i = 0; i < kept; ++i) mass += cand_[i].p;
  for (size_t i = 0; i < kept; ++i) probs[static_cast<size_t>(cand_[i].id)] = cand_[i].p / mass;
}

double Sampler::uniform(std::mt19937_64& rng) { return uniform01(rng); }

void Sampler::logprobs(std::span<const float> logits, int32_t token, int32_t top_n, RowLogprobs& out) {
  const int32_t n = static_cast<int32_t>(logits.size());
  if (n == 0) throw Error("sampler: empty logits row");
  if (token < 0 || token >= n)
    throw Error("sampler: token " + std::to_string(token) + " is outside the logits row [0, " +
                std::to_string(n) + ")");
  const float max_logit = logits[static_cast<size_t>(argmax(logits))];
  if (std::isnan(max_logit) || !std::isfinite(max_logit))
    throw Error("sampler: the logits row has no finite maximum");
  double sum = 0.0;
  for (float l : logits) {
    if (!std::isnan(l)) sum += std::exp(static_cast<double>(l) - max_logit);
  }
  const double log_z = max_logit + std::log(sum);
  auto logprob_of = [&](int32_t id) {
    const float l = logits[static_cast<size_t>(id)];
    return std::isnan(l) ? -std::numeric_limits<float>::infinity()
                         : static_cast<float>(static_cast<double>(l) - log_z);
  };
  out.sampled = TokenLogprob{token, logprob_of(token)};
  out.top.clear();
  const size_t k = static_cast<size_t>(std::clamp(top_n, 0, n));
  if (k == 0) return;
  // A min-heap of the k best so far, by (logit, then lower id better): the root is the worst.
  auto better = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    const bool na = std::isnan(la), nb = std::isnan(lb);
    if (na != nb) return nb;
    return (!na && la != lb) ? la > lb : a < b;
  };
  std::vector<int32_t> heap;
  heap.reserve(k);
  for (int32_t id = 0; id < n; ++id) {
    if (heap.size() < k) {
      heap.push_back(id);
      std::push_heap(heap.begin(), heap.end(), better);
    } else if (better(id, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = id;
      std::push_heap(heap.begin(), heap.end(), better);
    }
  }
  std::sort_heap(heap.begin(), heap.end(), better);
  for (int32_t id : heap) out.top.push_back(TokenLogprob{id, logprob_of(id)});
}

int32_t sample_token(std::span<const float> logits, const SamplerSettings& settings, std::mt19937_64& rng) {
  thread_local Sampler sampler;
  return sampler.sample(logits, settings, rng);
}

}  // namespace loom
