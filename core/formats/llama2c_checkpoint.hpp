// Readers for karpathy/llama2.c's legacy files: the v0 model checkpoint (`stories260K.bin`,
// `stories15M.bin`, ...) and its tokenizer export (`tokenizer.bin`, `tok512.bin`).
//
// Checkpoint (little-endian): 7 x int32 header
//   dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size (negative: unshared classifier),
//   seq_len
// then f32 arrays, row-major, [out, in] for every matrix:
//   token_embedding [vocab, dim] | rms_att [L, dim] | wq [L, dim, dim] | wk [L, kv_dim, dim]
//   wv [L, kv_dim, dim] | wo [L, dim, dim] | rms_ffn [L, dim] | w1 [L, hidden, dim]
//   w2 [L, dim, hidden] | w3 [L, hidden, dim] | rms_final [dim]
//   freq_cis_real [seq_len, head_size/2] | freq_cis_imag [seq_len, head_size/2]
//   wcls [vocab, dim] (only when unshared)
// The file size must match the header exactly.
//
// Tokenizer: int32 max_token_length, then per token: f32 score, int32 len, len bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/formats/mapped_file.hpp"

namespace loom {

struct Llama2cConfig {
  int32_t dim = 0;
  int32_t hidden_dim = 0;
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t vocab_size = 0;  // always positive here; see shared_classifier
  int32_t seq_len = 0;
  bool shared_classifier = true;

  int32_t head_size() const { return dim / n_heads; }
  int32_t kv_dim() const { return n_kv_heads * head_size(); }
};

class Llama2cCheckpoint {
 public:
  // Maps and validates the file; throws loom::Error("<path>: <what>").
  static Llama2cCheckpoint open(const std::string& path);

  const Llama2cConfig& config() const { return config_; }
  const std::string& path() const { return path_; }

  // Views into the mapping (valid while this object lives).
  std::span<const float> token_embedding() const { return at(off_.tok, sz_.tok); }  // [vocab, dim]
  std::span<const float> rms_att(int layer) const { return layer_at(off_.rms_att, config_.dim, layer); }  // [dim]
  std::span<const float> wq(int layer) const { return layer_at(off_.wq, sz_.wq, layer); }  // [dim, dim]
  std::span<const float> wk(int layer) const { return layer_at(off_.wk, sz_.wkv, layer); }  // [kv_dim, dim]
  std::span<const float> wv(int layer) const { return layer_at(off_.wv, sz_.wkv, layer); }  // [kv_dim, dim]
  std::span<const float> wo(int layer) const { return layer_at(off_.wo, sz_.wq, layer); }  // [dim, dim]
  std::span<const float> rms_ffn(int layer) const { return layer_at(off_.rms_ffn, config_.dim, layer); }  // [dim]
  std::span<const float> w1(int layer) const { return layer_at(off_.w1, sz_.ffn, layer); }  // [hidden, dim]
  std::span<const float> w2(int layer) const { return layer_at(off_.w2, sz_.ffn, layer); }  // [dim, hidden]
  std::span<const float> w3(int layer) const { return layer_at(off_.w3, sz_.ffn, layer); }  // [hidden, dim]
  std::span<const float> rms_final() const { return at(off_.rms_final, config_.dim); }  // [dim]
  std::span<const float> freq_cis_real() const { return at(off_.freq_real, sz_.freq); }  // [seq_len, head_size/2]
  std::span<const float> freq_cis_imag() const { return at(off_.freq_imag, sz_.freq); }  // [seq_len, head_size/2]
  // The classifier: its own array when unshared, else the token embedding.  [vocab, dim]
  std::span<const float> wcls() const { return at(off_.wcls, sz_.tok); }

 private:
  // Offsets and sizes in floats from the start of the weights (after the header).
  struct Offsets {
    int64_t tok, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final, freq_real, freq_imag, wcls;
  };
  struct Sizes {
    int64_t tok, wq, wkv, ffn, freq;
  };
  std::span<const float> at(int64_t offset, int64_t n) const;
  std::span<const float> layer_at(int64_t base, int64_t per_layer, int layer) const;

  std::string path_;
  MappedFile file_;
  Llama2cConfig config_;
  Offsets off_{};
  Sizes sz_{};
};

// SentencePiece token types as GGUF's tokenizer.ggml.token_type stores them.
enum class SpmTokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

struct Llama2cTokenizer {
  int32_t max_token_length = 0;
  std::vector<std::string> pieces;   // SentencePiece form: ' ' mapped back to U+2581
  std::vector<float> scores;
  std::vector<SpmTokenType> types;
  int32_t unk_id = 0;
  int32_t bos_id = 1;
  int32_t eos_id = 2;

  int32_t size() const { return static_cast<int32_t>(pieces.size()); }

  // Reads every token up to the end of the file, or exactly `vocab_size` tokens when it is
  // positive (then trailing bytes are an error). Throws loom::Error("<path>: <what>").
  static Llama2cTokenizer read(const std::string& path, int32_t vocab_size = 0);
};

}  // namespace loom
