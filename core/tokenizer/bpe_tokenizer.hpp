// Byte-level BPE (GPT-2, Llama 3, Qwen2, DeepSeek, StarCoder; GGUF tokenizer.ggml.model "gpt2"
// and Hugging Face tokenizer.json "BPE" + "ByteLevel"). Encoding:
//   1. invalid UTF-8 in the input becomes U+FFFD (as llama.cpp does; HF only takes valid text);
//   2. added tokens are cut out (added_tokens.hpp), the rest is normalised if the files ask;
//   3. the pre-tokenizer's expressions cut the text into words (pre_tokenizer.hpp);
//   4. each word's bytes are spelled with GPT-2's byte->unicode map and merged pairwise by merge
//      rank (lowest first, leftmost on ties) until no ranked pair is left; with ignore_merges a
//      word that is itself a token is taken whole first (Llama 3).
// Without byte_level (Gemma 4, Sarvam: llama.cpp's byte_encode = false) tokens are raw UTF-8
// with U+2581 for a space: spaces are escaped before step 3, words start as UTF-8 characters,
// and a character no token covers falls back to its <0xNN> byte tokens.
// Words -> ids are cached (bounded, sharded under mutexes). All methods are const and safe to
// call from many threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/tokenizer/added_tokens.hpp"
#include "core/tokenizer/pre_tokenizer.hpp"
#include "core/tokenizer/spm_tokenizer.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "core/tokenizer/unicode_normalize.hpp"

namespace loom {

struct BpeVocab {
  std::vector<std::string> tokens;  // [n_vocab] byte-level spelling; added tokens as raw text
  std::vector<TokenType> types;     // [n_vocab]; empty = all kNormal except `added`
  std::vector<std::pair<std::string, std::string>> merges;  // by rank, 0 first
  std::vector<AddedToken> added;                            // ids in [0, n_vocab)
  std::vector<std::string> pre_patterns;  // applied in sequence; empty = the whole text is a word
  bool ignore_merges = false;
  bool byte_level = true;           // false: raw UTF-8 tokens, U+2581 spaces, <0xNN> fallback
  bool whole_newline_runs = false;  // a word of only '\n' that is a token is taken whole (Gemma 4)
  bool add_prefix_space = false;  // a space before each text fragment that lacks one
  NormalForm normalizer = NormalForm::kNone;
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  int32_t eot_id = -1;
  int32_t eom_id = -1;
  bool add_bos = false;
  bool add_eos = false;
};

class BpeTokenizer final : public Tokenizer {
 public:
  // Validates ids and merges; throws loom::Error naming the field and value.
  explicit BpeTokenizer(BpeVocab vocab);
  BpeTokenizer(const BpeTokenizer&) = delete;
  BpeTokenizer& operator=(const BpeTokenizer&) = delete;

  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool parse_special = false) const override;
  std::string token_to_piece(int32_t id, bool render_special = false) const override;
  std::string decode(std::span<const int32_t> ids, bool render_special = false) const override;

  int32_t vocab_size() const override { return static_cast<int32_t>(vocab_.tokens.size()); }
  int32_t bos_id() const override { return vocab_.bos_id; }
  int32_t eos_id() const override { return vocab_.eos_id; }
  bool is_eog(int32_t id) const override;
  bool is_control(int32_t id) const override;

  bool add_bos() const { return vocab_.add_bos; }
  bool add_eos() const { return vocab_.add_eos; }
  bool ignore_merges() const { return vocab_.ignore_merges; }
  NormalForm normalizer() const { return vocab_.normalizer; }
  TokenType token_type(int32_t id) const;
  const std::string& token_text(int32_t id) const;  // as stored (byte-level spelling)
  int32_t find_token(std::string_view text) const;  // exact stored text; -1 when absent
  size_t n_merges() const { return merges_.size(); }

 private:
  struct Merge {
    int32_t rank = 0;
    int32_t result = 0;
  };
  // Appends the ids of one pre-tokenized word (raw bytes).
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  void bpe(std::string_view word, std::vector<int32_t>& out) const;
  void check_id(int32_t id) const;

  BpeVocab vocab_;
  PreTokenizer pre_;
  AddedTokenMatcher added_;
  std::vector<std::string> pieces_;                    // [n_vocab] bytes each token stands for
  std::unordered_map<std::string_view, int32_t> ids_;  // normal token spelling -> id
  std::unordered_map<uint64_t, Merge> merges_;         // (left id << 32 | right id) -> merge
  std::array<int32_t, 256> byte_ids_{};  // byte -> its single-byte (or <0xNN>) token, -1
  std::vector<int32_t> eog_ids_;

  // Word -> ids cache, sharded so concurrent encodes rarely wait on each other.
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct CacheShard {
    std::mutex mutex;
    std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> words;
  };
  static constexpr size_t kCacheShards = 16;
  static constexpr size_t kCacheWordsPerShard = 8192;  // a full shard is cleared
  static constexpr size_t kCacheMaxWordBytes = 64;     // longer words are not cached
  mutable std::array<CacheShard, kCacheShards> cache_;
};

// Control tokens with these spellings end a turn in common chat formats.
bool is_end_of_turn_text(std::string_view text);

}  // namespace loom
