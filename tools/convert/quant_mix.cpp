#include "tools/convert/quant_mix.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "core/common/error.hpp"
#include "loom/sdk_dtype.hpp"
#include "tools/convert/gguf_rewrite.hpp"
#include "tools/convert/weight_quantizer.hpp"

namespace loom::convert {
namespace {

// llama.cpp's tensor categories (tensor_get_category), tested in its order.
enum class Category { kOutput, kTokenEmbd, kAttnV, kFfnDown, kOther };

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

Category category_of(const std::string& name) {
  if (name == "output.weight") return Category::kOutput;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Category::kTokenEmbd;
  // attn_qkv and attn_kv_b are treated as attn_v: the value projection is inside them.
  if (contains(name, "attn_qkv.weight") || contains(name, "attn_kv_b.weight") || contains(name, "attn_v.weight"))
    return Category::kAttnV;
  // attn_k/q/output, ffn_up and ffn_gate are categories of their own in llama.cpp, but no rule of
  // these two mixes names them on a dense model.
  if (contains(name, "attn_k.weight") || contains(name, "attn_q.weight") || contains(name, "attn_output.weight") ||
      contains(name, "ffn_up") || contains(name, "ffn_gate"))
    return Category::kOther;
  if (contains(name, "ffn_down")) return Category::kFfnDown;
  return Category::kOther;
}

// ggml_n_dims: trailing dimensions of 1 do not count.
size_t n_dims(const std::vector<int64_t>& dims) {
  size_t n = 1;
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d] > 1) n = d + 1;
  return n;
}

// tensor_allows_quantization, the parts that can apply to the architectures Loom reads.
bool allows_quantization(const GgufTensorInfo& t) {
  const std::string& n = t.name;
  if (n_dims(t.dims) < 2) return false;
  if (n.size() < 6 || n.compare(n.size() - 6, 6, "weight") != 0) return false;
  for (const char* never : {"_norm.weight", "ffn_gate_inp.weight", "ssm_conv1d", "attn_rel_b.weight", "altup",
                            "laurel", "per_layer_model_proj", "shortconv.conv.weight"})
    if (contains(n, never)) return false;
  return n != "position_embd.weight" && n != "token_types.weight";
}

bool use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

int64_t block_of(loom_dtype t) { return sdk::dtype_info(t).block_size; }

// llama.cpp's weights_map order: by the layer of "blk.N." (-1 for the others), then by name.
int layer_of(const std::string& name) {
  int layer = -1;
  if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) layer = -1;
  return layer;
}

// tensor_type_fallback for the types these mixes produce.
loom_dtype fallback(loom_dtype t, int64_t cols) {
  if (cols % block_of(t) == 0) return t;
  loom_dtype to = t;
  if (t == LOOM_DTYPE_Q4_K) to = LOOM_DTYPE_Q5_0;
  if (t == LOOM_DTYPE_Q5_K) to = LOOM_DTYPE_Q5_1;
  if (t == LOOM_DTYPE_Q6_K) to = LOOM_DTYPE_Q8_0;
  return cols % block_of(to) == 0 ? to : LOOM_DTYPE_F16;
}

}  // namespace

const std::vector<QuantMix>& quant_mixes() {
  static const std::vector<QuantMix> kAll = {{"q4_k_m", LOOM_DTYPE_Q4_K, 15}, {"q5_k_m", LOOM_DTYPE_Q5_K, 17}};
  return kAll;
}

const QuantMix* find_quant_mix(const std::string& name) {
  for (const QuantMix& m : quant_mixes())
    if (m.name == name) return &m;
  return nullptr;
}

MixModel mix_model(const GgufFile& file) {
  MixModel m;
  m.arch = file.get_string("general.architecture", "");
  m.n_layer = file.get_int(m.arch + ".block_count", 0);
  m.n_head = file.get_int(m.arch + ".attention.head_count", 0);
  m.n_head_kv = file.get_int(m.arch + ".attention.head_count_kv", m.n_head);
  m.n_expert = file.get_int(m.arch + ".expert_count", 0);
  return m;
}

std::vector<MixTensor> plan_mix(const std::vector<GgufTensorInfo>& tensors, const MixModel& model, const QuantMix& mix) {
  if (model.n_expert > 1)
    throw Error(mix.name + ": " + std::to_string(model.n_expert) +
                " experts: the mixes are written for dense models only (Loom runs no mixture-of-experts)");
  const bool q4 = mix.base == LOOM_DTYPE_Q4_K, falcon = model.arch == "falcon";
  // llama.cpp's LLM_TYPE_70B, the one model size its rules for these mixes look at.
  const bool is_70b = model.n_layer == 80 && ((model.arch == "llama" && model.n_head != model.n_head_kv) ||
                                              model.arch == "qwen2" || model.arch == "olmo" || model.arch == "deci");
  bool tied = true;
  int64_t n_attn_v = 0;
  for (const GgufTensorInfo& t : tensors) {
    const Category c = category_of(t.name);
    if (c == Category::kOutput) tied = false;
    if (c == Category::kAttnV) ++n_attn_v;
  }
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int la = layer_of(tensors[a].name), lb = layer_of(tensors[b].name);
    return la != lb ? la < lb : tensors[a].name < tensors[b].name;
  });

  std::vector<MixTensor> plan(tensors.size());
  int64_t i_attn_v = 0, i_ffn_down = 0;
  for (const size_t index : order) {
    const GgufTensorInfo& t = tensors[index];
    plan[index] = {t.dtype, ""};
    if (!allows_quantization(t)) continue;
    const Category c = category_of(t.name);
    const int64_t cols = t.dims[0];
    loom_dtype type = mix.base;
    if (c == Category::kOutput || (tied && c == Category::kTokenEmbd)) {
      type = falcon || cols % block_of(mix.base) != 0 ? LOOM_DTYPE_Q8_0 : LOOM_DTYPE_Q6_K;
    } else if (c == Category::kAttnV) {
      if (use_more_bits(i_attn_v, n_attn_v)) type = LOOM_DTYPE_Q6_K;
      if (is_70b && type == LOOM_DTYPE_Q4_K) type = LOOM_DTYPE_Q5_K;
      ++i_attn_v;
    } else if (c == Category::kFfnDown) {
      const int64_t i = i_ffn_down, n = model.n_layer;
      if (q4 && falcon)
        type = i < n / 16 ? LOOM_DTYPE_Q6_K : use_more_bits(i, n) ? LOOM_DTYPE_Q5_K : LOOM_DTYPE_Q4_K;
      else if (use_more_bits(i, n))
        type = LOOM_DTYPE_Q6_K;
      ++i_ffn_down;
    }
    const loom_dtype fitted = fallback(type, cols);
    if (!is_float_type(t.dtype)) {
      plan[index].note = t.name + ": already " + sdk::type_name(t.dtype) + ", kept as it is (not requantized to " +
                         sdk::type_name(fitted) + ")";
      continue;
    }
    plan[index].dtype = fitted;
    if (fitted != type)
      plan[index].note = t.name + ": rows of " + std::to_string(cols) + " values are not whole " +
                         sdk::type_name(type) + " blocks, written as " + sdk::type_name(fitted);
  }
  return plan;
}

GgufWriter quantize_gguf_mix(const GgufFile& in, const QuantMix& mix, std::vector<std::string>* notes) {
  const std::vector<MixTensor> plan = plan_mix(in.tensors(), mix_model(in), mix);
  std::vector<loom_dtype> dtypes;
  for (size_t i = 0; i < plan.size(); ++i) {
    const loom_dtype t = plan[i].dtype;
    if (t != in.tensors()[i].dtype && !is_float_type(t) && !can_quantize(t)) {
      const std::string& name = in.tensors()[i].name;
      // The note reads "<name>: <reason>"; the message names the tensor once.
      const std::string why = plan[i].note.empty() ? "" : " (" + plan[i].note.substr(name.size() + 2) + ")";
      std::string writable;
      for (const WeightQuantizer& q : weight_quantizers()) writable += (writable.empty() ? "" : ", ") + q.name;
      throw Error(mix.name + " needs " + sdk::type_name(t) + " for " + name + why + "; this build cannot write " +
                  sdk::type_name(t) + " (it writes " + writable + ")");
    }
    if (!plan[i].note.empty() && notes != nullptr) notes->push_back(plan[i].note);
    dtypes.push_back(t);
  }
  return rewrite_gguf(in, dtypes, mix.file_type);
}

}  // namespace loom::convert
