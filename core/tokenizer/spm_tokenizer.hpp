// SentencePiece-style BPE (the "llama" tokenizer of GGUF files: Llama 1/2, Mistral v0.1,
// TinyLlama, Phi-3, llama2.c models). Encoding follows llama.cpp's SPM tokenizer, which is the
// oracle in tests/data/vocab:
//   1. special-token text is cut out of the input first (user-defined tokens always, control and
//      unknown tokens only when parse_special);
//   2. each remaining text fragment gets a leading space when add_space_prefix is set and the
//      fragment starts the input or follows a special token; spaces become U+2581 ("▁");
//   3. the fragment is split into UTF-8 characters, then the adjacent pair whose concatenation is a
//      vocab token with the highest score is merged, again and again (ties: leftmost pair);
//   4. a final symbol that is not a token falls back to one <0xNN> token per byte (or <unk>).
// Decoding concatenates pieces ("▁" -> ' ', byte tokens -> their raw byte) and, like
// SentencePiece, drops the one space that add_space_prefix put in front of the first word.
// Every method is const and keeps no state between calls: safe to use from many threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/tokenizer/tokenizer.hpp"

namespace loom {

// GGUF tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// Everything an SPM tokenizer is built from; load_tokenizer() fills it from GGUF metadata, tests
// build synthetic ones. Ids are -1 when the model has no such token.
struct SpmVocab {
  std::vector<std::string> tokens;  // [n_vocab] piece text, spaces written as U+2581
  std::vector<float> scores;        // [n_vocab] merge priority, higher first; empty = all 0
  std::vector<TokenType> types;     // [n_vocab]; empty = "<0xNN>" is kByte, the rest kNormal
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  int32_t eot_id = -1;  // end of turn (chat models), also ends generation
  int32_t eom_id = -1;  // end of message, also ends generation
  bool add_bos = true;
  bool add_eos = false;
  bool add_space_prefix = true;
};

class SpmTokenizer final : public Tokenizer {
 public:
  // Validates the vocabulary (sizes agree, ids in range, byte tokens spelled <0xNN>); throws
  // loom::Error naming the offending field and value.
  explicit SpmTokenizer(SpmVocab vocab);
  // Not copyable or movable: the lookup table holds views into the token strings.
  SpmTokenizer(const SpmTokenizer&) = delete;
  SpmTokenizer& operator=(const SpmTokenizer&) = delete;

  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool parse_special = false) const override;
  std::string token_to_piece(int32_t id, bool render_special = false) const override;
  std::string decode(std::span<const int32_t> ids, bool render_special = false) const override;

  int32_t vocab_size() const override { return static_cast<int32_t>(vocab_.tokens.size()); }
  int32_t bos_id() const override { return vocab_.bos_id; }
  int32_t eos_id() const override { return vocab_.eos_id; }
  // EOS, EOT, EOM, and control tokens spelled like a known end-of-turn marker ("<|end|>", ...).
  bool is_eog(int32_t id) const override;
  // Control and unknown tokens: they decode to nothing unless render_special.
  bool is_control(int32_t id) const override;

  int32_t unk_id() const { return vocab_.unk_id; }
  int32_t pad_id() const { return vocab_.pad_id; }
  bool add_bos() const { return vocab_.add_bos; }
  bool add_eos() const { return vocab_.add_eos; }
  bool add_space_prefix() const { return vocab_.add_space_prefix; }
  TokenType token_type(int32_t id) const;
  float token_score(int32_t id) const;
  const std::string& token_text(int32_t id) const;  // as stored, with U+2581 for spaces
  int32_t find_token(std::string_view text) const;  // exact stored text; -1 when absent

 private:
  // A run of input that is either plain text or one special token (token >= 0).
  struct Fragment {
    int32_t token = -1;
    size_t offset = 0;
    size_t length = 0;
  };
  std::vector<Fragment> split_special(std::string_view text, bool parse_special) const;
  // BPE over one plain-text fragment; appends the ids to out.
  void encode_fragment(std::string_view text, bool space_prefix, std::vector<int32_t>& out) const;
  void check_id(int32_t id) const;

  SpmVocab vocab_;
  std::vector<std::string> pieces_;                     // [n_vocab] decoded bytes per token
  std::unordered_map<std::string_view, int32_t> ids_;  // text -> id (views into vocab_.tokens)
  std::array<int32_t, 256> byte_ids_{};                 // byte -> fallback token, -1 if none
  std::vector<int32_t> special_ids_;                    // splittable tokens, longest text first
  std::vector<int32_t> eog_ids_;
};

}  // namespace loom
