// The proposal cost model's fit (core/engine/proposal_cost_model.hpp): exact on data from a known
// cost once the batch varies, both coefficients equal (and the seen shapes exact) while every
// steady proposal has one shape, never negative, the catch-up cost from what the drafting leaves
// over, over a sliding window, and 0 before the first sample.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/engine/proposal_cost_model.hpp"

namespace loom {
namespace {

ProposalSample steady(int32_t max_drafts, int64_t sum_drafts, int64_t wall_us) {
  return ProposalSample{max_drafts, sum_drafts, sum_drafts, true, wall_us};
}

ProposalSample catching_up(int32_t max_drafts, int64_t sum_drafts, int64_t catch_up, int64_t wall_us) {
  return ProposalSample{max_drafts, sum_drafts, catch_up, false, wall_us};
}

TEST(ProposalCostModel, NothingBeforeTheFirstSample) {
  const ProposalCostModel m;
  EXPECT_EQ(m.predict_us(4, 16), 0.0);
  EXPECT_EQ(m.catch_up_us(300), 0.0);
  EXPECT_EQ(m.coefficients().samples, 0);
}

TEST(ProposalCostModel, RecoversADraftModelsCostOnceTheBatchVaries) {
  // A draft model: 4 ms per draft step, 0.8 ms per request and step.
  ProposalCostModel m;
  for (auto [kmax, ksum] : {std::pair{4, int64_t{4}}, {4, int64_t{16}}, {3, int64_t{5}}, {1, int64_t{8}}})
    m.observe(steady(kmax, ksum, 4000 * kmax + 800 * ksum));
  EXPECT_NEAR(m.coefficients().per_step_us, 4000, 1e-6);
  EXPECT_NEAR(m.coefficients().per_request_draft_us, 800, 1e-6);
  EXPECT_EQ(m.coefficients().samples, 4);
  EXPECT_NEAR(m.predict_us(4, 64), 4000 * 4 + 800 * 64, 1e-6);
  EXPECT_EQ(m.predict_us(0, 0), 0.0);  // nothing asked costs nothing
}

TEST(ProposalCostModel, OneShapeIsExactThereAndPricesMoreRequestsHigher) {
  // One request at a time, k = 4, 20 ms a proposal: a = b = 2.5 ms.
  ProposalCostModel m;
  for (int i = 0; i < 5; ++i) m.observe(steady(4, 4, 20000));
  EXPECT_DOUBLE_EQ(m.coefficients().per_step_us, 2500);
  EXPECT_DOUBLE_EQ(m.coefficients().per_request_draft_us, 2500);
  EXPECT_DOUBLE_EQ(m.predict_us(4, 4), 20000);
  // Four requests at k = 4 are priced at 50 ms: above the true cost of a draft model whose steps
  // are mostly fixed cost, so adaptation turns speculation off early rather than late.
  EXPECT_DOUBLE_EQ(m.predict_us(4, 16), 50000);
}

TEST(ProposalCostModel, NeverNegative) {
  // Cost falling with the drafts asked (noise): b would be negative, so a is fitted alone.
  ProposalCostModel m;
  m.observe(steady(4, 4, 9000));
  m.observe(steady(4, 16, 8000));
  m.observe(steady(2, 8, 4000));
  EXPECT_EQ(m.coefficients().per_request_draft_us, 0.0);
  // s1y / s11 over the three samples: (4*9000 + 4*8000 + 2*4000) / (16 + 16 + 4).
  EXPECT_DOUBLE_EQ(m.coefficients().per_step_us, 76000.0 / 36.0);
  // A catch-up sample cheaper than the drafting alone: c stays 0.
  m.observe(catching_up(4, 4, 100, 1000));
  EXPECT_EQ(m.coefficients().per_catch_up_token_us, 0.0);
}

TEST(ProposalCostModel, CatchUpIsWhatTheDraftingLeavesOver) {
  ProposalCostModel m;
  for (int i = 0; i < 3; ++i) m.observe(steady(4, 4, 20000));
  // First proposals: 20 ms of drafting plus 0.7 ms for each of the prompt's tokens.
  m.observe(catching_up(4, 4, 300, 20000 + 210000));
  m.observe(catching_up(4, 4, 100, 20000 + 70000));
  EXPECT_DOUBLE_EQ(m.coefficients().per_catch_up_token_us, 700);
  EXPECT_DOUBLE_EQ(m.catch_up_us(50), 35000);
  // The catch-up samples leave the drafting coefficients alone.
  EXPECT_DOUBLE_EQ(m.predict_us(4, 4), 20000);
  EXPECT_EQ(m.coefficients().samples, 5);
  EXPECT_EQ(m.coefficients().steady_samples, 3);
}

TEST(ProposalCostModel, IgnoresEmptyProposalsAndForgetsOldOnes) {
  ProposalCostModel m(2);
  m.observe(steady(0, 0, 500));  // nothing asked: not a sample
  EXPECT_EQ(m.coefficients().samples, 0);
  m.observe(steady(4, 4, 80000));  // a slow start, then two faster proposals fill the window
  m.observe(steady(4, 4, 20000));
  m.observe(steady(4, 4, 20000));
  EXPECT_DOUBLE_EQ(m.predict_us(4, 4), 20000);
  EXPECT_EQ(m.coefficients().samples, 3);
}

}  // namespace
}  // namespace loom
