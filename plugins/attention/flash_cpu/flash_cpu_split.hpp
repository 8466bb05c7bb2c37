// attention/flash_cpu: split-K (FlashDecoding) over fixed KV partitions.
//
// A row's keys (positions window_first .. pos) are cut at every multiple of kPartitionTokens:
//
//   positions | 0 .. P-1 | P .. 2P-1 | ... | kP .. pos |      P = kPartitionTokens
//   partial   |    p0    |    p1     | ... |    pk     |   each (acc, m, l) from a fresh state
//
// Each partition's partial state is folded by the tile kernel on its own (any item, any thread),
// and the partials are merged in increasing partition order by merge_partial, then normalised by
// finish_partial. The cut points are absolute positions, a constant of the plugin: they depend
// neither on the batch, nor on the thread count, nor on how the plugin spreads partitions over
// work items. So a row's bits depend only on its own query and its sequence's K/V, and a decode
// row, the same position inside a prefill chunk, and either one batched with others agree.
//
// A row whose keys all lie in one partition skips the merge: the kernel divides acc by l exactly
// as it did before partitions existed, so contexts (and windows) within one partition keep their
// bits. Merging a single partial into a fresh state would give the same bits anyway (exp(0) = 1).
#pragma once

#include <cstdint>

namespace loom::flash_cpu {

// Keys per partition. 512 tokens of K and V at head_dim 256 in f32 are 1 MiB: enough work per
// item that its setup, the partial's store and the merge are noise, and short enough that a 2k
// context already yields 4 items to spread over the threads.
constexpr int32_t kPartitionTokens = 512;

// A partial state, [head_dim + 2] floats: acc [head_dim] (unnormalised sum of weight x V), then
// m (running max of the scaled scores), then l (sum of exp(score - m)).
constexpr int64_t partial_floats(int32_t head_dim) { return int64_t{head_dim} + 2; }

// The partition holding position `pos`.
constexpr int32_t partition_of(int32_t pos) { return pos / kPartitionTokens; }

// A fresh merge state: acc 0, m -inf, l 0.
void reset_partial(float* state, int32_t head_dim);

// Folds partial `p` (with at least one key) into `state`, the next partition in increasing order:
//   m' = max(m, m_p), a = exp(m - m'), b = exp(m_p - m'), l' = l a + l_p b, acc' = acc a + acc_p b.
// The first fold into a fresh state copies p exactly (a = 0, b = 1).
void merge_partial(float* state, const float* p, int32_t head_dim);

// out [head_dim] = acc / l of `state`.
void finish_partial(const float* state, float* out, int32_t head_dim);

}  // namespace loom::flash_cpu
