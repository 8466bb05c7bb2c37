#include "core/executor/llama_model.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/common/error.hpp"
#include "loom/sdk_dtype.hpp"

namespace loom {
namespace {

int32_t positive_int(const GgufFile& file, const std::string& key, int64_t value) {
  if (value <= 0 || value > INT32_MAX)
    throw Error(file.path() + ": " + key + " = " + std::to_string(value) + " must be a positive 32-bit integer");
  return static_cast<int32_t>(value);
}

int32_t required_int(const GgufFile& file, const std::string& key) {
  const GgufValue* v = file.find(key);
  if (v == nullptr) throw Error(file.path() + ": metadata key " + key + " is missing");
  return positive_int(file, key, v->as_int());
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// The tensor `name` with Loom shape `shape` (outermost first).
loom_tensor_view expect(const GgufFile& file, const std::string& name, const std::vector<int64_t>& shape) {
  const GgufTensorInfo* info = file.find_tensor(name);
  if (info == nullptr) throw Error(file.path() + ": tensor " + name + " is missing");
  std::vector<int64_t> have(info->dims.rbegin(), info->dims.rend());  // outermost first
  while (have.size() > shape.size() && have.front() == 1) have.erase(have.begin());
  if (have != shape)
    throw Error(file.path() + ": tensor " + name + " has shape " + shape_str(have) + ", expected " + shape_str(shape) +
                " from the model's hyperparameters");
  return gguf_tensor_view(*info);
}

// A weight matrix [rows, cols]. Besides float and GGUF block types, a matrix may be stored
// pre-quantized by loom-convert in integer words (I8, I32: int8, fp8 bytes, packed int4) whose
// column count depends on the packing; only its rows are checked here and the quantization
// plugin, which knows the packing, checks the rest against the logical shape.
loom_tensor_view expect_matrix(const GgufFile& file, const std::string& name, int64_t rows, int64_t cols) {
  const GgufTensorInfo* info = file.find_tensor(name);
  if (info != nullptr && (info->dtype == LOOM_DTYPE_I8 || info->dtype == LOOM_DTYPE_I32) && info->dims.size() == 2) {
    if (static_cast<int64_t>(info->dims[1]) != rows)
      throw Error(file.path() + ": tensor " + name + " has " + std::to_string(info->dims[1]) + " rows, expected " +
                  std::to_string(rows) + " from the model's hyperparameters");
    return gguf_tensor_view(*info);
  }
  return expect(file, name, {rows, cols});
}

// Interleaved local/global layers (Gemma 3): which layers are windowed, from the period (or the
// per-layer booleans) of <arch>.attention.sliding_window_pattern, and the local RoPE base.
void read_local_layers(const GgufFile& file, const ArchSpec& arch, LlamaHparams& hp) {
  const std::string a = hp.architecture + ".";
  const int32_t window = hp.sliding_window;
  hp.sliding_window = 0;  // not Mistral's every-layer window
  if (window <= 0) return;  // no window stated: every layer global
  hp.layer_window.assign(static_cast<size_t>(hp.n_layers), 0);
  const std::string key = a + "attention.sliding_window_pattern";
  const GgufValue* pattern = file.find(key);
  if (pattern != nullptr && pattern->type == GgufValueType::kArray) {
    const GgufArray& flags = pattern->as_array();
    if (flags.items.size() != static_cast<size_t>(hp.n_layers))
      throw Error(file.path() + ": " + key + " has " + std::to_string(flags.items.size()) + " entries for " +
                  std::to_string(hp.n_layers) + " layers");
    for (int32_t l = 0; l < hp.n_layers; ++l)
      if (flags.items[static_cast<size_t>(l)].as_bool()) hp.layer_window[static_cast<size_t>(l)] = window;
  } else {
    const int64_t period = pattern != nullptr ? pattern->as_int() : arch.local_period;
    if (period < 0) throw Error(file.path() + ": " + key + " = " + std::to_string(period) + " must not be negative");
    // Period p: layers p-1, 2p-1, ... are global, the others local (0: every layer local).
    for (int32_t l = 0; l < hp.n_layers; ++l)
      if (period == 0 || l % period < period - 1) hp.layer_window[static_cast<size_t>(l)] = window;
  }
  hp.rope_freq_base_local = static_cast<float>(file.get_float(a + "rope.freq_base_swa", arch.local_rope_base));
  if (!(hp.rope_freq_base_local > 0.0f)) throw Error(file.path() + ": " + a + "rope.freq_base_swa must be positive");
  // Gemma 3 27B scales queries by 1/sqrt(dim / heads) rather than 1/sqrt(head_dim) (llama.cpp and
  // gemma_pytorch key it on that size, 62 layers); every other size has query_pre_attn_scalar = head_dim.
  if (hp.architecture == "gemma3" && hp.n_layers == 62)
    hp.attention_scale = 1.0f / std::sqrt(static_cast<float>(hp.dim / hp.n_heads));
}

// A layer's experts tensor [n_experts, rows, cols] (GGUF ffn_*_exps) as one [rows, cols] view per
// expert: each expert's rows are contiguous, so its slice starts rows x (bytes of a row) further.
std::vector<loom_tensor_view> expert_slices(const GgufFile& file, const std::string& name, int64_t n_experts,
                                            int64_t rows, int64_t cols) {
  const loom_tensor_view all = expect(file, name, {n_experts, rows, cols});
  const sdk::DtypeInfo t = sdk::dtype_info(all.dtype);
  if (t.block_size == 0 || cols % t.block_size != 0)
    throw Error(file.path() + ": tensor " + name + ": rows of " + std::to_string(cols) + " " + sdk::type_name(all.dtype) +
                " values are not whole blocks", LOOM_ERR_UNSUPPORTED);
  const int64_t slice_bytes = rows * (cols / t.block_size) * t.block_bytes;
  std::vector<loom_tensor_view> out;
  for (int64_t e = 0; e < n_experts; ++e) {
    loom_tensor_view v = all;
    v.data = static_cast<uint8_t*>(all.data) + e * slice_bytes;
    v.ndim = 2;
    v.shape[0] = rows;
    v.shape[1] = cols;
    v.shape[2] = 1;
    v.strides[0] = cols;
    v.strides[1] = 1;
    v.strides[2] = 1;
    out.push_back(v);
  }
  return out;
}

// The experts of layer prefix `p` (llama.cpp's tensor names) and, with a shared expert, its dense
// MLP and gate: the shared gate is stored [dim] and viewed [1, dim], the linear it is.
void load_experts(const GgufFile& file, const std::string& p, const LlamaHparams& hp, LlamaLayerWeights& lw) {
  const int64_t dim = hp.dim, e = hp.n_experts, ff = hp.expert_ffn_dim;
  lw.router = expect(file, p + "ffn_gate_inp.weight", {e, dim});
  lw.exp_gate = expert_slices(file, p + "ffn_gate_exps.weight", e, ff, dim);
  lw.exp_up = expert_slices(file, p + "ffn_up_exps.weight", e, ff, dim);
  lw.exp_down = expert_slices(file, p + "ffn_down_exps.weight", e, dim, ff);
  if (hp.shared_ffn_dim == 0) return;
  lw.sh_gate = expect_matrix(file, p + "ffn_gate_shexp.weight", hp.shared_ffn_dim, dim);
  lw.sh_up = expect_matrix(file, p + "ffn_up_shexp.weight", hp.shared_ffn_dim, dim);
  lw.sh_down = expect_matrix(file, p + "ffn_down_shexp.weight", dim, hp.shared_ffn_dim);
  lw.sh_router = expect(file, p + "ffn_gate_inp_shexp.weight", {dim});
  lw.sh_router.ndim = 2;
  lw.sh_router.shape[0] = 1;
  lw.sh_router.shape[1] = dim;
  lw.sh_router.strides[0] = dim;
  lw.sh_router.strides[1] = 1;
}

// <arch>.expert_* keys of a mixture-of-experts family.
void read_moe(const GgufFile& file, const ArchSpec& arch, LlamaHparams& hp) {
  const std::string a = hp.architecture + ".";
  hp.n_experts = required_int(file, a + "expert_count");
  hp.n_experts_used = required_int(file, a + "expert_used_count");
  hp.expert_ffn_dim = positive_int(file, a + "expert_feed_forward_length",
                                   file.get_int(a + "expert_feed_forward_length", hp.ffn_dim));
  if (arch.moe.shared_expert) hp.shared_ffn_dim = required_int(file, a + "expert_shared_feed_forward_length");
  hp.norm_topk = file.get_bool(a + "expert_weights_norm", arch.moe.norm_topk);
  check_moe_hparams(file.path(), hp);
}

}  // namespace

void check_moe_hparams(const std::string& where, const LlamaHparams& hp) {
  if (hp.n_experts_used > hp.n_experts)
    throw Error(where + ": " + std::to_string(hp.n_experts_used) + " experts used per token out of " +
                std::to_string(hp.n_experts) + " experts");
  if (hp.expert_ffn_dim <= 0) throw Error(where + ": the experts' feed-forward size must be positive");
}

std::vector<double> llama_rope_inv_freq(const LlamaHparams& hp) {
  std::vector<double> inv = rope_inv_freq(hp.rope_dim, hp.rope_freq_base, hp.rope_scaling);
  for (size_t i = 0; i < hp.rope_freq_factors.size() && i < inv.size(); ++i) {
    const float f = hp.rope_freq_factors[i];
    if (!(f > 0.0f)) throw Error("rope_freqs.weight[" + std::to_string(i) + "] = " + std::to_string(f) + " must be positive");
    inv[i] /= f;
  }
  return inv;
}

bool LlamaHparams::has_windowed_layers() const {
  for (int32_t w : layer_window)
    if (w > 0) return true;
  return false;
}

float LlamaHparams::softmax_scale() const {
  return attention_scale > 0.0f ? attention_scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
}

std::vector<double> llama_rope_inv_freq_local(const LlamaHparams& hp) {
  const double base = hp.rope_freq_base_local > 0.0f ? hp.rope_freq_base_local : hp.rope_freq_base;
  return rope_inv_freq(hp.rope_dim, base, RopeScaling{});
}

loom_tensor_view gguf_tensor_view(const GgufTensorInfo& info) {
  if (info.dims.empty() || info.dims.size() > LOOM_MAX_DIMS)
    throw Error("tensor " + info.name + " has " + std::to_string(info.dims.size()) + " dims");
  loom_tensor_view v{};
  v.data = const_cast<void*>(info.data);  // read-only mapping; consumers never write weights
  v.dtype = info.dtype;
  v.ndim = static_cast<int32_t>(info.dims.size());
  v.device = loom_device{LOOM_DEVICE_CPU, 0};
  for (int32_t d = 0; d < LOOM_MAX_DIMS; ++d) {
    v.shape[d] = 1;
    v.strides[d] = 1;
  }
  for (int32_t d = 0; d < v.ndim; ++d) v.shape[d] = info.dims[info.dims.size() - 1 - static_cast<size_t>(d)];
  for (int32_t d = v.ndim - 2; d >= 0; --d) v.strides[d] = v.strides[d + 1] * v.shape[d + 1];
  return v;
}

LlamaHparams read_llama_hparams(const GgufFile& file) {
  LlamaHparams hp;
  hp.architecture = file.get_string("general.architecture", "");
  const ArchSpec* arch = find_arch_for_gguf(hp.architecture, file.get_int(hp.architecture + ".expert_count", 0) > 0);
  if (arch == nullptr)
    throw Error(file.path() + ": general.architecture \"" + hp.architecture + "\" is not supported (supported: " +
                supported_architectures(false) + ")", LOOM_ERR_UNSUPPORTED);
  hp.qkv_bias = arch->qkv_bias;
  hp.qk_norm = arch->qk_norm;
  hp.qk_norm_whole = arch->qk_norm_whole;
  hp.rope_style = arch->gguf_rope;
  hp.norms = arch->norms;
  hp.mlp = arch->mlp;
  const std::string a = hp.architecture + ".";
  hp.dim = required_int(file, a + "embedding_length");
  hp.n_layers = required_int(file, a + "block_count");
  hp.ffn_dim = required_int(file, a + "feed_forward_length");
  hp.n_heads = required_int(file, a + "attention.head_count");
  hp.n_kv_heads = positive_int(file, a + "attention.head_count_kv", file.get_int(a + "attention.head_count_kv", hp.n_heads));
  hp.context_length = required_int(file, a + "context_length");
  const bool explicit_head_dim = file.find(a + "attention.key_length") != nullptr;
  if (!explicit_head_dim && hp.dim % hp.n_heads != 0)
    throw Error(file.path() + ": " + a + "embedding_length " + std::to_string(hp.dim) + " is not a multiple of " + a +
                "attention.head_count " + std::to_string(hp.n_heads));
  if (hp.n_heads % hp.n_kv_heads != 0)
    throw Error(file.path() + ": " + a + "attention.head_count " + std::to_string(hp.n_heads) + " is not a multiple of " +
                a + "attention.head_count_kv " + std::to_string(hp.n_kv_heads));
  // Qwen3 states its head size; others derive it.
  hp.head_dim = positive_int(file, a + "attention.key_length", file.get_int(a + "attention.key_length", hp.dim / hp.n_heads));
  const int64_t value_length = file.get_int(a + "attention.value_length", hp.head_dim);
  if (value_length != hp.head_dim)
    throw Error(file.path() + ": " + a + "attention.value_length = " + std::to_string(value_length) +
                " differs from attention.key_length " + std::to_string(hp.head_dim) + "; not supported",
                LOOM_ERR_UNSUPPORTED);
  hp.rope_dim = positive_int(file, a + "rope.dimension_count", file.get_int(a + "rope.dimension_count", hp.head_dim));
  if (hp.rope_dim > hp.head_dim || hp.rope_dim % 2 != 0)
    throw Error(file.path() + ": " + a + "rope.dimension_count " + std::to_string(hp.rope_dim) +
                " must be even and at most the head size " + std::to_string(hp.head_dim));
  hp.rope_freq_base = static_cast<float>(file.get_float(a + "rope.freq_base", 10000.0));
  hp.rms_eps = static_cast<float>(file.get_float(a + "attention.layer_norm_rms_epsilon", 1e-5));
  // Mistral-style GGUFs state their attention window; the runtime caps the context to it.
  hp.sliding_window = static_cast<int32_t>(std::clamp<int64_t>(file.get_int(a + "attention.sliding_window", 0), 0, INT32_MAX));
  if (arch->local_period > 0) read_local_layers(file, *arch, hp);
  if (arch->moe.experts) read_moe(file, *arch, hp);
  if (arch->embed_scale_sqrt_dim) hp.embed_scale = std::sqrt(static_cast<float>(hp.dim));
  hp.final_logit_softcap = static_cast<float>(file.get_float(a + "final_logit_softcapping", 0.0));
  if (hp.final_logit_softcap < 0.0f) throw Error(file.path() + ": " + a + "final_logit_softcapping must not be negative");
  if (!(hp.rope_freq_base > 0.0f)) throw Error(file.path() + ": " + a + "rope.freq_base must be positive");
  if (!(hp.rms_eps > 0.0f)) throw Error(file.path() + ": " + a + "attention.layer_norm_rms_epsilon must be positive");
  RopeScaling& rs = hp.rope_scaling;
  rs.type = file.get_string(a + "rope.scaling.type", "none");
  rs.factor = file.get_float(a + "rope.scaling.factor", 1.0);
  rs.original_max_position = file.get_int(a + "rope.scaling.original_context_length", hp.context_length);
  rs.attention_factor = file.get_float(a + "rope.scaling.attn_factor", 0.0);
  rs.beta_fast = file.get_float(a + "rope.scaling.yarn_beta_fast", 32.0);
  rs.beta_slow = file.get_float(a + "rope.scaling.yarn_beta_slow", 1.0);
  if (rs.type != "none" && rs.type != "linear" && rs.type != "yarn")
    throw Error(file.path() + ": " + a + "rope.scaling.type \"" + rs.type + "\" is not supported (none, linear, yarn)",
                LOOM_ERR_UNSUPPORTED);
  // Llama 3.1 in GGUF: the per-frequency divisors are a tensor rather than scaling parameters.
  if (const GgufTensorInfo* ff = file.find_tensor("rope_freqs.weight")) {
    if (ff->dtype != LOOM_DTYPE_F32 || ff->dims.size() != 1 || ff->dims[0] != hp.rope_dim / 2)
      throw Error(file.path() + ": tensor rope_freqs.weight must be f32 [" + std::to_string(hp.rope_dim / 2) + "]");
    const float* f = static_cast<const float*>(ff->data);
    hp.rope_freq_factors.assign(f, f + hp.rope_dim / 2);
  }
  (void)llama_rope_inv_freq(hp);  // refuses bad scaling parameters at load

  const GgufTensorInfo* embd = file.find_tensor("token_embd.weight");
  if (embd == nullptr) throw Error(file.path() + ": tensor token_embd.weight is missing");
  if (embd->dims.size() != 2 || embd->dims[0] != hp.dim)
    throw Error(file.path() + ": tensor token_embd.weight must have dims {" + std::to_string(hp.dim) + ", vocab}");
  hp.vocab_size = positive_int(file, "token_embd.weight rows", embd->dims[1]);
  return hp;
}

LlamaWeights load_llama_weights(const GgufFile& file) {
  LlamaWeights w;
  w.hparams = read_llama_hparams(file);
  const LlamaHparams& hp = w.hparams;
  const int64_t dim = hp.dim, q_dim = static_cast<int64_t>(hp.n_heads) * hp.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(hp.n_kv_heads) * hp.head_dim;
  w.token_embd = expect(file, "token_embd.weight", {hp.vocab_size, dim});
  for (int32_t l = 0; l < hp.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LlamaLayerWeights lw;
    lw.attn_norm = expect(file, p + "attn_norm.weight", {dim});
    lw.wq = expect_matrix(file, p + "attn_q.weight", q_dim, dim);
    lw.wk = expect_matrix(file, p + "attn_k.weight", kv_dim, dim);
    lw.wv = expect_matrix(file, p + "attn_v.weight", kv_dim, dim);
    lw.wo = expect_matrix(file, p + "attn_output.weight", dim, q_dim);
    if (hp.qkv_bias) {
      lw.bq = expect(file, p + "attn_q.bias", {q_dim});
      lw.bk = expect(file, p + "attn_k.bias", {kv_dim});
      lw.bv = expect(file, p + "attn_v.bias", {kv_dim});
    }
    if (hp.qk_norm) {
      lw.q_norm = expect(file, p + "attn_q_norm.weight", {hp.qk_norm_whole ? q_dim : hp.head_dim});
      lw.k_norm = expect(file, p + "attn_k_norm.weight", {hp.qk_norm_whole ? kv_dim : hp.head_dim});
    }
    lw.ffn_norm = expect(file, p + "ffn_norm.weight", {dim});
    if (hp.norms == NormPlacement::kSandwich) {
      lw.post_attn_norm = expect(file, p + "post_attention_norm.weight", {dim});
      lw.post_ffn_norm = expect(file, p + "post_ffw_norm.weight", {dim});
    }
    if (hp.is_moe()) {
      load_experts(file, p, hp, lw);
    } else {
      lw.w_gate = expect_matrix(file, p + "ffn_gate.weight", hp.ffn_dim, dim);
      lw.w_up = expect_matrix(file, p + "ffn_up.weight", hp.ffn_dim, dim);
      lw.w_down = expect_matrix(file, p + "ffn_down.weight", dim, hp.ffn_dim);
    }
    w.layers.push_back(lw);
  }
  w.output_norm = expect(file, "output_norm.weight", {dim});
  w.tied_output = file.find_tensor("output.weight") == nullptr;
  w.output = w.tied_output ? w.token_embd : expect_matrix(file, "output.weight", hp.vocab_size, dim);
  w.source = &file;
  return w;
}

}  // namespace loom
