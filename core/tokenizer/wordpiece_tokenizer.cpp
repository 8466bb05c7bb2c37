// WordPieceTokenizer: BERT basic pre-tokenization over utf8proc, then greedy longest match.
#include "core/tokenizer/wordpiece_tokenizer.hpp"

#include <utf8proc.h>

#include <algorithm>

#include "core/common/error.hpp"

namespace loom {

namespace {

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // U+2581

bool is_cjk(utf8proc_int32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_whitespace(utf8proc_int32_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
         utf8proc_category(c) == UTF8PROC_CATEGORY_ZS;
}

bool is_control_char(utf8proc_int32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  const utf8proc_category_t cat = utf8proc_category(c);
  return cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF;
}

// BERT counts all non-letter/number ASCII as punctuation ("$", "^", "`"), plus Unicode P*.
bool is_punctuation(utf8proc_int32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
      (c >= 123 && c <= 126)) {
    return true;
  }
  const utf8proc_category_t cat = utf8proc_category(c);
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

void append_utf8(utf8proc_int32_t c, std::string& out) {
  utf8proc_uint8_t buf[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(c, buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

}  // namespace

WordPieceTokenizer::WordPieceTokenizer(WordPieceVocab vocab) : vocab_(std::move(vocab)) {
  const size_t n = vocab_.tokens.size();
  if (n == 0) throw Error("WordPiece vocabulary is empty");
  if (vocab_.types.empty()) vocab_.types.assign(n, TokenType::kNormal);
  if (vocab_.types.size() != n) {
    throw Error("WordPiece vocabulary has " + std::to_string(vocab_.types.size()) +
                " token types for " + std::to_string(n) + " tokens");
  }
  for (const int32_t id :
       {vocab_.unk_id, vocab_.cls_id, vocab_.sep_id, vocab_.pad_id, vocab_.mask_id}) {
    if (id < -1 || id >= static_cast<int32_t>(n)) {
      throw Error("special token id " + std::to_string(id) + " is outside the vocabulary of " +
                  std::to_string(n) + " tokens");
    }
  }
  std::vector<AddedToken> added;
  pieces_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string& t = vocab_.tokens[i];
    const auto id = static_cast<int32_t>(i);
    const TokenType type = vocab_.types[i];
    if (type == TokenType::kControl || type == TokenType::kUnknown ||
        type == TokenType::kUserDefined) {
      added.push_back({id, t, type != TokenType::kUserDefined, false, false, false});
      pieces_[i] = t;
      continue;
    }
    if (t.compare(0, kWordStart.size(), kWordStart) == 0) {
      const std::string piece = t.substr(kWordStart.size());
      word_starts_.emplace(piece, id);
      pieces_[i] = " " + piece;
      max_piece_bytes_ = std::max(max_piece_bytes_, piece.size());
    } else {
      continuations_.emplace(t, id);
      pieces_[i] = t;
      max_piece_bytes_ = std::max(max_piece_bytes_, t.size());
    }
  }
  added_ = AddedTokenMatcher(std::move(added));
}

std::vector<std::string> WordPieceTokenizer::pre_tokenize(std::string_view text) const {
  std::vector<std::string> words(1);
  const auto end_word = [&] {
    if (!words.back().empty()) words.emplace_back();
  };
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(text.size());
  while (left > 0) {
    utf8proc_int32_t c = 0;
    utf8proc_ssize_t len = utf8proc_iterate(p, left, &c);
    if (len <= 0) {  // invalid byte: becomes U+FFFD, which BERT drops
      len = 1;
      c = 0xFFFD;
    }
    p += len;
    left -= len;
    if (c == 0 || c == 0xFFFD || is_control_char(c)) continue;
    if (is_whitespace(c)) {
      end_word();
      continue;
    }
    // Lowercase, then decompose and drop combining marks (accents).
    utf8proc_int32_t parts[8];
    utf8proc_ssize_t n_parts = 1;
    parts[0] = c;
    if (vocab_.lowercase) {
      int last_boundclass = 0;
      n_parts = utf8proc_decompose_char(utf8proc_tolower(c), parts, 8, UTF8PROC_DECOMPOSE,
                                        &last_boundclass);
      if (n_parts < 0 || n_parts > 8) {
        parts[0] = utf8proc_tolower(c);
        n_parts = 1;
      }
    }
    for (utf8proc_ssize_t k = 0; k < n_parts; ++k) {
      const utf8proc_int32_t d = parts[k];
      if (vocab_.lowercase && utf8proc_category(d) == UTF8PROC_CATEGORY_MN) continue;
      if (is_punctuation(d) || is_cjk(d)) {
        end_word();
        append_utf8(d, words.back());
        words.emplace_back();
      } else {
        append_utf8(d, words.back());
      }
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

void WordPieceTokenizer::encode_word(const std::string& word, std::vector<int32_t>& out) const {
  const size_t start_size = out.size();
  if (vocab_.max_word_chars > 0) {
    int32_t chars = 0;
    for (const char c : word) chars += (static_cast<uint8_t>(c) & 0xC0) != 0x80 ? 1 : 0;
    if (chars > vocab_.max_word_chars) {
      if (vocab_.unk_id >= 0) out.push_back(vocab_.unk_id);
      return;
    }
  }
  size_t start = 0;
  while (start < word.size()) {
    const auto& table = start == 0 ? word_starts_ : continuations_;
    size_t end = std::min(word.size(), start + max_piece_bytes_);
    int32_t id = -1;
    for (; end > start; --end) {
      // Only cut between characters.
      if (end < word.size() && (static_cast<uint8_t>(word[end]) & 0xC0) == 0x80) continue;
      const auto it = table.find(word.substr(start, end - start));
      if (it != table.end()) {
        id = it->second;
        break;
      }
    }
    if (id < 0) {  // no cut: the whole word is unknown
      out.resize(start_size);
      if (vocab_.unk_id >= 0) out.push_back(vocab_.unk_id);
      return;
    }
    out.push_back(id);
    start = end;
  }
}

std::vector<int32_t> WordPieceTokenizer::encode(std::string_view text, bool add_special,
                                                bool parse_special) const {
  std::vector<int32_t> ids;
  if (add_special && vocab_.add_cls && vocab_.cls_id >= 0) ids.push_back(vocab_.cls_id);
  std::vector<AddedTokenMatcher::Fragment> fragments;
  added_.split(text, parse_special, fragments);
  for (const AddedTokenMatcher::Fragment& f : fragments) {
    if (f.token >= 0) {
      ids.push_back(f.token);
      continue;
    }
    for (const std::string& w : pre_tokenize(f.text)) encode_word(w, ids);
  }
  if (add_special && vocab_.add_sep && vocab_.sep_id >= 0) ids.push_back(vocab_.sep_id);
  return ids;
}

void WordPieceTokenizer::check_id(int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    throw Error("token id " + std::to_string(id) + " is outside the vocabulary of " +
                std::to_string(vocab_size()) + " tokens");
  }
}

std::string WordPieceTokenizer::token_to_piece(int32_t id, bool render_special) const {
  check_id(id);
  if (is_control(id) && !render_special) return "";
  return pieces_[id];
}

std::string WordPieceTokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string text;
  for (const int32_t id : ids) text += token_to_piece(id, render_special);
  if (!text.empty() && text[0] == ' ') text.erase(0, 1);
  return text;
}

bool WordPieceTokenizer::is_control(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return false;
  const TokenType t = vocab_.types[id];
  return t == TokenType::kControl || t == TokenType::kUnknown;
}

}  // namespace loom
