// WordPiece (BERT; GGUF tokenizer.ggml.model "bert", e.g. BGE embedding models). Encoding, as
// Hugging Face's BertTokenizer and llama.cpp do it:
//   1. added tokens ([CLS], [SEP], [MASK] ...) are cut out when special text is parsed;
//   2. BERT's basic pre-tokenizer: control characters are dropped, whitespace separates words,
//      text is lowercased and its accents stripped (NFD, marks removed) when `lowercase`, and
//      every punctuation mark and CJK ideograph is a word of its own;
//   3. each word is cut greedily into the longest vocabulary pieces, the first one a word start,
//      the others continuations ("##ing"); a word with no such cut is [UNK].
// add_special puts [CLS] in front and [SEP] at the end. Thread-safe: no state between calls.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/tokenizer/added_tokens.hpp"
#include "core/tokenizer/spm_tokenizer.hpp"
#include "core/tokenizer/tokenizer.hpp"

namespace loom {

struct WordPieceVocab {
  // [n_vocab] as GGUF stores them: a word start is spelled "\u2581piece", a continuation
  // "piece" (vocab.txt's "piece" and "##piece").
  std::vector<std::string> tokens;
  std::vector<TokenType> types;  // [n_vocab]; empty = all kNormal
  int32_t unk_id = -1;
  int32_t cls_id = -1;
  int32_t sep_id = -1;
  int32_t pad_id = -1;
  int32_t mask_id = -1;
  bool lowercase = true;  // also strips accents, as BertTokenizer's default
  bool add_cls = true;
  bool add_sep = true;
  // A word of more characters is [UNK] whole (Hugging Face's max_input_chars_per_word); 0 = no limit.
  int32_t max_word_chars = 0;
};

class WordPieceTokenizer final : public Tokenizer {
 public:
  explicit WordPieceTokenizer(WordPieceVocab vocab);
  WordPieceTokenizer(const WordPieceTokenizer&) = delete;
  WordPieceTokenizer& operator=(const WordPieceTokenizer&) = delete;

  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool parse_special = false) const override;
  std::string token_to_piece(int32_t id, bool render_special = false) const override;
  // Pieces joined; the space in front of the first word is dropped.
  std::string decode(std::span<const int32_t> ids, bool render_special = false) const override;

  int32_t vocab_size() const override { return static_cast<int32_t>(vocab_.tokens.size()); }
  int32_t bos_id() const override { return vocab_.cls_id; }
  int32_t eos_id() const override { return vocab_.sep_id; }
  bool is_eog(int32_t id) const override { return id >= 0 && id == vocab_.sep_id; }
  bool is_control(int32_t id) const override;

  // BERT's basic pre-tokenizer (step 2) on plain text.
  std::vector<std::string> pre_tokenize(std::string_view text) const;

 private:
  void encode_word(const std::string& word, std::vector<int32_t>& out) const;
  void check_id(int32_t id) const;

  WordPieceVocab vocab_;
  AddedTokenMatcher added_;
  std::vector<std::string> pieces_;                       // [n_vocab] decoded text
  std::unordered_map<std::string, int32_t> word_starts_;  // "piece" -> id of "\u2581piece"
  std::unordered_map<std::string, int32_t> continuations_;
  size_t max_piece_bytes_ = 1;
};

}  // namespace loom
