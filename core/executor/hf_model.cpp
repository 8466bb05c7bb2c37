#include "core/executor/hf_model.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/common/error.hpp"
#include "core/common/logging.hpp"

namespace loom {
namespace {

using nlohmann::json;

const json* field(const json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

int32_t int_field(const std::string& where, const json& j, const char* key, int64_t fallback, bool required) {
  const json* v = field(j, key);
  if (v == nullptr) {
    if (required) throw Error(where + ": \"" + key + "\" is missing");
    return static_cast<int32_t>(fallback);
  }
  if (!v->is_number_integer() || v->get<int64_t>() <= 0 || v->get<int64_t>() > INT32_MAX)
    throw Error(where + ": \"" + key + "\" = " + v->dump() + " must be a positive 32-bit integer");
  return static_cast<int32_t>(v->get<int64_t>());
}

double float_field(const std::string& where, const json& j, const char* key, double fallback) {
  const json* v = field(j, key);
  if (v == nullptr) return fallback;
  if (!v->is_number()) throw Error(where + ": \"" + key + "\" = " + v->dump() + " must be a number");
  return v->get<double>();
}

bool bool_field(const std::string& where, const json& j, const char* key, bool fallback) {
  const json* v = field(j, key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) throw Error(where + ": \"" + key + "\" = " + v->dump() + " must be true or false");
  return v->get<bool>();
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// rope_scaling (transformers 4) or rope_parameters (transformers 5) -> RopeScaling and theta.
void read_rope(const std::string& where, const json& config, LlamaHparams& hp) {
  hp.rope_freq_base = static_cast<float>(float_field(where, config, "rope_theta", 10000.0));
  const json* rs = field(config, "rope_scaling");
  if (rs == nullptr) rs = field(config, "rope_parameters");
  if (rs == nullptr) return;
  if (!rs->is_object()) throw Error(where + ": rope_scaling must be an object");
  const std::string w = where + ": rope_scaling";
  hp.rope_freq_base = static_cast<float>(float_field(w, *rs, "rope_theta", hp.rope_freq_base));
  std::string type = "default";
  if (const json* t = field(*rs, "rope_type")) type = t->is_string() ? t->get<std::string>() : "";
  else if (const json* t2 = field(*rs, "type")) type = t2->is_string() ? t2->get<std::string>() : "";
  RopeScaling& s = hp.rope_scaling;
  s.type = type == "default" ? "none" : type;
  s.factor = float_field(w, *rs, "factor", 1.0);
  s.original_max_position = int_field(w, *rs, "original_max_position_embeddings", hp.context_length, false);
  s.low_freq_factor = float_field(w, *rs, "low_freq_factor", 1.0);
  s.high_freq_factor = float_field(w, *rs, "high_freq_factor", 4.0);
  s.beta_fast = float_field(w, *rs, "beta_fast", 32.0);
  s.beta_slow = float_field(w, *rs, "beta_slow", 1.0);
  s.attention_factor = float_field(w, *rs, "attention_factor", 0.0);
  s.truncate = bool_field(w, *rs, "truncate", true);
  if (field(*rs, "mscale") != nullptr || field(*rs, "mscale_all_dim") != nullptr)
    throw Error(w + ": mscale / mscale_all_dim (DeepSeek yarn) are not supported", LOOM_ERR_UNSUPPORTED);
}

// The mixture-of-experts fields of config.json: Mixtral spells the expert count num_local_experts
// and sizes its experts with intermediate_size, as OLMoE does; the Qwen MoE families size them
// with moe_intermediate_size and may interleave dense layers, which Loom does not run yet.
void read_moe(const std::string& where, const json& config, const ArchSpec& arch, LlamaHparams& hp) {
  hp.n_experts = int_field(where, config, field(config, "num_local_experts") ? "num_local_experts" : "num_experts", 0, true);
  hp.n_experts_used = int_field(where, config, "num_experts_per_tok", 0, true);
  hp.expert_ffn_dim = int_field(where, config, "moe_intermediate_size", hp.ffn_dim, false);
  hp.norm_topk = bool_field(where, config, "norm_topk_prob", arch.moe.norm_topk);
  if (arch.moe.shared_expert) hp.shared_ffn_dim = int_field(where, config, "shared_expert_intermediate_size", 0, true);
  if (const json* step = field(config, "decoder_sparse_step"); step != nullptr && *step != 1)
    throw Error(where + ": decoder_sparse_step " + step->dump() + " (dense layers between the sparse ones) is not supported",
                LOOM_ERR_UNSUPPORTED);
  if (const json* dense = field(config, "mlp_only_layers"); dense != nullptr && !(dense->is_array() && dense->empty()))
    throw Error(where + ": mlp_only_layers " + dense->dump() + " (dense layers among the sparse ones) is not supported",
                LOOM_ERR_UNSUPPORTED);
  if (field(config, "clip_qkv") != nullptr)
    throw Error(where + ": clip_qkv is not supported", LOOM_ERR_UNSUPPORTED);
  if (float_field(where, config, "router_jitter_noise", 0.0) != 0.0)
    throw Error(where + ": router_jitter_noise must be 0 for inference", LOOM_ERR_UNSUPPORTED);
  check_moe_hparams(where, hp);
}

// The HF names of layer `l`'s experts and router: Mixtral's block_sparse_moe.experts.E.w1 (gate),
// w3 (up), w2 (down) and block_sparse_moe.gate, or the Qwen/OLMoE mlp.experts.E.{gate,up,down}_proj
// and mlp.gate.
struct ExpertNames {
  std::string router, gate, up, down;  // gate/up/down: with "{}" where the expert index goes
};
ExpertNames expert_names(const SafetensorsCheckpoint& ckpt, const std::string& p) {
  if (ckpt.find(p + "block_sparse_moe.gate.weight") != nullptr)
    return {p + "block_sparse_moe.gate.weight", p + "block_sparse_moe.experts.{}.w1.weight",
            p + "block_sparse_moe.experts.{}.w3.weight", p + "block_sparse_moe.experts.{}.w2.weight"};
  return {p + "mlp.gate.weight", p + "mlp.experts.{}.gate_proj.weight", p + "mlp.experts.{}.up_proj.weight",
          p + "mlp.experts.{}.down_proj.weight"};
}

std::string expert_name(const std::string& pattern, int32_t e) {
  const size_t at = pattern.find("{}");
  return pattern.substr(0, at) + std::to_string(e) + pattern.substr(at + 2);
}

}  // namespace

json read_json_file(const std::string& path, bool optional) {
  std::ifstream in(path);
  if (!in) {
    if (optional) return json();
    throw Error(path + ": cannot open", LOOM_ERR_NOT_FOUND);
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::exception& e) {
    throw Error(path + ": not valid JSON: " + e.what());
  }
}

LlamaHparams read_hf_hparams(const std::string& dir, const json& config) {
  const std::string where = dir + "/config.json";
  if (!config.is_object()) throw Error(where + ": must be a JSON object");
  std::string hf_class, hf_type;
  if (const json* a = field(config, "architectures"); a != nullptr && a->is_array() && !a->empty() && (*a)[0].is_string())
    hf_class = (*a)[0].get<std::string>();
  if (const json* t = field(config, "model_type"); t != nullptr && t->is_string()) hf_type = t->get<std::string>();
  const ArchSpec* arch = find_arch_by_hf(hf_class, hf_type);
  if (arch == nullptr)
    throw Error(where + ": architecture \"" + (hf_class.empty() ? hf_type : hf_class) + "\" is not supported (supported: " +
                supported_architectures(true) + ")", LOOM_ERR_UNSUPPORTED);
  LlamaHparams hp;
  hp.architecture = arch->name;
  hp.qkv_bias = arch->qkv_bias;
  hp.qk_norm = arch->qk_norm;
  hp.qk_norm_whole = arch->qk_norm_whole;
  hp.rope_style = RopeStyle::kNeox;  // Hugging Face rotate_half over un-permuted q/k rows
  hp.dim = int_field(where, config, "hidden_size", 0, true);
  hp.n_layers = int_field(where, config, "num_hidden_layers", 0, true);
  hp.ffn_dim = int_field(where, config, "intermediate_size", 0, true);
  hp.n_heads = int_field(where, config, "num_attention_heads", 0, true);
  hp.n_kv_heads = int_field(where, config, "num_key_value_heads", hp.n_heads, false);
  hp.vocab_size = int_field(where, config, "vocab_size", 0, true);
  hp.context_length = int_field(where, config, "max_position_embeddings", 0, true);
  if (field(config, "head_dim") == nullptr && hp.dim % hp.n_heads != 0)
    throw Error(where + ": hidden_size " + std::to_string(hp.dim) + " is not a multiple of num_attention_heads " +
                std::to_string(hp.n_heads) + " and head_dim is not given");
  hp.head_dim = int_field(where, config, "head_dim", hp.dim / hp.n_heads, false);
  if (hp.n_heads % hp.n_kv_heads != 0)
    throw Error(where + ": num_attention_heads " + std::to_string(hp.n_heads) + " is not a multiple of num_key_value_heads " +
                std::to_string(hp.n_kv_heads));
  const double partial = float_field(where, config, "partial_rotary_factor", 1.0);
  hp.rope_dim = static_cast<int32_t>(hp.head_dim * partial);
  if (hp.rope_dim <= 0 || hp.rope_dim % 2 != 0 || hp.rope_dim > hp.head_dim)
    throw Error(where + ": partial_rotary_factor " + std::to_string(partial) + " gives an odd or empty rotary dimension");
  hp.rms_eps = static_cast<float>(float_field(where, config, "rms_norm_eps", 1e-6));
  if (!(hp.rms_eps > 0.0f)) throw Error(where + ": rms_norm_eps must be positive");
  if (const json* act = field(config, "hidden_act"); act != nullptr && *act != "silu")
    throw Error(where + ": hidden_act " + act->dump() + " is not supported (silu)", LOOM_ERR_UNSUPPORTED);
  if (bool_field(where, config, "mlp_bias", false))
    throw Error(where + ": mlp_bias = true is not supported", LOOM_ERR_UNSUPPORTED);
  if (!hp.qkv_bias && bool_field(where, config, "attention_bias", false))
    throw Error(where + ": attention_bias = true is not supported for " + std::string(arch->hf_class), LOOM_ERR_UNSUPPORTED);
  read_rope(where, config, hp);
  (void)llama_rope_inv_freq(hp);  // refuses bad scaling parameters at load
  if (arch->moe.experts) read_moe(where, config, *arch, hp);
  // Mistral and Mixtral state their window (or null); the Qwen families apply theirs only when
  // use_sliding_window is set.
  const bool window_on = hp.architecture == "mistral" || hp.architecture == "mixtral" ||
                         bool_field(where, config, "use_sliding_window", false);
  if (window_on) hp.sliding_window = int_field(where, config, "sliding_window", 0, false);
  return hp;
}

loom_tensor_view safetensors_view(const SafetensorsTensor& t) {
  if (t.shape.empty() || t.shape.size() > LOOM_MAX_DIMS)
    throw Error(t.file + ": tensor " + t.name + " has " + std::to_string(t.shape.size()) + " dims");
  if (t.dtype == LOOM_DTYPE_INVALID) throw Error(t.file + ": tensor " + t.name + ": dtype " + t.dtype_name + " is not supported");
  loom_tensor_view v{};
  v.data = const_cast<void*>(t.data);  // read-only mapping; consumers never write weights
  v.dtype = t.dtype;
  v.ndim = static_cast<int32_t>(t.shape.size());
  v.device = loom_device{LOOM_DEVICE_CPU, 0};
  for (int32_t d = 0; d < LOOM_MAX_DIMS; ++d) {
    v.shape[d] = d < v.ndim ? t.shape[static_cast<size_t>(d)] : 1;
    v.strides[d] = 1;
  }
  for (int32_t d = v.ndim - 2; d >= 0; --d) v.strides[d] = v.strides[d + 1] * v.shape[d + 1];
  return v;
}

std::string hf_to_gguf_tensor_name(const std::string& n) {
  static const std::pair<const char*, const char*> kGlobal[] = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
  };
  for (const auto& [hf, gguf] : kGlobal)
    if (n == hf) return gguf;
  static const std::string kLayers = "model.layers.";
  if (n.rfind(kLayers, 0) != 0) return "";
  const size_t dot = n.find('.', kLayers.size());
  if (dot == std::string::npos) return "";
  const std::string layer = n.substr(kLayers.size(), dot - kLayers.size());
  if (layer.empty() || layer.find_first_not_of("0123456789") != std::string::npos) return "";
  static const std::pair<const char*, const char*> kLayer[] = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
      {"mlp.gate.weight", "ffn_gate_inp.weight"},
      {"block_sparse_moe.gate.weight", "ffn_gate_inp.weight"},
      {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
      {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
      {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
      {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"},
  };
  const std::string rest = n.substr(dot + 1);
  for (const auto& [hf, gguf] : kLayer)
    if (rest == hf) return "blk." + layer + "." + gguf;
  // One expert's matrix: GGUF stacks a layer's experts into one tensor.
  static const std::pair<const char*, const char*> kExpert[] = {
      {"gate_proj.weight", "ffn_gate_exps.weight"}, {"up_proj.weight", "ffn_up_exps.weight"},
      {"down_proj.weight", "ffn_down_exps.weight"}, {"w1.weight", "ffn_gate_exps.weight"},
      {"w3.weight", "ffn_up_exps.weight"},         {"w2.weight", "ffn_down_exps.weight"},
  };
  for (const char* group : {"mlp.experts.", "block_sparse_moe.experts."}) {
    if (rest.rfind(group, 0) != 0) continue;
    const size_t e_end = rest.find('.', std::strlen(group));
    if (e_end == std::string::npos) return "";
    const std::string tail = rest.substr(e_end + 1);
    for (const auto& [hf, gguf] : kExpert)
      if (tail == hf) return "blk." + layer + "." + gguf;
  }
  return "";
}

LlamaWeights load_hf_weights(const SafetensorsCheckpoint& ckpt, const LlamaHparams& hp) {
  auto expect = [&](const std::string& name, const std::vector<int64_t>& shape) {
    const SafetensorsTensor* t = ckpt.find(name);
    if (t == nullptr) throw Error("safetensors: tensor " + name + " is missing");
    if (t->shape != shape)
      throw Error(t->file + ": tensor " + name + " has shape " + shape_str(t->shape) + " but config.json implies " +
                  shape_str(shape));
    return safetensors_view(*t);
  };
  LlamaWeights w;
  w.hparams = hp;
  const int64_t dim = hp.dim, q_dim = int64_t{hp.n_heads} * hp.head_dim, kv_dim = int64_t{hp.n_kv_heads} * hp.head_dim;
  w.token_embd = expect("model.embed_tokens.weight", {hp.vocab_size, dim});
  for (int32_t l = 0; l < hp.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LlamaLayerWeights lw;
    lw.attn_norm = expect(p + "input_layernorm.weight", {dim});
    lw.wq = expect(p + "self_attn.q_proj.weight", {q_dim, dim});
    lw.wk = expect(p + "self_attn.k_proj.weight", {kv_dim, dim});
    lw.wv = expect(p + "self_attn.v_proj.weight", {kv_dim, dim});
    lw.wo = expect(p + "self_attn.o_proj.weight", {dim, q_dim});
    if (hp.qkv_bias) {
      lw.bq = expect(p + "self_attn.q_proj.bias", {q_dim});
      lw.bk = expect(p + "self_attn.k_proj.bias", {kv_dim});
      lw.bv = expect(p + "self_attn.v_proj.bias", {kv_dim});
    }
    if (hp.qk_norm) {
      lw.q_norm = expect(p + "self_attn.q_norm.weight", {hp.qk_norm_whole ? q_dim : hp.head_dim});
      lw.k_norm = expect(p + "self_attn.k_norm.weight", {hp.qk_norm_whole ? kv_dim : hp.head_dim});
    }
    lw.ffn_norm = expect(p + "post_attention_layernorm.weight", {dim});
    if (hp.is_moe()) {
      const ExpertNames names = expert_names(ckpt, p);
      const int64_t ff = hp.expert_ffn_dim;
      lw.router = expect(names.router, {hp.n_experts, dim});
      for (int32_t e = 0; e < hp.n_experts; ++e) {
        lw.exp_gate.push_back(expect(expert_name(names.gate, e), {ff, dim}));
        lw.exp_up.push_back(expect(expert_name(names.up, e), {ff, dim}));
        lw.exp_down.push_back(expect(expert_name(names.down, e), {dim, ff}));
      }
      if (hp.shared_ffn_dim > 0) {
        lw.sh_gate = expect(p + "mlp.shared_expert.gate_proj.weight", {hp.shared_ffn_dim, dim});
        lw.sh_up = expect(p + "mlp.shared_expert.up_proj.weight", {hp.shared_ffn_dim, dim});
        lw.sh_down = expect(p + "mlp.shared_expert.down_proj.weight", {dim, hp.shared_ffn_dim});
        lw.sh_router = expect(p + "mlp.shared_expert_gate.weight", {1, dim});
      }
    } else {
      lw.w_gate = expect(p + "mlp.gate_proj.weight", {hp.ffn_dim, dim});
      lw.w_up = expect(p + "mlp.up_proj.weight", {hp.ffn_dim, dim});
      lw.w_down = expect(p + "mlp.down_proj.weight", {dim, hp.ffn_dim});
    }
    w.layers.push_back(lw);
  }
  w.output_norm = expect("model.norm.weight", {dim});
  w.tied_output = ckpt.find("lm_head.weight") == nullptr;
  w.output = w.tied_output ? w.token_embd : expect("lm_head.weight", {hp.vocab_size, dim});
  return w;
}

}  // namespace loom
