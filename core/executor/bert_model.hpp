// A BERT-style encoder (BertModel: all-MiniLM, BGE, E5 ...) read from a Hugging Face directory:
// config.json's hyperparameters, and the weights of model.safetensors widened to f32 once at load
// (an encoder is small; the forward then reads one layout). A clear model path of its own beside
// the decoder families of model_arch.hpp: post-norm layers, LayerNorm with bias, absolute position
// and token-type embeddings, bidirectional attention, an erf-GELU MLP, no KV cache.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/formats/safetensors_file.hpp"

namespace loom {

struct BertHparams {
  int32_t dim = 0;             // hidden_size
  int32_t n_layers = 0;        // num_hidden_layers
  int32_t n_heads = 0;         // num_attention_heads (head_dim = dim / n_heads)
  int32_t ffn_dim = 0;         // intermediate_size
  int32_t vocab_size = 0;
  int32_t max_positions = 0;   // max_position_embeddings: the longest sequence
  int32_t type_vocab_size = 0;
  float layer_norm_eps = 1e-12f;
  int32_t head_dim() const { return dim / n_heads; }
};

struct BertLayerWeights {
  std::vector<float> wq, wk, wv, wo;  // [dim, dim] (out, in)
  std::vector<float> bq, bk, bv, bo;  // [dim]
  std::vector<float> attn_norm_w, attn_norm_b;  // [dim]: LayerNorm after attention + residual
  std::vector<float> w_up, b_up;                // [ffn_dim, dim], [ffn_dim]
  std::vector<float> w_down, b_down;            // [dim, ffn_dim], [dim]
  std::vector<float> ffn_norm_w, ffn_norm_b;    // [dim]: LayerNorm after the MLP + residual
};

struct BertWeights {
  BertHparams hparams;
  std::vector<float> word_embd;      // [vocab_size, dim]
  std::vector<float> position_embd;  // [max_positions, dim]
  std::vector<float> type_embd;      // [type_vocab_size, dim]
  std::vector<float> embd_norm_w, embd_norm_b;  // [dim]
  std::vector<BertLayerWeights> layers;
};

// Whether config.json describes a BERT encoder (model_type "bert" or architectures BertModel /
// BertForMaskedLM / ...): the directory is then an encoder, not a decoder.
bool is_bert_config(const nlohmann::json& config);

// Reads config.json (its parsed contents); throws loom::Error naming the field for anything
// this path does not run (another activation, relative position embeddings, a decoder flag).
BertHparams read_bert_hparams(const std::string& dir, const nlohmann::json& config);

// Every tensor, shape-checked against the hparams, as f32 (from f32, f16 or bf16). Names with or
// without the "bert." prefix of BertFor* checkpoints.
BertWeights load_bert_weights(const SafetensorsCheckpoint& ckpt, const BertHparams& hp);

}  // namespace loom
