#include "core/tokenizer/spm_tokenizer.hpp"

#include <algorithm>
#include <queue>
#include <utility>

#include "core/common/error.hpp"
#include "core/tokenizer/utf8.hpp"

namespace loom {

namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// Control tokens with these spellings end a turn in common chat formats, so generation stops
// there even when the GGUF names only EOS.
constexpr std::string_view kEndOfTurnTexts[] = {
    "<|end|>", "<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<end_of_turn>", "<EOT>",
};

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (true) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s.substr(pos));
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// "<0xNN>" -> NN, or -1 when the text is not spelled that way.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  const int hi = hex_digit(text[3]);
  const int lo = hex_digit(text[4]);
  return (hi < 0 || lo < 0) ? -1 : hi * 16 + lo;
}

// Symbols of one fragment form a doubly linked list over the escaped text; merging folds the
// right symbol into the left one (right.length becomes 0 and it leaves the list).
struct Symbol {
  int32_t prev = -1;
  int32_t next = -1;
  uint32_t offset = 0;  // into the escaped text
  uint32_t length = 0;  // bytes; 0 once merged away
  int32_t id = -1;      // vocab token spelled like this symbol, -1 if none
};

// A candidate merge of two adjacent symbols. It goes stale when either side changes, which
// `length` detects: symbols only grow, so a changed side changes the sum.
struct Bigram {
  float score = 0.0f;
  int32_t left = -1;
  int32_t right = -1;
  uint32_t length = 0;
  int32_t id = -1;
};

struct BigramOrder {
  // Highest score on top; among equal scores the leftmost pair.
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

SpmTokenizer::SpmTokenizer(SpmVocab vocab) : vocab_(std::move(vocab)) {
  const size_t n = vocab_.tokens.size();
  if (n == 0) throw Error("SPM tokenizer: the vocabulary is empty");
  if (n > static_cast<size_t>(INT32_MAX)) throw Error("SPM tokenizer: vocabulary too large");
  if (vocab_.scores.empty()) vocab_.scores.assign(n, 0.0f);
  if (vocab_.scores.size() != n) {
    throw Error("SPM tokenizer: " + std::to_string(vocab_.scores.size()) + " scores for " +
                std::to_string(n) + " tokens");
  }
  if (vocab_.types.empty()) {
    vocab_.types.resize(n);
    for (size_t i = 0; i < n; ++i) {
      vocab_.types[i] = parse_byte_token(vocab_.tokens[i]) >= 0 ? TokenType::kByte
                                                                 : TokenType::kNormal;
    }
  }
  if (vocab_.types.size() != n) {
    throw Error("SPM tokenizer: " + std::to_string(vocab_.types.size()) + " token types for " +
                std::to_string(n) + " tokens");
  }
  const std::pair<const char*, int32_t> special[] = {
      {"bos", vocab_.bos_id}, {"eos", vocab_.eos_id}, {"unk", vocab_.unk_id},
      {"pad", vocab_.pad_id}, {"eot", vocab_.eot_id}, {"eom", vocab_.eom_id}};
  for (const auto& [name, id] : special) {
    if (id < -1 || id >= static_cast<int32_t>(n)) {
      throw Error(std::string("SPM tokenizer: ") + name + " token id " + std::to_string(id) +
                  " is outside the vocabulary of " + std::to_string(n));
    }
  }

  byte_ids_.fill(-1);
  pieces_.resize(n);
  ids_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<int32_t>(i);
    const std::string& text = vocab_.tokens[i];
    // Later duplicates win, as in llama.cpp's text -> id map.
    ids_[std::string_view(text)] = id;
    switch (vocab_.types[i]) {
      case TokenType::kNormal:
        pieces_[i] = replace_all(text, kSpaceMarker, " ");
        break;
      case TokenType::kByte: {
        const int byte = parse_byte_token(text);
        if (byte < 0) {
          throw Error("SPM tokenizer: byte token " + std::to_string(i) + " is spelled '" + text +
                      "', expected <0xNN>");
        }
        pieces_[i] = std::string(1, static_cast<char>(byte));
        if (byte_ids_[byte] < 0) byte_ids_[byte] = id;
        break;
      }
      case TokenType::kUserDefined:
        pieces_[i] = text;
        special_ids_.push_back(id);
        break;
      case TokenType::kControl:
      case TokenType::kUnknown:
        pieces_[i] = text;  // shown only with render_special
        special_ids_.push_back(id);
        break;
      case TokenType::kUndefined:
      case TokenType::kUnused:
        break;  // decodes to nothing, never produced by encode's fallback
      default:
        throw Error("SPM tokenizer: token " + std::to_string(i) + " ('" + text +
                    "') has unknown token type " +
                    std::to_string(static_cast<int32_t>(vocab_.types[i])));
    }
  }
  // Without a <0xNN> token a byte may still be spelled as a one-byte normal token.
  for (int b = 0; b < 256; ++b) {
    if (byte_ids_[b] >= 0) continue;
    const char c = static_cast<char>(b);
    byte_ids_[b] = find_token(std::string_view(&c, 1));
  }
  // Longest special text first, so "<|end|>" is not cut by a shorter token inside it.
  std::erase_if(special_ids_, [&](int32_t id) { return vocab_.tokens[id].empty(); });
  std::stable_sort(special_ids_.begin(), special_ids_.end(), [&](int32_t a, int32_t b) {
    return vocab_.tokens[a].size() > vocab_.tokens[b].size();
  });

  for (int32_t id : {vocab_.eos_id, vocab_.eot_id, vocab_.eom_id}) {
    if (id >= 0) eog_ids_.push_back(id);
  }
  for (size_t i = 0; i < n; ++i) {
    if (vocab_.types[i] != TokenType::kControl) continue;
    for (std::string_view t : kEndOfTurnTexts) {
      if (vocab_.tokens[i] == t) eog_ids_.push_back(static_cast<int32_t>(i));
    }
  }
}

void SpmTokenizer::check_id(int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    throw Error("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                std::to_string(vocab_size()) + ")");
  }
}

TokenType SpmTokenizer::token_type(int32_t id) const {
  check_id(id);
  return vocab_.types[id];
}

float SpmTokenizer::token_score(int32_t id) const {
  check_id(id);
  return vocab_.scores[id];
}

const std::string& SpmTokenizer::token_text(int32_t id) const {
  check_id(id);
  return vocab_.tokens[id];
}

int32_t SpmTokenizer::find_token(std::string_view text) const {
  const auto it = ids_.find(text);
  return it == ids_.end() ? -1 : it->second;
}

bool SpmTokenizer::is_eog(int32_t id) const {
  return std::find(eog_ids_.begin(), eog_ids_.end(), id) != eog_ids_.end();
}

bool SpmTokenizer::is_control(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return false;
  const TokenType t = vocab_.types[id];
  return t == TokenType::kControl || t == TokenType::kUnknown;
}

std::vector<SpmTokenizer::Fragment> SpmTokenizer::split_special(std::string_view text,
                                                               bool parse_special) const {
  std::vector<Fragment> fragments{{-1, 0, text.size()}};
  std::vector<Fragment> next;
  // One pass per special token over the text fragments left by the previous passes; each pass
  // cuts every occurrence, leftmost first, without overlaps.
  for (const int32_t id : special_ids_) {
    const TokenType type = vocab_.types[id];
    if (!parse_special && type != TokenType::kUserDefined) continue;
    const std::string_view special = vocab_.tokens[id];
    next.clear();
    for (const Fragment& f : fragments) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      const std::string_view body = text.substr(f.offset, f.length);
      size_t pos = 0;
      while (true) {
        const size_t hit = body.find(special, pos);
        if (hit == std::string_view::npos) break;
        if (hit > pos) next.push_back({-1, f.offset + pos, hit - pos});
        next.push_back({id, f.offset + hit, special.size()});
        pos = hit + special.size();
      }
      if (pos < body.size()) next.push_back({-1, f.offset + pos, body.size() - pos});
    }
    fragments.swap(next);
  }
  return fragments;
}

void SpmTokenizer::encode_fragment(std::string_view raw, bool space_prefix,
                                   std::vector<int32_t>& out) const {
  std::string text;
  text.reserve(raw.size() + raw.size() / 2 + kSpaceMarker.size());
  if (space_prefix) text.append(kSpaceMarker);
  for (const char c : raw) {
    if (c == ' ') {
      text.append(kSpaceMarker);
    } else {
      text.push_back(c);
    }
  }
  if (text.size() > UINT32_MAX) throw Error("SPM tokenizer: input text too large");
  const std::string_view view(text);

  // Characters as units; an invalid lead byte still claims the bytes it announces.
  std::vector<Symbol> symbols;  // [n_chars]
  symbols.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t len =
        std::min(utf8_lead_length(static_cast<uint8_t>(text[pos])), text.size() - pos);
    Symbol s;
    s.prev = static_cast<int32_t>(symbols.size()) - 1;
    s.offset = static_cast<uint32_t>(pos);
    s.length = static_cast<uint32_t>(len);
    s.id = find_token(view.substr(pos, len));
    pos += len;
    s.next = pos == text.size() ? -1 : static_cast<int32_t>(symbols.size()) + 1;
    symbols.push_back(s);
  }
  if (symbols.empty()) return;

  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const uint32_t length = symbols[left].length + symbols[right].length;
    const int32_t id = find_token(view.substr(symbols[left].offset, length));
    if (id < 0) return;
    queue.push(Bigram{vocab_.scores[id], left, right, length, id});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& left = symbols[b.left];
    Symbol& right = symbols[b.right];
    if (left.length == 0 || right.length == 0 || left.length + right.length != b.length) {
      continue;  // stale: one side was merged since this pair was queued
    }
    left.length = b.length;
    left.id = b.id;
    left.next = right.next;
    right.length = 0;
    if (right.next >= 0) symbols[right.next].prev = b.left;
    try_add(left.prev, b.left);
    try_add(b.left, left.next);
  }

  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    const Symbol& s = symbols[i];
    if (s.id >= 0) {
      out.push_back(s.id);
      continue;
    }
    // Not a token: one byte-fallback token per byte; without those, one <unk> for the symbol.
    bool unk_pushed = false;
    for (uint32_t k = 0; k < s.length; ++k) {
      const auto byte = static_cast<uint8_t>(text[s.offset + k]);
      if (byte_ids_[byte] >= 0) {
        out.push_back(byte_ids_[byte]);
      } else if (vocab_.unk_id >= 0) {
        if (!unk_pushed) out.push_back(vocab_.unk_id);
        unk_pushed = true;
      } else {
        throw Error("SPM tokenizer: byte 0x" + std::string(1, "0123456789ABCDEF"[byte >> 4]) +
                    std::string(1, "0123456789ABCDEF"[byte & 15]) +
                    " has no token, no <0xNN> fallback and the vocabulary has no unknown token");
      }
    }
  }
}

std::vector<int32_t> SpmTokenizer::encode(std::string_view text, bool add_special,
                                          bool parse_special) const {
  std::vector<int32_t> out;
  if (add_special && vocab_.add_bos && vocab_.bos_id >= 0) out.push_back(vocab_.bos_id);
  if (!text.empty()) {
    // The space prefix goes in front of text that starts the input or follows a special token
    // (llama.cpp), not after BOS alone: BOS is not part of `text`.
    bool after_special = true;
    for (const Fragment& f : split_special(text, parse_special)) {
      if (f.token >= 0) {
        out.push_back(f.token);
        after_special = true;
      } else {
        encode_fragment(text.substr(f.offset, f.length),
                        vocab_.add_space_prefix && after_special, out);
        after_special = false;
      }
    }
  }
  if (add_special && vocab_.add_eos && vocab_.eos_id >= 0) out.push_back(vocab_.eos_id);
  return out;
}

std::string SpmTokenizer::token_to_piece(int32_t id, bool render_special) const {
  check_id(id);
  if (!render_special && is_control(id)) return {};
  return pieces_[id];
}

std::string SpmTokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string out;
  // SentencePiece drops the space marker that starts the first visible piece: it is the one
  // add_space_prefix added. Invisible control tokens (BOS) before it do not count.
  bool strip_space = vocab_.add_space_prefix;
  for (const int32_t id : ids) {
    check_id(id);
    if (!render_special && is_control(id)) continue;
    const std::string& piece = pieces_[id];
    if (piece.empty()) continue;
    if (strip_space && vocab_.types[id] == TokenType::kNormal && piece[0] == ' ') {
      out.append(piece, 1);
    } else {
      out.append(piece);
    }
    strip_space = false;
  }
  return out;
}

}  // namespace loom
