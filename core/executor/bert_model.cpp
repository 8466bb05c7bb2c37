#include "core/executor/bert_model.hpp"

#include <cstring>

#include "core/common/error.hpp"
#include "core/common/half.hpp"

namespace loom {
namespace {

using nlohmann::json;

int32_t positive_int(const std::string& where, const json& config, const char* key, int32_t fallback) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) {
    if (fallback > 0) return fallback;
    throw Error(where + ": \"" + key + "\" is missing");
  }
  if (!it->is_number_integer() || it->get<int64_t>() <= 0 || it->get<int64_t>() > INT32_MAX)
    throw Error(where + ": \"" + key + "\" = " + it->dump() + " must be a positive 32-bit integer");
  return static_cast<int32_t>(it->get<int64_t>());
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::vector<float> to_f32(const SafetensorsTensor& t) {
  int64_t n = 1;
  for (const int64_t d : t.shape) n *= d;
  std::vector<float> out(static_cast<size_t>(n));
  if (t.dtype == LOOM_DTYPE_F32) {
    std::memcpy(out.data(), t.data, sizeof(float) * static_cast<size_t>(n));
  } else if (t.dtype == LOOM_DTYPE_F16 || t.dtype == LOOM_DTYPE_BF16) {
    const auto* src = static_cast<const uint16_t*>(t.data);
    for (int64_t i = 0; i < n; ++i) out[i] = t.dtype == LOOM_DTYPE_F16 ? f16_to_f32(src[i]) : bf16_to_f32(src[i]);
  } else {
    throw Error(t.file + ": tensor " + t.name + " has dtype " + t.dtype_name + " (the encoder reads F32, F16, BF16)",
                LOOM_ERR_UNSUPPORTED);
  }
  return out;
}

}  // namespace

bool is_bert_config(const json& config) {
  if (!config.is_object()) return false;
  if (config.value("model_type", "") == "bert") return true;
  const auto a = config.find("architectures");
  if (a == config.end() || !a->is_array() || a->empty() || !(*a)[0].is_string()) return false;
  return (*a)[0].get<std::string>().rfind("Bert", 0) == 0;
}

BertHparams read_bert_hparams(const std::string& dir, const json& config) {
  const std::string where = dir + "/config.json";
  if (!is_bert_config(config)) throw Error(where + ": not a BERT encoder (model_type \"bert\")");
  BertHparams hp;
  hp.dim = positive_int(where, config, "hidden_size", 0);
  hp.n_layers = positive_int(where, config, "num_hidden_layers", 0);
  hp.n_heads = positive_int(where, config, "num_attention_heads", 0);
  hp.ffn_dim = positive_int(where, config, "intermediate_size", 0);
  hp.vocab_size = positive_int(where, config, "vocab_size", 0);
  hp.max_positions = positive_int(where, config, "max_position_embeddings", 0);
  hp.type_vocab_size = positive_int(where, config, "type_vocab_size", 2);
  if (hp.dim % hp.n_heads != 0)
    throw Error(where + ": hidden_size " + std::to_string(hp.dim) + " is not a multiple of num_attention_heads " +
                std::to_string(hp.n_heads));
  if (const auto e = config.find("layer_norm_eps"); e != config.end() && !e->is_null()) {
    if (!e->is_number() || !(e->get<double>() > 0.0)) throw Error(where + ": \"layer_norm_eps\" must be a positive number");
    hp.layer_norm_eps = static_cast<float>(e->get<double>());
  }
  if (const std::string act = config.value("hidden_act", "gelu"); act != "gelu")
    throw Error(where + ": hidden_act \"" + act + "\" is not supported (gelu)", LOOM_ERR_UNSUPPORTED);
  if (const std::string pos = config.value("position_embedding_type", "absolute"); pos != "absolute")
    throw Error(where + ": position_embedding_type \"" + pos + "\" is not supported (absolute)", LOOM_ERR_UNSUPPORTED);
  if (config.value("is_decoder", false)) throw Error(where + ": is_decoder = true is not an encoder", LOOM_ERR_UNSUPPORTED);
  return hp;
}

BertWeights load_bert_weights(const SafetensorsCheckpoint& ckpt, const BertHparams& hp) {
  const bool prefixed = ckpt.find("bert.embeddings.word_embeddings.weight") != nullptr;
  auto get = [&](const std::string& name, const std::vector<int64_t>& shape) {
    const std::string full = (prefixed ? "bert." : "") + name;
    const SafetensorsTensor* t = ckpt.find(full);
    if (t == nullptr) throw Error("safetensors: tensor " + full + " is missing");
    if (t->shape != shape)
      throw Error(t->file + ": tensor " + full + " has shape " + shape_str(t->shape) + " but config.json implies " +
                  shape_str(shape));
    return to_f32(*t);
  };
  const int64_t dim = hp.dim, ffn = hp.ffn_dim;
  BertWeights w;
  w.hparams = hp;
  w.word_embd = get("embeddings.word_embeddings.weight", {hp.vocab_size, dim});
  w.position_embd = get("embeddings.position_embeddings.weight", {hp.max_positions, dim});
  w.type_embd = get("embeddings.token_type_embeddings.weight", {hp.type_vocab_size, dim});
  w.embd_norm_w = get("embeddings.LayerNorm.weight", {dim});
  w.embd_norm_b = get("embeddings.LayerNorm.bias", {dim});
  for (int32_t l = 0; l < hp.n_layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    BertLayerWeights lw;
    lw.wq = get(p + "attention.self.query.weight", {dim, dim});
    lw.bq = get(p + "attention.self.query.bias", {dim});
    lw.wk = get(p + "attention.self.key.weight", {dim, dim});
    lw.bk = get(p + "attention.self.key.bias", {dim});
    lw.wv = get(p + "attention.self.value.weight", {dim, dim});
    lw.bv = get(p + "attention.self.value.bias", {dim});
    lw.wo = get(p + "attention.output.dense.weight", {dim, dim});
    lw.bo = get(p + "attention.output.dense.bias", {dim});
    lw.attn_norm_w = get(p + "attention.output.LayerNorm.weight", {dim});
    lw.attn_norm_b = get(p + "attention.output.LayerNorm.bias", {dim});
    lw.w_up = get(p + "intermediate.dense.weight", {ffn, dim});
    lw.b_up = get(p + "intermediate.dense.bias", {ffn});
    lw.w_down = get(p + "output.dense.weight", {dim, ffn});
    lw.b_down = get(p + "output.dense.bias", {dim});
    lw.ffn_norm_w = get(p + "output.LayerNorm.weight", {dim});
    lw.ffn_norm_b = get(p + "output.LayerNorm.bias", {dim});
    w.layers.push_back(std::move(lw));
  }
  return w;
}

}  // namespace loom
