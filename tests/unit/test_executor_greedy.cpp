// The acceptance test: greedy decoding of stories260K from BOS reproduces llama2.c's output
// token for token (tests/data/greedy_from_bos_256.ids), from both GGUF conversions.
#include <gtest/gtest.h>

#include "core/executor/llama_model.hpp"
#include "tests/unit/test_executor_support.hpp"

namespace loom {
namespace {

class GreedyFromBos : public ::testing::TestWithParam<const char*> {};

TEST_P(GreedyFromBos, MatchesLlama2c) {
  const GgufFile file = GgufFile::open(test::data_path(GetParam()));
  test::ModelRunner runner(file);
  const std::vector<int32_t> expected = test::read_ids(test::data_path("greedy_from_bos_256.ids"));
  ASSERT_EQ(expected.size(), 256u);
  const std::vector<int32_t> got = runner.greedy({1}, 256);
  EXPECT_EQ(got, expected);
}

INSTANTIATE_TEST_SUITE_P(Stories260K, GreedyFromBos,
                         ::testing::Values("stories260K.gguf", "stories260K.llamacpp.gguf"),
                         [](const auto& info) {
                           return std::string(info.param) == "stories260K.gguf" ? "loom_convert" : "llama_cpp";
                         });

TEST(LlamaHparams, Stories260K) {
  const GgufFile file = GgufFile::open(test::data_path("stories260K.llamacpp.gguf"));
  const LlamaHparams hp = read_llama_hparams(file);
  EXPECT_EQ(hp.architecture, "llama");
  EXPECT_EQ(hp.dim, 64);
  EXPECT_EQ(hp.n_layers, 5);
  EXPECT_EQ(hp.ffn_dim, 172);
  EXPECT_EQ(hp.n_heads, 8);
  EXPECT_EQ(hp.n_kv_heads, 4);
  EXPECT_EQ(hp.head_dim, 8);
  EXPECT_EQ(hp.rope_dim, 8);
  EXPECT_EQ(hp.vocab_size, 512);
  EXPECT_FLOAT_EQ(hp.rope_freq_base, 10000.0f);
  const LlamaWeights w = load_llama_weights(file);
  EXPECT_FALSE(w.tied_output);  // llama.cpp's conversion writes output.weight
  EXPECT_EQ(w.layers.size(), 5u);
  EXPECT_EQ(w.layers[0].wk.shape[0], 32);  // [n_kv_heads * head_dim, dim]
  EXPECT_EQ(w.layers[0].wk.shape[1], 64);
  EXPECT_EQ(w.layers[0].w_down.shape[0], 64);  // [dim, ffn_dim]
  EXPECT_EQ(w.layers[0].w_down.shape[1], 172);

  const GgufFile converted = GgufFile::open(test::data_path("stories260K.gguf"));
  EXPECT_TRUE(load_llama_weights(converted).tied_output);
}

}  // namespace
}  // namespace loom
