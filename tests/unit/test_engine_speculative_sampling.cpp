// Speculative sampling keeps the target's distribution: on the demo model (vocab 512) at a fixed
// context, 20,000 tokens drawn through verify_draft with deliberately wrong draft distributions
// pass a chi-square goodness-of-fit test against the target's softmax (p > 0.01), and two broken
// verifiers (test mutations: always accept; resample from the target on rejection) fail it, so the
// test can tell. Same seed -> same tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/engine/sampler.hpp"
#include "core/engine/speculative_sampling.hpp"
#include "test_executor_support.hpp"

namespace loom {
namespace {

constexpr int kSamples = 20000;

// Regularised upper incomplete gamma Q(a, x): series below a + 1, continued fraction above.
double gamma_q(double a, double x) {
  if (x <= 0) return 1.0;
  const double log_front = -x + a * std::log(x) - std::lgamma(a);
  if (x < a + 1) {
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 10000 && std::abs(term) > 1e-15 * std::abs(sum); ++n) {
      term *= x / (a + n);
      sum += term;
    }
    return 1.0 - sum * std::exp(log_front);
  }
  // Lentz's method on the continued fraction of Q.
  double b = x + 1 - a, c = 1e300, d = 1 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::abs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (std::abs(c) < 1e-300) c = 1e-300;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < 1e-15) break;
  }
  return std::exp(log_front) * h;
}

// p-value of Pearson's chi-square of `counts` against `probs`; tokens expected fewer than 5
// times are pooled into one bin.
double chi_square_p(const std::vector<int>& counts, const std::vector<double>& probs, int n) {
  double stat = 0, pooled_expected = 0, pooled_observed = 0;
  int bins = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    const double e = probs[i] * n;
    if (e < 5) {
      pooled_expected += e;
      pooled_observed += counts[i];
      continue;
    }
    stat += (counts[i] - e) * (counts[i] - e) / e;
    ++bins;
  }
  if (pooled_expected > 0) {
    stat += (pooled_observed - pooled_expected) * (pooled_observed - pooled_expected) / pooled_expected;
    ++bins;
  }
  return gamma_q((bins - 1) / 2.0, stat / 2.0);
}

// The demo model's next-token logits after a fixed story opening.
std::vector<float> context_logits() {
  const GgufFile file = GgufFile::open(test::data_path("stories260K.gguf"));
  test::ModelRunner runner(file);
  const std::vector<int32_t> prompt{1, 403, 407, 261, 378, 267, 302, 363};
  const std::vector<int32_t> table = test::ModelRunner::blocks(0, 4);
  SeqSchedule s{prompt, 0, table, true};
  return runner.step(std::span<const SeqSchedule>(&s, 1));
}

struct Fixture {
  std::vector<float> logits;
  std::vector<double> target;  // softmax at temperature 0.8
  SamplerSettings settings;
};

const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture x;
    x.logits = context_logits();
    x.settings.temperature = 0.8f;
    Sampler sampler;
    sampler.distribution(x.logits, x.settings, x.target);
    return x;
  }();
  return f;
}

// Wrong on purpose: the target at a much higher temperature mixed with uniform noise, so the
// draft over-proposes unlikely tokens and under-proposes the likely ones.
std::vector<float> wrong_draft(const std::vector<float>& logits) {
  std::vector<double> hot;
  Sampler sampler;
  SamplerSettings s;
  s.temperature = 3.0f;
  sampler.distribution(logits, s, hot);
  std::vector<float> q(hot.size());
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(0.5 * hot[i] + 0.5 / static_cast<double>(q.size()));
  return q;
}

int32_t draw(std::span<const float> q, std::mt19937_64& rng) {
  double total = 0;
  for (float v : q) total += v;
  const double r = Sampler::uniform(rng) * total;
  double cum = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    cum += q[i];
    if (r < cum) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(q.size() - 1);
}

enum class Verifier { kCorrect, kAlwaysAccept, kTargetOnReject };

std::vector<int> sample_counts(Verifier verifier, bool deterministic_draft, uint64_t seed) {
  const Fixture& f = fixture();
  const std::vector<float> q = wrong_draft(f.logits);
  std::mt19937_64 rng(seed);
  std::vector<int> counts(f.target.size(), 0);
  Sampler sampler;
  for (int i = 0; i < kSamples; ++i) {
    const int32_t d = draw(q, rng);
    std::span<const float> qs = deterministic_draft ? std::span<const float>() : std::span<const float>(q);
    int32_t token = 0;
    switch (verifier) {
      case Verifier::kCorrect:
        token = verify_draft(f.target, qs, d, rng).token;
        break;
      case Verifier::kAlwaysAccept:
        token = d;
        break;
      case Verifier::kTargetOnReject: {
        const DraftVerdict v = verify_draft(f.target, qs, d, rng);
        token = v.accepted ? d : sampler.sample(f.logits, f.settings, rng);
        break;
      }
    }
    ++counts[static_cast<size_t>(token)];
  }
  return counts;
}

TEST(SpeculativeSampling, WrongDraftDistributionStillGivesTheTargets) {
  const std::vector<int> counts = sample_counts(Verifier::kCorrect, /*deterministic_draft=*/false, 1);
  const double p = chi_square_p(counts, fixture().target, kSamples);
  EXPECT_GT(p, 0.01) << "chi-square p-value";
}

// A deterministic proposer's draft (n-gram, suffix) is verified as q = one-hot at the draft.
TEST(SpeculativeSampling, DeterministicDraftsStillGiveTheTargets) {
  const std::vector<int> counts = sample_counts(Verifier::kCorrect, /*deterministic_draft=*/true, 2);
  EXPECT_GT(chi_square_p(counts, fixture().target, kSamples), 0.01);
}

TEST(SpeculativeSampling, BrokenVerifiersFailTheTest) {
  EXPECT_LT(chi_square_p(sample_counts(Verifier::kAlwaysAccept, false, 1), fixture().target, kSamples), 0.01);
  EXPECT_LT(chi_square_p(sample_counts(Verifier::kTargetOnReject, false, 1), fixture().target, kSamples), 0.01);
}

TEST(SpeculativeSampling, SameSeedSameTokens) {
  EXPECT_EQ(sample_counts(Verifier::kCorrect, false, 9), sample_counts(Verifier::kCorrect, false, 9));
  EXPECT_NE(sample_counts(Verifier::kCorrect, false, 9), sample_counts(Verifier::kCorrect, false, 10));
}

TEST(SpeculativeSampling, ChiSquareReferenceValues) {
  // Q(k/2, x/2) at known points: chi-square with 1 dof at 3.841 is p = 0.05; with 10 dof at
  // 23.209, p = 0.01.
  EXPECT_NEAR(gamma_q(0.5, 3.841459 / 2), 0.05, 1e-5);
  EXPECT_NEAR(gamma_q(5.0, 23.209251 / 2), 0.01, 1e-5);
}

TEST(SpeculativeSampling, DistributionMatchesWhatSampleDraws) {
  // Sampler::distribution is the law of Sampler::sample (top-k and top-p included).
  const Fixture& f = fixture();
  SamplerSettings s;
  s.temperature = 1.0f;
  s.top_k = 40;
  s.top_p = 0.9f;
  Sampler sampler;
  std::vector<double> probs;
  sampler.distribution(f.logits, s, probs);
  std::mt19937_64 rng(3);
  std::vector<int> counts(probs.size(), 0);
  for (int i = 0; i < kSamples; ++i) ++counts[static_cast<size_t>(sampler.sample(f.logits, s, rng))];
  for (size_t i = 0; i < probs.size(); ++i)
    if (probs[i] == 0.0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " is outside the filtered set";
    }
  EXPECT_GT(chi_square_p(counts, probs, kSamples), 0.01);
}

}  // namespace
}  // namespace loom
