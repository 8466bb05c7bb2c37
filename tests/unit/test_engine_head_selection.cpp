// Which sampled rows take the head's selection (head_selection.hpp): greedy rows need their best
// entry, top-k rows their top_k, and any other reader of a row (logprobs, penalties, bias,
// choices still to fork, sampled draft verification) keeps it whole.
#include <gtest/gtest.h>

#include "core/engine/head_selection.hpp"
#include "core/engine/request_state.hpp"
#include "tests/unit/fake_engine.hpp"

namespace loom {
namespace {

class HeadTopKOf : public ::testing::Test {
 protected:
  RequestState request(float temperature, int32_t top_k) {
    GenerateRequest r;
    r.prompt = {256, 65, 66};
    r.sampling.temperature = temperature;
    r.sampling.top_k = top_k;
    return RequestState(1, std::move(r), tokenizer_, 0, 7, 1, 0);
  }
  test::ByteTokenizer tokenizer_;
};

TEST_F(HeadTopKOf, GreedyTakesOneAndTopKItsK) {
  EXPECT_EQ(head_top_k_of(request(0.0f, 0), 64), 1);
  EXPECT_EQ(head_top_k_of(request(0.0f, 50), 64), 1);
  EXPECT_EQ(head_top_k_of(request(0.8f, 40), 64), 40);
  EXPECT_EQ(head_top_k_of(request(0.8f, 64), 64), 64);
}

TEST_F(HeadTopKOf, WholeRowsOtherwise) {
  EXPECT_EQ(head_top_k_of(request(0.8f, 65), 64), 0);  // beyond the limit
  EXPECT_EQ(head_top_k_of(request(1.0f, 0), 64), 0);   // sampling from the whole distribution
  EXPECT_EQ(head_top_k_of(request(0.0f, 0), 0), 0);    // head_top_k = 0: off
  RequestState logprobs = request(0.0f, 0);
  logprobs.sampling.logprobs = 0;
  EXPECT_EQ(head_top_k_of(logprobs, 64), 0);
  RequestState penalty = request(0.0f, 0);
  penalty.sampling.processing.frequency_penalty = 0.5f;
  EXPECT_EQ(head_top_k_of(penalty, 64), 0);
  RequestState bias = request(0.8f, 5);
  bias.sampling.processing.logit_bias.emplace_back(65, 2.0f);
  EXPECT_EQ(head_top_k_of(bias, 64), 0);
  RequestState min_tokens = request(0.0f, 0);
  min_tokens.sampling.processing.min_tokens = 3;
  EXPECT_EQ(head_top_k_of(min_tokens, 64), 0);
  RequestState forking = request(0.8f, 5);
  forking.num_unforked = 2;
  EXPECT_EQ(head_top_k_of(forking, 64), 0);
}

TEST_F(HeadTopKOf, DraftVerificationOnlyForGreedy) {
  EXPECT_EQ(head_top_k_of(request(0.0f, 0), 64, /*drafts=*/true), 1);
  EXPECT_EQ(head_top_k_of(request(0.8f, 40), 64, /*drafts=*/true), 0);
}

}  // namespace
}  // namespace loom
