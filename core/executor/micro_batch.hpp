// Micro-batches: a step's flat batch cut into runs of at most N tokens that the executor runs one
// after another through the whole layer stack (llama.cpp's n_ubatch). Activation buffers then
// scale with N, not with the scheduler's token budget: at max_num_batched_tokens = 2048 on a
// llama-1b shape the FFN buffers alone would be 2 x 2048 x 8192 f32 = 128 MiB.
//
// Cutting a sequence's query run in two is chunked prefill inside one step: the first part's
// K/V are in the cache, for every layer, before the second part runs, so the second attends to
// them as context. The kernels are batch-invariant, so the logits are bit-identical to one pass.
#pragma once

#include <cstdint>
#include <vector>

#include "core/executor/batch_builder.hpp"

namespace loom {

// out = the tokens [t0, t1) of `in` (0 <= t0 < t1 <= in.num_tokens()): the sequences they touch,
// each with its query run clipped and seq_len = 1 + the position of its last token in the slice,
// their block tables, and the logits indices that fall inside, shifted by -t0. logit_rows gets,
// for each of out's logits indices, its row in `in`'s logits. `out` is reused (no reallocation
// once it has grown).
void slice_batch(const BuiltBatch& in, int32_t t0, int32_t t1, BuiltBatch& out, std::vector<int32_t>& logit_rows);

}  // namespace loom
