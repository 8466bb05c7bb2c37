#include "core/formats/llama_gguf_export.hpp"

#include <cmath>
#include <memory>

#include "core/common/error.hpp"

namespace loom {
namespace {

constexpr size_t kChunk = size_t{1} << 16;  // floats converted per write when streaming

void check_weight_dtype(loom_dtype dtype) {
  if (dtype != LOOM_DTYPE_F32 && dtype != LOOM_DTYPE_F16 && dtype != LOOM_DTYPE_BF16) {
    throw Error(std::string("weight dtype must be f32, f16 or bf16, not ") + dtype_name(dtype));
  }
}

// llama.cpp's general.file_type (LLAMA_FTYPE_*): ALL_F32 = 0, MOSTLY_F16 = 1, MOSTLY_BF16 = 32.
uint32_t file_type_of(loom_dtype dtype) {
  return dtype == LOOM_DTYPE_F16 ? 1u : dtype == LOOM_DTYPE_BF16 ? 32u : 0u;
}

// Streams f32 values as dtype in chunks, so no full-size converted copy exists.
GgufTensorFill encode_fill(std::span<const float> values, loom_dtype dtype) {
  return [values, dtype](GgufTensorSink& sink) {
    if (dtype == LOOM_DTYPE_F32) {
      sink.write(values.data(), values.size_bytes());
      return;
    }
    std::vector<uint8_t> buf;
    for (size_t i = 0; i < values.size(); i += kChunk) {
      buf.clear();
      encode_f32(values.subspan(i, std::min(kChunk, values.size() - i)), dtype, buf);
      sink.write(buf.data(), buf.size());
    }
  };
}

// Per-layer tensor names in llama.cpp's order.
std::string blk(int64_t layer, const char* what) { return "blk." + std::to_string(layer) + "." + what + ".weight"; }

// xoshiro256** seeded through splitmix64: fast enough to generate an 8B model while writing it.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& s : s_) {
      seed += 0x9e3779b97f4a7c15ull;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      s = z ^ (z >> 31);
    }
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [-1, 1).
  float symmetric() { return static_cast<float>(static_cast<int64_t>(next()) >> 40) * 0x1.0p-23f; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

GgufTensorFill random_fill(int64_t n, loom_dtype dtype, uint64_t seed, float stddev) {
  // Uniform on [-a, a] has standard deviation a / sqrt(3).
  const float a = stddev * std::sqrt(3.0f);
  return [n, dtype, seed, a](GgufTensorSink& sink) {
    Rng rng(seed);
    std::vector<float> vals;
    std::vector<uint8_t> buf;
    for (int64_t i = 0; i < n; i += static_cast<int64_t>(kChunk)) {
      vals.resize(static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(kChunk), n - i)));
      for (float& v : vals) v = a * rng.symmetric();
      buf.clear();
      encode_f32(vals, dtype, buf);
      sink.write(buf.data(), buf.size());
    }
  };
}

GgufTensorFill ones_fill(int64_t n) {
  return [n](GgufTensorSink& sink) {
    const std::vector<float> ones(static_cast<size_t>(n), 1.0f);
    sink.write(ones.data(), ones.size() * sizeof(float));
  };
}

}  // namespace

GgufMetadata tokenizer_metadata(const Llama2cTokenizer& tok) {
  std::vector<int32_t> types;
  types.reserve(tok.types.size());
  for (SpmTokenType t : tok.types) types.push_back(static_cast<int32_t>(t));
  GgufMetadata md;
  md.emplace_back("tokenizer.ggml.model", GgufValue::of_string("llama"));
  md.emplace_back("tokenizer.ggml.tokens", GgufValue::of_strings(tok.pieces));
  md.emplace_back("tokenizer.ggml.scores", GgufValue::of_f32s(tok.scores));
  md.emplace_back("tokenizer.ggml.token_type", GgufValue::of_i32s(types));
  const std::pair<const char*, int32_t> ids[] = {{"tokenizer.ggml.unknown_token_id", tok.unk_id},
                                                 {"tokenizer.ggml.bos_token_id", tok.bos_id},
                                                 {"tokenizer.ggml.eos_token_id", tok.eos_id}};
  for (const auto& [key, id] : ids) {
    if (id >= 0 && id < tok.size()) md.emplace_back(key, GgufValue::of_u32(static_cast<uint32_t>(id)));
  }
  md.emplace_back("tokenizer.ggml.add_bos_token", GgufValue::of_bool(true));
  md.emplace_back("tokenizer.ggml.add_eos_token", GgufValue::of_bool(false));
  return md;
}

GgufMetadata tokenizer_metadata(const GgufFile& file) {
  GgufMetadata md;
  for (const auto& [key, value] : file.metadata()) {
    if (key.rfind("tokenizer.", 0) == 0) md.emplace_back(key, value);
  }
  const GgufValue* tokens = file.find("tokenizer.ggml.tokens");
  if (tokens == nullptr || tokens->type != GgufValueType::kArray) {
    throw Error(file.path() + ": has no tokenizer (no tokenizer.ggml.tokens array)");
  }
  return md;
}

int64_t tokenizer_vocab_size(const GgufMetadata& tokenizer) {
  for (const auto& [key, value] : tokenizer) {
    if (key == "tokenizer.ggml.tokens") return static_cast<int64_t>(value.as_array().items.size());
  }
  throw Error("tokenizer metadata has no tokenizer.ggml.tokens");
}

void set_llama_metadata(GgufWriter& w, const LlamaShape& shape, const std::string& name, loom_dtype dtype) {
  shape.validate();
  if (shape.vocab_size <= 0) throw Error("model shape: vocab_size is not set");
  auto u32 = [](int64_t v, const char* what) {
    if (v > 0xffffffffLL) throw Error(std::string("model shape: ") + what + " " + std::to_string(v) + " exceeds uint32");
    return GgufValue::of_u32(static_cast<uint32_t>(v));
  };
  const std::string a = shape.arch + ".";
  w.set_string("general.architecture", shape.arch);
  w.set_string("general.name", name);
  w.set_u32("general.file_type", file_type_of(dtype));
  w.set(a + "context_length", u32(shape.context_length, "ctx"));
  w.set(a + "embedding_length", u32(shape.dim, "dim"));
  w.set(a + "feed_forward_length", u32(shape.hidden_dim, "hidden"));
  w.set(a + "block_count", u32(shape.n_layers, "layers"));
  w.set(a + "attention.head_count", u32(shape.n_heads, "heads"));
  w.set(a + "attention.head_count_kv", u32(shape.n_kv_heads, "kv_heads"));
  w.set(a + "rope.dimension_count", u32(shape.head_size(), "head size"));
  if (shape.head_dim > 0) {  // an explicit head size, as Gemma's GGUFs state it
    w.set(a + "attention.key_length", u32(shape.head_dim, "head_dim"));
    w.set(a + "attention.value_length", u32(shape.head_dim, "head_dim"));
  }
  if (shape.sliding_window > 0) {
    w.set(a + "attention.sliding_window", u32(shape.sliding_window, "sliding_window"));
    if (shape.window_period > 0) w.set(a + "attention.sliding_window_pattern", u32(shape.window_period, "period"));
  }
  if (shape.n_experts > 0) {  // Mixtral's keys: the experts' width is feed_forward_length
    w.set(a + "expert_count", u32(shape.n_experts, "experts"));
    w.set(a + "expert_used_count", u32(shape.n_experts_used, "experts used"));
  }
  w.set_f32(a + "attention.layer_norm_rms_epsilon", shape.rms_eps);
  if (shape.rope_freq_base) w.set_f32(a + "rope.freq_base", *shape.rope_freq_base);
  w.set(a + "vocab_size", u32(shape.vocab_size, "vocab"));
}

GgufWriter llama2c_to_gguf(const Llama2cCheckpoint& ck, const Llama2cTokenizer& tok,
                           const Llama2cConvertOptions& opts) {
  check_weight_dtype(opts.dtype);
  const Llama2cConfig& c = ck.config();
  if (tok.size() != c.vocab_size) {
    throw Error(ck.path() + ": vocab_size " + std::to_string(c.vocab_size) + " but the tokenizer has " +
                std::to_string(tok.size()) + " tokens");
  }
  LlamaShape shape;
  shape.dim = c.dim;
  shape.hidden_dim = c.hidden_dim;
  shape.n_layers = c.n_layers;
  shape.n_heads = c.n_heads;
  shape.n_kv_heads = c.n_kv_heads;
  shape.context_length = opts.context_length > 0 ? opts.context_length : c.seq_len;
  shape.vocab_size = c.vocab_size;
  shape.tied_output = c.shared_classifier;

  GgufWriter w;
  set_llama_metadata(w, shape, opts.name, opts.dtype);
  for (auto& [key, value] : tokenizer_metadata(tok)) w.set(key, std::move(value));

  const int64_t dim = c.dim, hidden = c.hidden_dim, kv_dim = c.kv_dim(), vocab = c.vocab_size;
  const loom_dtype mat = opts.dtype;
  // llama2.c stores matrices row-major [out, in] with the interleaved-pair RoPE layout GGUF
  // llama expects, so every array is copied as is (no transpose, no permutation).
  w.add_tensor("token_embd.weight", mat, {dim, vocab}, encode_fill(ck.token_embedding(), mat));
  w.add_tensor("output_norm.weight", LOOM_DTYPE_F32, {dim}, encode_fill(ck.rms_final(), LOOM_DTYPE_F32));
  if (!c.shared_classifier) w.add_tensor("output.weight", mat, {dim, vocab}, encode_fill(ck.wcls(), mat));
  for (int l = 0; l < c.n_layers; ++l) {
    w.add_tensor(blk(l, "attn_q"), mat, {dim, dim}, encode_fill(ck.wq(l), mat));
    w.add_tensor(blk(l, "attn_k"), mat, {dim, kv_dim}, encode_fill(ck.wk(l), mat));
    w.add_tensor(blk(l, "attn_v"), mat, {dim, kv_dim}, encode_fill(ck.wv(l), mat));
    w.add_tensor(blk(l, "attn_output"), mat, {dim, dim}, encode_fill(ck.wo(l), mat));
    w.add_tensor(blk(l, "attn_norm"), LOOM_DTYPE_F32, {dim}, encode_fill(ck.rms_att(l), LOOM_DTYPE_F32));
    w.add_tensor(blk(l, "ffn_gate"), mat, {dim, hidden}, encode_fill(ck.w1(l), mat));
    w.add_tensor(blk(l, "ffn_down"), mat, {hidden, dim}, encode_fill(ck.w2(l), mat));
    w.add_tensor(blk(l, "ffn_up"), mat, {dim, hidden}, encode_fill(ck.w3(l), mat));
    w.add_tensor(blk(l, "ffn_norm"), LOOM_DTYPE_F32, {dim}, encode_fill(ck.rms_ffn(l), LOOM_DTYPE_F32));
  }
  return w;
}

GgufWriter random_llama_gguf(const RandomLlamaOptions& opts, const GgufMetadata& tokenizer) {
  check_weight_dtype(opts.dtype);
  if (!(opts.init_std > 0.0f)) throw Error("random model: init_std must be positive");
  LlamaShape shape = opts.shape;
  shape.vocab_size = tokenizer_vocab_size(tokenizer);
  GgufWriter w;
  set_llama_metadata(w, shape, opts.name, opts.dtype);
  for (const auto& [key, value] : tokenizer) w.set(key, value);

  const int64_t dim = shape.dim, hidden = shape.hidden_dim, vocab = shape.vocab_size;
  const int64_t q_dim = shape.n_heads * shape.head_size(), kv_dim = shape.n_kv_heads * shape.head_size();
  const bool gemma = shape.arch == "gemma3";
  const loom_dtype mat = opts.dtype;
  // Each tensor gets its own stream (seed + index), so its bytes do not depend on the others.
  uint64_t index = 0;
  // GGUF dims innermost first: {in, out} for a matrix, {in, out, experts} for a layer's experts.
  auto tensor = [&](const std::string& name, loom_dtype dtype, std::vector<int64_t> dims) {
    const uint64_t seed = opts.seed * 0x100000001b3ull + (++index);
    int64_t n = 1;
    for (const int64_t d : dims) n *= d;
    w.add_tensor(name, dtype, std::move(dims), random_fill(n, dtype, seed, opts.init_std));
  };
  auto matrix = [&](const std::string& name, int64_t in, int64_t out) { tensor(name, mat, {in, out}); };
  // Ones: Llama's w, and Gemma's (1 + w) as its GGUFs store it, at w = 0.
  auto norm = [&](const std::string& name, int64_t n) { w.add_tensor(name, LOOM_DTYPE_F32, {n}, ones_fill(n)); };
  matrix("token_embd.weight", dim, vocab);
  norm("output_norm.weight", dim);
  if (!shape.tied_output) matrix("output.weight", dim, vocab);
  for (int64_t l = 0; l < shape.n_layers; ++l) {
    matrix(blk(l, "attn_q"), dim, q_dim);
    matrix(blk(l, "attn_k"), dim, kv_dim);
    matrix(blk(l, "attn_v"), dim, kv_dim);
    matrix(blk(l, "attn_output"), q_dim, dim);
    norm(blk(l, "attn_norm"), dim);
    if (shape.n_experts > 0) {
      // The router stays f32, as llama.cpp's converter and quantizer keep it.
      const int64_t e = shape.n_experts;
      tensor(blk(l, "ffn_gate_inp"), LOOM_DTYPE_F32, {dim, e});
      tensor(blk(l, "ffn_gate_exps"), mat, {dim, hidden, e});
      tensor(blk(l, "ffn_down_exps"), mat, {hidden, dim, e});
      tensor(blk(l, "ffn_up_exps"), mat, {dim, hidden, e});
    } else {
      matrix(blk(l, "ffn_gate"), dim, hidden);
      matrix(blk(l, "ffn_down"), hidden, dim);
      matrix(blk(l, "ffn_up"), dim, hidden);
    }
    norm(blk(l, "ffn_norm"), dim);
    if (gemma) {  // QK-norm and the sandwich norms (model_arch.hpp)
      norm(blk(l, "attn_q_norm"), shape.head_size());
      norm(blk(l, "attn_k_norm"), shape.head_size());
      norm(blk(l, "post_attention_norm"), dim);
      norm(blk(l, "post_ffw_norm"), dim);
    }
  }
  return w;
}

}  // namespace loom
