// Which sampled rows the classifier head may answer with their best entries alone (the head's
// selection, model_executor.hpp HeadSelection) instead of a whole logits row.
#pragma once

#include <cstdint>

namespace loom {

struct RequestState;

// How many of its best logits the next sampled row of `req` needs: 1 when it samples greedily, its
// top_k when it samples from its top_k (at most `limit`), and 0 (the whole row) when anything
// else reads the row: logprobs, penalties or logit biases, a grammar, choices still to fork from
// it, or sampling without a top_k. limit 0 turns the selection off.
int32_t head_top_k_of(const RequestState& req, int32_t limit);

}  // namespace loom
