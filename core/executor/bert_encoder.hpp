// The BERT encoder's forward pass on the CPU and the sentence embedding on top of it: a flat
// batch of whole sequences (no padding: a sequence attends to its own tokens only, all of them,
// which is what the attention mask of a padded batch means), then pooling over each sequence's
// tokens and, optionally, L2 normalisation (sentence-transformers' Pooling + Normalize modules).
//
// Every output element is reduced in an order that depends only on its own sequence, so a
// sentence's embedding is bit-identical alone or batched with others.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "core/executor/bert_model.hpp"

namespace loom {

enum class Pooling {
  kMean,  // mean of the token states (sentence-transformers pooling_mode_mean_tokens)
  kCls,   // the first token's state (pooling_mode_cls_token)
};

class BertEncoder {
 public:
  // `threads` must outlive the encoder.
  BertEncoder(BertWeights weights, Pooling pooling, bool normalize, ThreadPool& threads);

  const BertHparams& hparams() const { return w_.hparams; }
  int32_t dim() const { return w_.hparams.dim; }

  // Token states of one flat batch: seqs[i] is sequence i's ids (token type 0, positions from 0).
  // Returns [sum of lengths, dim]. Throws loom::Error for an empty or too long sequence or an id
  // outside the vocabulary.
  std::vector<float> forward(std::span<const std::vector<int32_t>> seqs);
  // One embedding per sequence: [seqs.size(), dim], pooled (and normalised when configured).
  std::vector<float> embed(std::span<const std::vector<int32_t>> seqs);

 private:
  // y [n, out] = x [n, in] W^T + b, W [out, in].
  void linear(const float* x, int64_t n, int64_t in, const std::vector<float>& w, const std::vector<float>& b,
              float* y, int64_t out);
  // Bidirectional multi-head attention of each sequence over its own rows of q, k, v [n, dim].
  void attention(std::span<const int64_t> starts, const float* q, const float* k, const float* v, float* out);

  BertWeights w_;
  Pooling pooling_;
  bool normalize_;
  ThreadPool& threads_;
};

}  // namespace loom
