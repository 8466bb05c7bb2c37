// The BERT encoder path on a tiny random BERT written here (2 layers, dim 8, 2 heads, a
// WordPiece vocabulary of 16): its kernels on hand-checked values, its tokenizer.json loading on
// exact ids, and its sentence embeddings against a plain double-precision forward written
// independently in this file (BertModel's formulas: embeddings + LayerNorm, post-norm layers of
// bidirectional softmax attention and an erf-GELU MLP, mean pooling, L2 normalisation).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "core/common/error.hpp"
#include "core/executor/kernels/cpu/gelu.hpp"
#include "core/executor/kernels/cpu/layer_norm.hpp"
#include "core/executor/sentence_encoder.hpp"
#include "tests/unit/tiny_bert.hpp"

namespace {

using namespace loom::test::tiny_bert;

class TinyBert : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("loom-tiny-bert-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    tensors_ = write_dir(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  const std::vector<float>& w(const std::string& name) const { return tensors_.at(name).second; }

  // BertModel + mean pooling + normalisation in double, one sequence, written from the formulas.
  std::vector<double> reference(const std::vector<int32_t>& ids) const {
    const size_t n = ids.size();
    using Rows = std::vector<std::vector<double>>;
    auto norm = [](Rows& x, const std::vector<float>& g, const std::vector<float>& b) {
      for (auto& r : x) {
        double mean = 0, var = 0;
        for (double v : r) mean += v / kDim;
        for (double v : r) var += (v - mean) * (v - mean) / kDim;
        for (int d = 0; d < kDim; ++d) r[d] = (r[d] - mean) / std::sqrt(var + 1e-12) * g[d] + b[d];
      }
    };
    auto lin = [](const Rows& x, const std::vector<float>& wt, const std::vector<float>& b) {
      Rows y(x.size(), std::vector<double>(b.size()));
      const size_t in = x[0].size();
      for (size_t t = 0; t < x.size(); ++t)
        for (size_t o = 0; o < b.size(); ++o) {
          double s = b[o];
          for (size_t i = 0; i < in; ++i) s += x[t][i] * wt[o * in + i];
          y[t][o] = s;
        }
      return y;
    };
    Rows x(n, std::vector<double>(kDim));
    for (size_t t = 0; t < n; ++t)
      for (int d = 0; d < kDim; ++d)
        x[t][d] = double{w("embeddings.word_embeddings.weight")[ids[t] * kDim + d]} +
                  w("embeddings.position_embeddings.weight")[t * kDim + d] +
                  w("embeddings.token_type_embeddings.weight")[d];
    norm(x, w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"));
    const int hd = kDim / kHeads;
    for (int l = 0; l < kLayers; ++l) {
      const std::string p = "encoder.layer." + std::to_string(l) + ".";
      const Rows q = lin(x, w(p + "attention.self.query.weight"), w(p + "attention.self.query.bias"));
      const Rows k = lin(x, w(p + "attention.self.key.weight"), w(p + "attention.self.key.bias"));
      const Rows v = lin(x, w(p + "attention.self.value.weight"), w(p + "attention.self.value.bias"));
      Rows a(n, std::vector<double>(kDim, 0.0));
      for (int h = 0; h < kHeads; ++h)
        for (size_t i = 0; i < n; ++i) {
          std::vector<double> s(n);
          double total = 0;
          for (size_t j = 0; j < n; ++j) {
            double dp = 0;
            for (int d = 0; d < hd; ++d) dp += q[i][h * hd + d] * k[j][h * hd + d];
            total += s[j] = std::exp(dp / std::sqrt(double{hd}));
          }
          for (size_t j = 0; j < n; ++j)
            for (int d = 0; d < hd; ++d) a[i][h * hd + d] += s[j] / total * v[j][h * hd + d];
        }
      const Rows o = lin(a, w(p + "attention.output.dense.weight"), w(p + "attention.output.dense.bias"));
      for (size_t t = 0; t < n; ++t)
        for (int d = 0; d < kDim; ++d) x[t][d] += o[t][d];
      norm(x, w(p + "attention.output.LayerNorm.weight"), w(p + "attention.output.LayerNorm.bias"));
      Rows hdn = lin(x, w(p + "intermediate.dense.weight"), w(p + "intermediate.dense.bias"));
      for (auto& r : hdn)
        for (double& e : r) e = 0.5 * e * (1.0 + std::erf(e / std::sqrt(2.0)));
      const Rows f = lin(hdn, w(p + "output.dense.weight"), w(p + "output.dense.bias"));
      for (size_t t = 0; t < n; ++t)
        for (int d = 0; d < kDim; ++d) x[t][d] += f[t][d];
      norm(x, w(p + "output.LayerNorm.weight"), w(p + "output.LayerNorm.bias"));
    }
    std::vector<double> e(kDim, 0.0);
    for (const auto& r : x)
      for (int d = 0; d < kDim; ++d) e[d] += r[d] / static_cast<double>(n);
    double sq = 0;
    for (double v : e) sq += v * v;
    for (double& v : e) v /= std::sqrt(sq);
    return e;
  }

  fs::path dir_;
  Tensors tensors_;
};

TEST(EncoderKernels, LayerNormAndGeluOnHandCheckedValues) {
  loom::ThreadPool pool(1);
  const float x[4] = {1, 2, 3, 4}, g[4] = {1, 1, 2, 1}, b[4] = {0, 0, 0, 0.5f};
  float y[4];
  loom::cpu::layer_norm(x, g, b, y, 1, 4, 0.0f, &pool);
  // mean 2.5, variance 1.25: (x - 2.5) / sqrt(1.25)
  EXPECT_FLOAT_EQ(y[0], -1.5f / std::sqrt(1.25f));
  EXPECT_FLOAT_EQ(y[1], -0.5f / std::sqrt(1.25f));
  EXPECT_FLOAT_EQ(y[2], 2 * 0.5f / std::sqrt(1.25f));
  EXPECT_FLOAT_EQ(y[3], 1.5f / std::sqrt(1.25f) + 0.5f);
  float v[4] = {0.0f, 1.0f, -1.0f, 3.0f};
  loom::cpu::gelu_erf(v, 4, &pool);
  EXPECT_EQ(v[0], 0.0f);
  EXPECT_NEAR(v[1], 0.8413447461, 1e-7);   // Phi(1)
  EXPECT_NEAR(v[2], -0.1586552539, 1e-7);  // -1 * Phi(-1)
  EXPECT_NEAR(v[3], 2.9959502, 1e-6);
}

TEST_F(TinyBert, TokenizerJsonWordPieceGivesExactIds) {
  loom::ThreadPool pool(1);
  const auto enc = loom::SentenceEncoder::open(dir_.string(), pool);
  EXPECT_EQ(enc->dim(), kDim);
  EXPECT_EQ(enc->max_tokens(), 12);  // sentence_bert_config.json, below the 16 positions
  EXPECT_TRUE(enc->normalized());
  // Lowercased, accent stripped (café -> cafe), punctuation split, greedy longest pieces,
  // an unknown word whole as [UNK], [SEP] typed in the text matched as the special token.
  EXPECT_EQ(enc->tokenize("Hello, UNAFFABLE world! Café xyz [SEP]"),
            (std::vector<int32_t>{2, 5, 7, 9, 10, 11, 6, 8, 13, 1, 3, 3}));
  EXPECT_EQ(enc->tokenize("as"), (std::vector<int32_t>{2, 14, 15, 3}));
  EXPECT_EQ(enc->tokenize(""), (std::vector<int32_t>{2, 3}));
  // max_input_chars_per_word: a word over 100 characters is [UNK] without a search.
  EXPECT_EQ(enc->tokenize(std::string(101, 'a')), (std::vector<int32_t>{2, 1, 3}));
}

TEST_F(TinyBert, EmbeddingsMatchAnIndependentDoubleForward) {
  loom::ThreadPool pool(2);
  const auto enc = loom::SentenceEncoder::open(dir_.string(), pool);
  const std::vector<std::vector<int32_t>> seqs = {{2, 5, 7, 6, 3}, {2, 12, 13, 3}, {2, 9, 10, 11, 8, 14, 15, 3}};
  const std::vector<float> got = enc->embed(seqs);
  ASSERT_EQ(got.size(), seqs.size() * kDim);
  for (size_t s = 0; s < seqs.size(); ++s) {
    const std::vector<double> want = reference(seqs[s]);
    double sq = 0;
    for (int d = 0; d < kDim; ++d) {
      EXPECT_NEAR(got[s * kDim + d], want[d], 2e-6) << "sequence " << s << " dim " << d;
      sq += double{got[s * kDim + d]} * got[s * kDim + d];
    }
    EXPECT_NEAR(sq, 1.0, 1e-6);
  }
}

TEST_F(TinyBert, BatchedEqualsAloneBitForBit) {
  loom::ThreadPool pool(2);
  const auto enc = loom::SentenceEncoder::open(dir_.string(), pool);
  const std::vector<std::vector<int32_t>> seqs = {{2, 5, 7, 6, 3}, {2, 12, 3}, {2, 9, 10, 11, 8, 14, 15, 3}};
  const std::vector<float> batched = enc->embed(seqs);
  for (size_t s = 0; s < seqs.size(); ++s) {
    const std::vector<float> alone = enc->embed(std::span(&seqs[s], 1));
    EXPECT_EQ(0, std::memcmp(alone.data(), batched.data() + s * kDim, sizeof(float) * kDim)) << s;
  }
}

TEST_F(TinyBert, RefusesWhatItCannotRun) {
  loom::ThreadPool pool(1);
  const auto enc = loom::SentenceEncoder::open(dir_.string(), pool);
  const std::vector<std::vector<int32_t>> too_long = {std::vector<int32_t>(kPositions + 1, 5)};
  EXPECT_THROW(enc->embed(too_long), loom::Error);
  const std::vector<std::vector<int32_t>> bad_id = {{2, 99, 3}};
  EXPECT_THROW(enc->embed(bad_id), loom::Error);
  std::ofstream(dir_ / "config.json") << R"({"model_type": "bert", "hidden_size": 8, "num_hidden_layers": 2,
    "num_attention_heads": 2, "intermediate_size": 12, "vocab_size": 16, "max_position_embeddings": 16,
    "position_embedding_type": "relative_key"})";
  try {
    loom::SentenceEncoder::open(dir_.string(), pool);
    FAIL() << "relative position embeddings were accepted";
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("position_embedding_type \"relative_key\" is not supported"), std::string::npos)
        << e.what();
  }
}

}  // namespace
