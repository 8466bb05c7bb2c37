#include "core/executor/bert_encoder.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/common/error.hpp"
#include "core/executor/kernels/cpu/add.hpp"
#include "core/executor/kernels/cpu/gelu.hpp"
#include "core/executor/kernels/cpu/layer_norm.hpp"
#include "core/executor/kernels/cpu/parallel.hpp"

namespace loom {
namespace {

// Dot product with eight fixed partial sums: vectorisable, and the same order for every call.
float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float tail = 0.0f;
  for (; i < n; ++i) tail += a[i] * b[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

}  // namespace

BertEncoder::BertEncoder(BertWeights weights, Pooling pooling, bool normalize, ThreadPool& threads)
    : w_(std::move(weights)), pooling_(pooling), normalize_(normalize), threads_(threads) {}

void BertEncoder::linear(const float* x, int64_t n, int64_t in, const std::vector<float>& w,
                         const std::vector<float>& b, float* y, int64_t out) {
  // Over output features, so each weight row is read once per step for every token.
  cpu::parallel_rows(&threads_, out, n * in, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const float* wr = w.data() + o * in;
      for (int64_t t = 0; t < n; ++t) y[t * out + o] = dot(x + t * in, wr, in) + b[o];
    }
  });
}

void BertEncoder::attention(std::span<const int64_t> starts, const float* q, const float* k, const float* v,
                            float* out) {
  const BertHparams& hp = w_.hparams;
  const int64_t dim = hp.dim, hd = hp.head_dim(), n_heads = hp.n_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t n_seqs = static_cast<int64_t>(starts.size()) - 1;
  // One item per (sequence, head).
  cpu::parallel_rows(&threads_, n_seqs * n_heads, 1 << 12, [&](int64_t begin, int64_t end) {
    std::vector<float> scores;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t s = item / n_heads, h = item % n_heads;
      const int64_t first = starts[s], len = starts[s + 1] - starts[s];
      scores.resize(static_cast<size_t>(len));
      for (int64_t i = 0; i < len; ++i) {
        const float* qi = q + (first + i) * dim + h * hd;
        float max_score = -INFINITY;
        for (int64_t j = 0; j < len; ++j) {
          scores[j] = dot(qi, k + (first + j) * dim + h * hd, hd) * scale;
          max_score = std::max(max_score, scores[j]);
        }
        float sum = 0.0f;
        for (int64_t j = 0; j < len; ++j) sum += scores[j] = std::exp(scores[j] - max_score);
        float* o = out + (first + i) * dim + h * hd;
        std::fill(o, o + hd, 0.0f);
        for (int64_t j = 0; j < len; ++j) {
          const float p = scores[j] / sum;
          const float* vj = v + (first + j) * dim + h * hd;
          for (int64_t d = 0; d < hd; ++d) o[d] += p * vj[d];
        }
      }
    }
  });
}

std::vector<float> BertEncoder::forward(std::span<const std::vector<int32_t>> seqs) {
  const BertHparams& hp = w_.hparams;
  const int64_t dim = hp.dim, ffn = hp.ffn_dim;
  std::vector<int64_t> starts{0};  // [n_seqs + 1]: sequence s is rows starts[s]..starts[s+1]
  for (size_t s = 0; s < seqs.size(); ++s) {
    const auto& ids = seqs[s];
    if (ids.empty()) throw Error("encoder: sequence " + std::to_string(s) + " is empty");
    if (ids.size() > static_cast<size_t>(hp.max_positions))
      throw Error("encoder: sequence " + std::to_string(s) + " has " + std::to_string(ids.size()) +
                  " tokens, more than the model's " + std::to_string(hp.max_positions) + " positions");
    for (const int32_t id : ids)
      if (id < 0 || id >= hp.vocab_size)
        throw Error("encoder: token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                    std::to_string(hp.vocab_size) + ")");
    starts.push_back(starts.back() + static_cast<int64_t>(ids.size()));
  }
  const int64_t n = starts.back();
  std::vector<float> x(static_cast<size_t>(n * dim));  // [n, dim] residual stream
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (size_t p = 0; p < seqs[s].size(); ++p) {
      float* row = x.data() + (starts[s] + static_cast<int64_t>(p)) * dim;
      const float* word = w_.word_embd.data() + int64_t{seqs[s][p]} * dim;
      const float* pos = w_.position_embd.data() + static_cast<int64_t>(p) * dim;
      const float* type = w_.type_embd.data();  // token type 0: one segment
      for (int64_t d = 0; d < dim; ++d) row[d] = (word[d] + pos[d]) + type[d];
    }
  }
  cpu::layer_norm(x.data(), w_.embd_norm_w.data(), w_.embd_norm_b.data(), x.data(), n, dim, hp.layer_norm_eps,
                  &threads_);
  std::vector<float> q(x.size()), k(x.size()), v(x.size()), att(x.size()), proj(x.size());  // [n, dim]
  std::vector<float> hidden(static_cast<size_t>(n * ffn));                                  // [n, ffn_dim]
  for (const BertLayerWeights& l : w_.layers) {
    linear(x.data(), n, dim, l.wq, l.bq, q.data(), dim);
    linear(x.data(), n, dim, l.wk, l.bk, k.data(), dim);
    linear(x.data(), n, dim, l.wv, l.bv, v.data(), dim);
    attention(starts, q.data(), k.data(), v.data(), att.data());
    linear(att.data(), n, dim, l.wo, l.bo, proj.data(), dim);
    cpu::add_inplace(x.data(), proj.data(), n * dim, &threads_);  // post-norm: norm(x + f(x))
    cpu::layer_norm(x.data(), l.attn_norm_w.data(), l.attn_norm_b.data(), x.data(), n, dim, hp.layer_norm_eps,
                    &threads_);
    linear(x.data(), n, dim, l.w_up, l.b_up, hidden.data(), ffn);
    cpu::gelu_erf(hidden.data(), n * ffn, &threads_);
    linear(hidden.data(), n, ffn, l.w_down, l.b_down, proj.data(), dim);
    cpu::add_inplace(x.data(), proj.data(), n * dim, &threads_);
    cpu::layer_norm(x.data(), l.ffn_norm_w.data(), l.ffn_norm_b.data(), x.data(), n, dim, hp.layer_norm_eps,
                    &threads_);
  }
  return x;
}

std::vector<float> BertEncoder::embed(std::span<const std::vector<int32_t>> seqs) {
  const std::vector<float> states = forward(seqs);  // [n, dim]
  const int64_t dim = w_.hparams.dim;
  std::vector<float> out(seqs.size() * static_cast<size_t>(dim));  // [n_seqs, dim]
  int64_t first = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const int64_t len = static_cast<int64_t>(seqs[s].size());
    float* e = out.data() + static_cast<int64_t>(s) * dim;
    for (int64_t d = 0; d < dim; ++d) {
      if (pooling_ == Pooling::kCls) {
        e[d] = states[first * dim + d];
        continue;
      }
      double sum = 0.0;
      for (int64_t t = 0; t < len; ++t) sum += states[(first + t) * dim + d];
      e[d] = static_cast<float>(sum / static_cast<double>(len));
    }
    if (normalize_) {  // torch.nn.functional.normalize: x / max(|x|, 1e-12)
      double sq = 0.0;
      for (int64_t d = 0; d < dim; ++d) sq += double{e[d]} * e[d];
      const double norm = std::max(std::sqrt(sq), 1e-12);
      for (int64_t d = 0; d < dim; ++d) e[d] = static_cast<float>(e[d] / norm);
    }
    first += len;
  }
  return out;
}

}  // namespace loom
