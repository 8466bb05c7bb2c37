// Speculator conformance: every speculator plugin through the host, as the engine calls it. The
// kind's contract: drafts stay within max_drafts and the vocabulary, the same input gives the same
// drafts, requests in one call do not affect each other, a strictly periodic context is continued
// with its period (the reference any proposer must meet: every lookup-based method sees the
// continuation), a context of all-distinct tokens proposes nothing, finish() is accepted for any
// request, and a bad config is refused naming every wrong key. Then each in-tree plugin against
// its own reference: ngram against a brute-force prompt lookup, suffix on exact frequency cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "loom/speculator.h"
#include "tests/conformance/conformance_support.hpp"

namespace loom {
namespace {

constexpr int32_t kVocab = 64;
constexpr int32_t kMaxK = 8;

struct Ask {
  uint64_t id;
  std::vector<int32_t> tokens;
  int32_t max_drafts;
};

class Speculator {
 public:
  explicit Speculator(std::unique_ptr<LoadedPlugin> p) : p_(std::move(p)) {}
  explicit operator bool() const { return p_ != nullptr; }

  std::vector<std::vector<int32_t>> propose(const std::vector<Ask>& asks) const {
    std::vector<loom_spec_request> reqs(asks.size());
    std::vector<int32_t> ids(asks.size() * kMaxK, -7);
    std::vector<float> probs(asks.size() * kMaxK * kVocab, 0.0f);
    for (size_t i = 0; i < asks.size(); ++i) {
      loom_spec_request& q = reqs[i];
      q.struct_size = sizeof(q);
      q.request_id = asks[i].id;
      q.token_ids = asks[i].tokens.data();
      q.num_tokens = static_cast<int32_t>(asks[i].tokens.size());
      q.num_prompt_tokens = 1;
      q.max_drafts = asks[i].max_drafts;
      q.draft_ids = ids.data() + i * kMaxK;
      q.draft_probs = probs.data() + i * kMaxK * kVocab;
    }
    p_->call("propose", &loom_speculator_vtable::propose, reqs.data(), static_cast<int32_t>(reqs.size()));
    std::vector<std::vector<int32_t>> out;
    for (size_t i = 0; i < asks.size(); ++i) {
      const loom_spec_request& q = reqs[i];
      EXPECT_GE(q.num_drafts, 0);
      EXPECT_LE(q.num_drafts, q.max_drafts) << "request " << q.request_id;
      out.emplace_back(q.draft_ids, q.draft_ids + std::clamp(q.num_drafts, 0, q.max_drafts));
      for (int32_t t : out.back()) EXPECT_TRUE(t >= 0 && t < kVocab) << "draft " << t << " outside the vocabulary";
      if (q.has_probs) {
        for (int32_t j = 0; j < q.num_drafts; ++j) {
          double sum = 0;
          for (int32_t v = 0; v < kVocab; ++v) sum += q.draft_probs[static_cast<size_t>(j) * kVocab + static_cast<size_t>(v)];
          EXPECT_NEAR(sum, 1.0, 1e-4) << "draft distribution " << j;
          EXPECT_GT(q.draft_probs[static_cast<size_t>(j) * kVocab + static_cast<size_t>(q.draft_ids[j])], 0.0f);
        }
      }
    }
    return out;
  }
  std::vector<int32_t> propose_one(uint64_t id, const std::vector<int32_t>& tokens, int32_t k) const {
    return propose({Ask{id, tokens, k}})[0];
  }
  void finish(uint64_t id, const std::vector<int32_t>& tokens, int32_t prompt) const {
    if (p_->vtable<loom_speculator_vtable>().finish == nullptr) return;
    p_->call("finish", &loom_speculator_vtable::finish, id, tokens.data(), static_cast<int32_t>(tokens.size()), prompt);
  }
  void observe(uint64_t id, int32_t drafted, int32_t accepted) const {
    if (p_->vtable<loom_speculator_vtable>().observe == nullptr) return;
    p_->call("observe", &loom_speculator_vtable::observe, id, drafted, accepted);
  }

 private:
  std::unique_ptr<LoadedPlugin> p_;
};

class SpeculatorConformance : public ::testing::TestWithParam<std::string> {
 protected:
  Speculator open(const std::string& name, const std::string& config = "{}") {
    loom_speculator_create_args a{};
    a.struct_size = sizeof(a);
    a.vocab_size = kVocab;
    a.max_model_len = 4096;
    a.num_speculative_tokens = kMaxK;
    return Speculator(conformance::create_or_skip(host_, LOOM_KIND_SPECULATOR, name, &a, &skip_, config));
  }
  Speculator open() { return open(GetParam(), "{}"); }
  Speculator open_with(const std::string& config) { return open(GetParam(), config); }

  ThreadPool threads_{1};
  PluginHost host_{threads_, {}};
  std::string skip_;
};

std::vector<int32_t> periodic(std::vector<int32_t> motif, int32_t reps) {
  std::vector<int32_t> out;
  for (int32_t r = 0; r < reps; ++r) out.insert(out.end(), motif.begin(), motif.end());
  return out;
}

TEST_P(SpeculatorConformance, PeriodicContextIsContinuedWithItsPeriod) {
  const Speculator s = open();
  if (!s) GTEST_SKIP() << skip_;
  const std::vector<int32_t> motif = {5, 9, 2, 40, 17};
  std::vector<int32_t> tokens = periodic(motif, 4);
  tokens.push_back(5);
  tokens.push_back(9);  // ... 5 9 | 2 40 17 5 9 2 ...
  const std::vector<int32_t> drafts = s.propose_one(1, tokens, 4);
  EXPECT_EQ(drafts, (std::vector<int32_t>{2, 40, 17, 5}));
}

TEST_P(SpeculatorConformance, AllDistinctTokensProposeNothing) {
  const Speculator s = open();
  if (!s) GTEST_SKIP() << skip_;
  std::vector<int32_t> tokens;
  for (int32_t i = 0; i < 30; ++i) tokens.push_back(i + 3);
  EXPECT_TRUE(s.propose_one(1, tokens, kMaxK).empty());
  EXPECT_TRUE(s.propose_one(2, {7}, kMaxK).empty()) << "one token has no history";
}

TEST_P(SpeculatorConformance, RequestsInOneCallAreIndependentAndDeterministic) {
  const Speculator a = open();
  if (!a) GTEST_SKIP() << skip_;
  std::mt19937 rng(3);
  std::vector<Ask> asks;
  for (uint64_t id = 1; id <= 12; ++id) {
    std::vector<int32_t> t;
    const int32_t alphabet = 2 + static_cast<int32_t>(id % 5);  // small alphabets: lots of repeats
    for (int32_t i = 0; i < 20 + static_cast<int32_t>(id * 7); ++i) t.push_back(3 + static_cast<int32_t>(rng() % alphabet));
    asks.push_back(Ask{id, t, 1 + static_cast<int32_t>(id % kMaxK)});
  }
  const auto together = a.propose(asks);
  const Speculator b = open();
  for (size_t i = 0; i < asks.size(); ++i) {
    EXPECT_EQ(b.propose_one(asks[i].id, asks[i].tokens, asks[i].max_drafts), together[i]) << "request " << asks[i].id;
  }
  int proposed = 0;
  for (const auto& d : together) proposed += d.empty() ? 0 : 1;
  EXPECT_GT(proposed, 0) << "repetitive contexts proposed nothing";
}

TEST_P(SpeculatorConformance, GrowingRequestAndFinishAreAccepted) {
  const Speculator s = open();
  if (!s) GTEST_SKIP() << skip_;
  std::vector<int32_t> tokens = periodic({3, 4, 5}, 3);
  for (int step = 0; step < 6; ++step) {
    const std::vector<int32_t> d = s.propose_one(9, tokens, 2);
    s.observe(9, static_cast<int32_t>(d.size()), d.empty() ? 0 : 1);
    tokens.push_back(tokens[tokens.size() - 3]);  // the period goes on
  }
  s.finish(9, tokens, 3);
  s.finish(12345, {1, 2}, 1);  // never proposed for: not an error
  const std::vector<int32_t> d = s.propose_one(10, periodic({8, 6}, 3), 3);
  const std::vector<int32_t> truth = {8, 6, 8};
  EXPECT_FALSE(d.empty());
  EXPECT_TRUE(std::equal(d.begin(), d.end(), truth.begin())) << "drafts continue the period";
}

TEST_P(SpeculatorConformance, BadConfigIsRefusedNamingTheKeys) {
  try {
    const Speculator s = open_with(R"({"colour": "blue", "flavour": 1})");
    if (!s && !skip_.empty()) GTEST_SKIP() << skip_;
    ADD_FAILURE() << "unknown keys were accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("colour"), std::string::npos) << m;
    EXPECT_NE(m.find("flavour"), std::string::npos) << "every problem at once: " << m;
  }
}

INSTANTIATE_TEST_SUITE_P(AllSpeculatorPlugins, SpeculatorConformance, ::testing::ValuesIn(conformance::plugin_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The ngram reference: for n = max_n .. min_n, the latest earlier occurrence of the last n tokens;
// the drafts are what followed it, at most k, copied on past the end as an overlapping copy (a
// token not yet in the context is the draft it stands for).
std::vector<int32_t> ngram_reference(const std::vector<int32_t>& t, int32_t min_n, int32_t max_n, int32_t k) {
  const auto len = static_cast<int32_t>(t.size());
  for (int32_t n = std::min(max_n, len - 1); n >= min_n; --n) {
    for (int32_t i = len - n - 1; i >= 0; --i) {
      bool same = true;
      for (int32_t j = 0; j < n && same; ++j) same = t[static_cast<size_t>(i + j)] == t[static_cast<size_t>(len - n + j)];
      if (!same) continue;
      std::vector<int32_t> ext = t;
      for (int32_t j = 0; j < k; ++j) ext.push_back(ext[static_cast<size_t>(i + n + j)]);
      return std::vector<int32_t>(ext.begin() + len, ext.end());
    }
  }
  return {};
}

class NgramReference : public SpeculatorConformance {};

TEST_F(NgramReference, MatchesBruteForcePromptLookup) {
  for (const auto& [min_n, max_n] : std::vector<std::pair<int32_t, int32_t>>{{1, 1}, {1, 4}, {2, 3}, {3, 5}}) {
    const Speculator s = open("ngram", R"({"min_n": )" + std::to_string(min_n) + R"(, "max_n": )" + std::to_string(max_n) + "}");
    ASSERT_TRUE(s) << skip_;
    std::mt19937 rng(static_cast<uint32_t>(min_n * 10 + max_n));
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<int32_t> t;
      const int32_t alphabet = 2 + trial % 6;
      const int32_t len = 1 + static_cast<int32_t>(rng() % 60);
      for (int32_t i = 0; i < len; ++i) t.push_back(3 + static_cast<int32_t>(rng() % alphabet));
      const int32_t k = 1 + trial % kMaxK;
      EXPECT_EQ(s.propose_one(static_cast<uint64_t>(trial), t, k), ngram_reference(t, min_n, max_n, k))
          << "trial " << trial << ", n " << min_n << ".." << max_n;
    }
  }
}

TEST_F(NgramReference, MinAboveMaxIsRefused) {
  EXPECT_THROW(open("ngram", R"({"min_n": 4, "max_n": 2})"), Error);
}

class SuffixReference : public SpeculatorConformance {};

// After "1 2" the request saw 7 twice and 8 once: the draft is 7 (probability 2/3), then what
// followed "1 2 7" both times.
TEST_F(SuffixReference, MostFrequentContinuationWithConfidenceThreshold) {
  const std::vector<int32_t> tokens = {1, 2, 7, 3, 1, 2, 8, 4, 1, 2, 7, 3, 9, 1, 2};
  const Speculator s = open("suffix", R"({"min_token_prob": 0.5, "max_cached_requests": 0})");
  ASSERT_TRUE(s) << skip_;
  EXPECT_EQ(s.propose_one(1, tokens, 3), (std::vector<int32_t>{7, 3}));  // then "9" and "1" split 1:1 -> 1/3 < 0.5
  const Speculator strict = open("suffix", R"({"min_token_prob": 0.7, "max_cached_requests": 0})");
  EXPECT_TRUE(strict.propose_one(1, tokens, 3).empty()) << "2/3 is below 0.7";
}

TEST_F(SuffixReference, FinishedOutputsAreSharedAcrossRequests) {
  const Speculator s = open("suffix", R"({"min_token_prob": 0.1, "max_cached_requests": 1})");
  ASSERT_TRUE(s) << skip_;
  EXPECT_TRUE(s.propose_one(1, {30, 31, 32}, 4).empty());
  s.finish(1, {30, 31, 32, 10, 11, 12, 13, 14}, 3);  // output 10 11 12 13 14
  EXPECT_EQ(s.propose_one(2, {40, 41, 10, 11}, 3), (std::vector<int32_t>{12, 13, 14}));
  s.finish(2, {40, 41, 10, 11, 50}, 4);  // evicts request 1's output (max_cached_requests = 1)
  EXPECT_TRUE(s.propose_one(3, {60, 11, 12}, 3).empty());
}

}  // namespace
}  // namespace loom
