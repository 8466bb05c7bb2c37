// Which sampled rows the classifier head may answer with their best entries alone (the head's
// selection, model_executor.hpp HeadSelection) instead of a whole logits row.
#pragma once

#include <cstdint>

namespace loom {

struct RequestState;

// How many of its best logits each sampled row of `req` needs this step: 1 when it samples
// greedily, its top_k when it samples from its top_k (at most `limit`), and 0 (whole rows) when
// anything else reads a row: logprobs, penalties or logit biases, a grammar, choices still to
// fork from it, or sampling without a top_k. With `drafts` (rows verifying speculated tokens)
// only greedy requests qualify: sampled verification compares whole distributions. limit 0
// turns the selection off.
int32_t head_top_k_of(const RequestState& req, int32_t limit, bool drafts = false);

}  // namespace loom
