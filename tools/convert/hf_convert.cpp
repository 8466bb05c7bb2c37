#include "tools/convert/hf_convert.hpp"

#include <cstring>
#include <filesystem>

#include "core/common/error.hpp"
#include "core/executor/hf_model.hpp"
#include "core/executor/model_arch.hpp"
#include "loom/sdk_half.hpp"
#include "tools/convert/hf_tokenizer_gguf.hpp"

namespace loom::convert {
namespace {

// A safetensors tensor's values as f32 (f32, f16 and bf16 stored).
std::vector<float> read_f32(const SafetensorsTensor& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  std::vector<float> out(static_cast<size_t>(n));
  const auto* bytes = static_cast<const uint8_t*>(t.data);
  if (t.dtype == LOOM_DTYPE_F32) {
    std::memcpy(out.data(), bytes, out.size() * sizeof(float));
  } else if (t.dtype == LOOM_DTYPE_F16 || t.dtype == LOOM_DTYPE_BF16) {
    for (size_t i = 0; i < out.size(); ++i) {
      uint16_t h;
      std::memcpy(&h, bytes + 2 * i, 2);
      out[i] = t.dtype == LOOM_DTYPE_F16 ? sdk::f16_to_f32(h) : sdk::bf16_to_f32(h);
    }
  } else {
    throw Error(t.file + ": tensor " + t.name + ": dtype " + t.dtype_name + " cannot be converted (F32, F16, BF16)",
                LOOM_ERR_UNSUPPORTED);
  }
  return out;
}

// How one HF tensor (or a layer's experts, stacked) becomes its GGUF tensor.
struct TensorPlan {
  std::string hf_name;
  int64_t permute_heads = 0;  // > 0: interleave RoPE rows of this many heads
  std::vector<std::string> experts = {};  // non-empty: these HF tensors stacked as [n_experts, rows, cols]
  bool squeeze = false;       // [1, n] stored as [n] (the shared expert's gate, as llama.cpp has it)
};

// A layer's MoE tensors in llama.cpp's order: the router, the stacked gate, down and up experts,
// and the shared expert with its gate.
void plan_experts(const SafetensorsCheckpoint& ckpt, const std::string& p, const LlamaHparams& hp,
                  std::vector<TensorPlan>& plan) {
  const bool mixtral = ckpt.find(p + "block_sparse_moe.gate.weight") != nullptr;
  const std::string group = p + (mixtral ? "block_sparse_moe." : "mlp.");
  plan.push_back({group + "gate.weight"});
  const char* const kParts[][2] = {{"w1", "gate_proj"}, {"w2", "down_proj"}, {"w3", "up_proj"}};
  for (const auto& part : kParts) {
    TensorPlan stacked;
    for (int32_t e = 0; e < hp.n_experts; ++e)
      stacked.experts.push_back(group + "experts." + std::to_string(e) + "." + part[mixtral ? 0 : 1] + ".weight");
    stacked.hf_name = stacked.experts.front();
    plan.push_back(std::move(stacked));
  }
  if (hp.shared_ffn_dim == 0) return;
  for (const char* t : {"shared_expert.gate_proj.weight", "shared_expert.up_proj.weight", "shared_expert.down_proj.weight"})
    plan.push_back({group + t});
  plan.push_back({.hf_name = group + "shared_expert_gate.weight", .squeeze = true});
}

void add_moe_metadata(GgufWriter& w, const std::string& a, const LlamaHparams& hp) {
  if (!hp.is_moe()) return;
  w.set_u32(a + "expert_count", static_cast<uint32_t>(hp.n_experts));
  w.set_u32(a + "expert_used_count", static_cast<uint32_t>(hp.n_experts_used));
  w.set_u32(a + "expert_feed_forward_length", static_cast<uint32_t>(hp.expert_ffn_dim));
  if (hp.shared_ffn_dim > 0)
    w.set_u32(a + "expert_shared_feed_forward_length", static_cast<uint32_t>(hp.shared_ffn_dim));
  w.set_bool(a + "expert_weights_norm", hp.norm_topk);
}

void add_rope_metadata(GgufWriter& w, const std::string& a, const LlamaHparams& hp) {
  w.set_f32(a + "rope.freq_base", hp.rope_freq_base);
  const RopeScaling& s = hp.rope_scaling;
  if (s.type == "none") return;
  if (s.type == "linear") {
    w.set_string(a + "rope.scaling.type", "linear");
    w.set_f32(a + "rope.scaling.factor", static_cast<float>(s.factor));
  } else if (s.type == "yarn") {
    if (!s.truncate)
      throw Error("config.json: rope_scaling yarn with truncate = false has no GGUF spelling", LOOM_ERR_UNSUPPORTED);
    w.set_string(a + "rope.scaling.type", "yarn");
    w.set_f32(a + "rope.scaling.factor", static_cast<float>(s.factor));
    w.set_u32(a + "rope.scaling.original_context_length", static_cast<uint32_t>(s.original_max_position));
    if (s.attention_factor != 0.0) w.set_f32(a + "rope.scaling.attn_factor", static_cast<float>(s.attention_factor));
    w.set_f32(a + "rope.scaling.yarn_beta_fast", static_cast<float>(s.beta_fast));
    w.set_f32(a + "rope.scaling.yarn_beta_slow", static_cast<float>(s.beta_slow));
  } else if (s.type != "llama3") {  // llama3: the rope_freqs.weight tensor (add_rope_freqs)
    throw Error("config.json: rope_scaling type \"" + s.type + "\" has no GGUF spelling (none, linear, yarn, llama3)",
                LOOM_ERR_UNSUPPORTED);
  }
}

// Llama 3 scaling as llama.cpp stores it: per-frequency divisors of the unscaled frequencies.
void add_rope_freqs(GgufWriter& w, const LlamaHparams& hp) {
  if (hp.rope_scaling.type != "llama3") return;
  const std::vector<double> base = rope_inv_freq(hp.rope_dim, hp.rope_freq_base, RopeScaling{});
  const std::vector<double> scaled = rope_inv_freq(hp.rope_dim, hp.rope_freq_base, hp.rope_scaling);
  std::vector<float> divisors(base.size());
  for (size_t i = 0; i < base.size(); ++i) divisors[i] = static_cast<float>(base[i] / scaled[i]);
  w.add_tensor_f32("rope_freqs.weight", LOOM_DTYPE_F32, {static_cast<int64_t>(divisors.size())}, divisors);
}

}  // namespace

void permute_rows_for_interleaved_rope(std::vector<float>& values, int64_t n_heads, int64_t head_dim, int64_t cols) {
  if (head_dim % 2 != 0 || static_cast<int64_t>(values.size()) != n_heads * head_dim * cols)
    throw Error("permute_rows_for_interleaved_rope: " + std::to_string(values.size()) + " values are not " +
                std::to_string(n_heads) + " heads x " + std::to_string(head_dim) + " rows x " + std::to_string(cols));
  const int64_t half = head_dim / 2;
  std::vector<float> head(static_cast<size_t>(head_dim * cols));  // [head_dim, cols]
  for (int64_t h = 0; h < n_heads; ++h) {
    float* rows = values.data() + h * head_dim * cols;
    std::memcpy(head.data(), rows, head.size() * sizeof(float));
    for (int64_t i = 0; i < half; ++i) {
      std::memcpy(rows + (2 * i) * cols, head.data() + i * cols, static_cast<size_t>(cols) * sizeof(float));
      std::memcpy(rows + (2 * i + 1) * cols, head.data() + (i + half) * cols, static_cast<size_t>(cols) * sizeof(float));
    }
  }
}

GgufWriter hf_to_gguf(const ModelSource& src, const HfConvertOptions& opts, std::vector<std::string>* notes) {
  const SafetensorsCheckpoint* ckpt = src.safetensors();
  if (ckpt == nullptr) throw Error(src.path() + ": not a Hugging Face directory");
  if (opts.dtype != LOOM_DTYPE_F32 && opts.dtype != LOOM_DTYPE_F16 && opts.dtype != LOOM_DTYPE_BF16)
    throw Error("hf_to_gguf: dtype must be f32, f16 or bf16");
  const LlamaHparams& hp = src.hparams();
  const ArchSpec* arch = find_arch_by_name(hp.architecture);
  if (arch == nullptr) throw Error(src.path() + ": architecture " + hp.architecture + " has no GGUF spelling");
  const bool interleave = arch->gguf_rope == RopeStyle::kInterleaved;
  if (interleave && hp.rope_dim != hp.head_dim)
    throw Error(src.path() + ": partial rotary (" + std::to_string(hp.rope_dim) + " of " + std::to_string(hp.head_dim) +
                " dims) cannot be stored in the interleaved " + arch->gguf_arch + " layout", LOOM_ERR_UNSUPPORTED);

  GgufWriter w;
  const std::string a = std::string(arch->gguf_arch) + ".";
  w.set_string("general.architecture", arch->gguf_arch);
  w.set_string("general.name", !opts.name.empty() ? opts.name
                                                  : std::filesystem::path(src.path()).lexically_normal().filename().string());
  w.set_u32(a + "context_length", static_cast<uint32_t>(hp.context_length));
  w.set_u32(a + "embedding_length", static_cast<uint32_t>(hp.dim));
  w.set_u32(a + "block_count", static_cast<uint32_t>(hp.n_layers));
  w.set_u32(a + "feed_forward_length", static_cast<uint32_t>(hp.ffn_dim));
  w.set_u32(a + "attention.head_count", static_cast<uint32_t>(hp.n_heads));
  w.set_u32(a + "attention.head_count_kv", static_cast<uint32_t>(hp.n_kv_heads));
  w.set_u32(a + "attention.key_length", static_cast<uint32_t>(hp.head_dim));
  w.set_u32(a + "attention.value_length", static_cast<uint32_t>(hp.head_dim));
  w.set_u32(a + "rope.dimension_count", static_cast<uint32_t>(hp.rope_dim));
  w.set_f32(a + "attention.layer_norm_rms_epsilon", hp.rms_eps);
  add_rope_metadata(w, a, hp);
  add_moe_metadata(w, a, hp);
  if (hp.sliding_window > 0) {
    w.set_u32(a + "attention.sliding_window", static_cast<uint32_t>(hp.sliding_window));
    if (notes && hp.sliding_window < hp.context_length)
      notes->push_back("sliding_window " + std::to_string(hp.sliding_window) + " is written as " + a +
                       "attention.sliding_window, which the llama GGUF loaders (Loom's, llama.cpp's) do not apply");
  }

  if (std::filesystem::exists(src.path() + "/tokenizer.json")) {
    const auto tok = src.load_tokenizer();
    for (auto& [key, value] : hf_tokenizer_metadata(src.path(), hp.vocab_size, *tok, src.eos_token_ids()))
      w.set(key, std::move(value));
  } else if (notes) {
    notes->push_back("no tokenizer.json in " + src.path() + ": the GGUF holds no tokenizer");
  }
  if (!src.chat_template().empty()) w.set_string("tokenizer.chat_template", src.chat_template());

  // Tensors in llama.cpp's order; names and shapes as load_hf_weights checked them.
  std::vector<TensorPlan> plan = {{"model.embed_tokens.weight"}};
  static const char* const kLayerTensors[] = {
      "input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.q_proj.bias",  "self_attn.k_proj.weight",
      "self_attn.k_proj.bias",  "self_attn.v_proj.weight", "self_attn.v_proj.bias",  "self_attn.o_proj.weight",
      "self_attn.q_norm.weight", "self_attn.k_norm.weight", "post_attention_layernorm.weight",
      "mlp.gate_proj.weight",   "mlp.up_proj.weight",      "mlp.down_proj.weight"};
  for (int32_t l = 0; l < hp.n_layers; ++l) {
    for (const char* t : kLayerTensors) {
      const std::string name = "model.layers." + std::to_string(l) + "." + t;
      if (ckpt->find(name) == nullptr) continue;  // optional ones (bias, qk-norm) by family
      int64_t heads = 0;
      if (interleave && std::strcmp(t, "self_attn.q_proj.weight") == 0) heads = hp.n_heads;
      if (interleave && std::strcmp(t, "self_attn.k_proj.weight") == 0) heads = hp.n_kv_heads;
      if (interleave && (std::strcmp(t, "self_attn.q_proj.bias") == 0 || std::strcmp(t, "self_attn.k_proj.bias") == 0))
        throw Error(src.path() + ": q/k biases in the interleaved layout are not supported", LOOM_ERR_UNSUPPORTED);
      plan.push_back({name, heads});
    }
    if (hp.is_moe()) plan_experts(*ckpt, "model.layers." + std::to_string(l) + ".", hp, plan);
  }
  plan.push_back({"model.norm.weight"});
  if (!src.weights().tied_output) plan.push_back({"lm_head.weight"});
  add_rope_freqs(w, hp);

  for (const TensorPlan& p : plan) {
    std::vector<const SafetensorsTensor*> parts;
    for (const std::string& name : p.experts.empty() ? std::vector<std::string>{p.hf_name} : p.experts) {
      parts.push_back(ckpt->find(name));
      if (parts.back() == nullptr) throw Error(src.path() + ": tensor " + name + " is missing");
    }
    const SafetensorsTensor* t = parts.front();
    std::vector<int64_t> dims(t->shape.rbegin(), t->shape.rend());  // GGUF: innermost first
    if (!p.experts.empty()) dims.push_back(static_cast<int64_t>(parts.size()));
    if (p.squeeze && dims.size() == 2 && dims[1] == 1) dims.pop_back();
    const loom_dtype dtype = dims.size() >= 2 ? opts.dtype : LOOM_DTYPE_F32;
    const int64_t heads = p.permute_heads, head_dim = hp.head_dim;
    w.add_tensor(hf_to_gguf_tensor_name(p.hf_name), dtype, dims, [parts, heads, head_dim, dtype](GgufTensorSink& sink) {
      for (const SafetensorsTensor* part : parts) {  // experts one after another: [n_experts, rows, cols]
        std::vector<float> values = read_f32(*part);
        if (heads > 0) permute_rows_for_interleaved_rope(values, heads, head_dim, part->shape.back());
        std::vector<uint8_t> bytes;
        encode_f32(values, dtype, bytes);
        sink.write(bytes.data(), bytes.size());
      }
    });
  }
  return w;
}

}  // namespace loom::convert
