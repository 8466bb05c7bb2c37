// Loading the Llama family from GGUF metadata and tensors: defaults, and errors that name the key
// or tensor at fault.
#include <gtest/gtest.h>

#include <functional>

#include "core/common/error.hpp"
#include "core/executor/llama_model.hpp"
#include "core/formats/gguf_writer.hpp"

namespace loom {
namespace {

// A tiny model: dim 8, 2 heads (1 kv head), 1 layer, ffn 12, vocab 10. `edit` may change the
// writer before the tensors are added; `skip` drops a tensor; `override_dims` changes one.
std::vector<uint8_t> tiny_model(const std::function<void(GgufWriter&)>& edit = {}, const std::string& skip = "",
                                const std::string& bad_tensor = "", std::vector<int64_t> bad_dims = {}) {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.embedding_length", 8);
  w.set_u32("llama.block_count", 1);
  w.set_u32("llama.feed_forward_length", 12);
  w.set_u32("llama.attention.head_count", 2);
  w.set_u32("llama.attention.head_count_kv", 1);
  w.set_u32("llama.context_length", 32);
  if (edit) edit(w);
  const std::vector<std::pair<std::string, std::vector<int64_t>>> tensors = {
      {"token_embd.weight", {8, 10}},       {"blk.0.attn_norm.weight", {8}},   {"blk.0.attn_q.weight", {8, 8}},
      {"blk.0.attn_k.weight", {8, 4}},      {"blk.0.attn_v.weight", {8, 4}},   {"blk.0.attn_output.weight", {8, 8}},
      {"blk.0.ffn_norm.weight", {8}},       {"blk.0.ffn_gate.weight", {8, 12}}, {"blk.0.ffn_up.weight", {8, 12}},
      {"blk.0.ffn_down.weight", {12, 8}},   {"output_norm.weight", {8}}};
  for (auto [name, dims] : tensors) {
    if (name == skip) continue;
    if (name == bad_tensor) dims = bad_dims;
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> values(static_cast<size_t>(n), 0.25f);
    w.add_tensor_f32(name, LOOM_DTYPE_F32, dims, values);
  }
  return w.to_bytes();
}

std::string load_error(const std::vector<uint8_t>& bytes) {
  try {
    const GgufFile f = GgufFile::from_bytes(bytes, "tiny.gguf");
    load_llama_weights(f);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LlamaModel, DefaultsAndViews) {
  const GgufFile f = GgufFile::from_bytes(tiny_model(), "tiny.gguf");
  const LlamaWeights w = load_llama_weights(f);
  const LlamaHparams& hp = w.hparams;
  EXPECT_EQ(hp.head_dim, 4);
  EXPECT_EQ(hp.rope_dim, 4);  // default: head_dim
  EXPECT_EQ(hp.n_kv_heads, 1);
  EXPECT_EQ(hp.vocab_size, 10);
  EXPECT_FLOAT_EQ(hp.rope_freq_base, 10000.0f);
  EXPECT_FLOAT_EQ(hp.rms_eps, 1e-5f);
  EXPECT_TRUE(w.tied_output);
  EXPECT_EQ(w.output.data, w.token_embd.data);
  // GGUF dims {in, out} -> [out, in], contiguous rows.
  EXPECT_EQ(w.layers[0].wk.ndim, 2);
  EXPECT_EQ(w.layers[0].wk.shape[0], 4);
  EXPECT_EQ(w.layers[0].wk.shape[1], 8);
  EXPECT_EQ(w.layers[0].wk.strides[0], 8);
  EXPECT_EQ(w.layers[0].wk.strides[1], 1);
  EXPECT_EQ(w.layers[0].w_down.shape[0], 8);
  EXPECT_EQ(w.layers[0].w_down.shape[1], 12);

  // head_count_kv defaults to head_count.
  const GgufFile mha = GgufFile::from_bytes(
      tiny_model([](GgufWriter& g) { g.set_u32("llama.attention.head_count_kv", 2); }, "", "blk.0.attn_k.weight",
                 {8, 8}),
      "mha.gguf");
  EXPECT_THROW(load_llama_weights(mha), Error);  // attn_v is still {8, 4}
}

TEST(LlamaModel, UnsupportedArchitectureNamesItAndTheList) {
  const std::string e = load_error(tiny_model([](GgufWriter& g) { g.set_string("general.architecture", "gpt2"); }));
  EXPECT_NE(e.find("\"gpt2\""), std::string::npos) << e;
  EXPECT_NE(e.find("supported: llama"), std::string::npos) << e;
}

TEST(LlamaModel, MissingKeyAndTensor) {
  const std::string missing_tensor = load_error(tiny_model({}, "blk.0.ffn_up.weight"));
  EXPECT_NE(missing_tensor.find("tensor blk.0.ffn_up.weight is missing"), std::string::npos) << missing_tensor;
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  const std::string missing_key = load_error(w.to_bytes());
  EXPECT_NE(missing_key.find("llama.embedding_length"), std::string::npos) << missing_key;
}

TEST(LlamaModel, WrongShapeNamesTheTensor) {
  const std::string e = load_error(tiny_model({}, "", "blk.0.attn_k.weight", {8, 8}));
  EXPECT_NE(e.find("blk.0.attn_k.weight has shape [8, 8], expected [4, 8]"), std::string::npos) << e;
}

TEST(LlamaModel, RefusesWhatItWouldGetWrong) {
  const std::string scaling =
      load_error(tiny_model([](GgufWriter& g) { g.set_string("llama.rope.scaling.type", "longrope"); }));
  EXPECT_NE(scaling.find("rope.scaling.type"), std::string::npos) << scaling;
  const std::string heads = load_error(tiny_model([](GgufWriter& g) { g.set_u32("llama.attention.head_count", 3); }));
  EXPECT_NE(heads.find("not a multiple"), std::string::npos) << heads;
  const std::string blocks = load_error(tiny_model([](GgufWriter& g) { g.set_u32("llama.block_count", 0); }));
  EXPECT_NE(blocks.find("block_count = 0 must be a positive"), std::string::npos) << blocks;  // the executor needs a last layer
}

}  // namespace
}  // namespace loom
