// BpeTokenizer: byte-level BPE with a priority queue over adjacent pairs and a word cache.
#include "core/tokenizer/bpe_tokenizer.hpp"

#include <algorithm>
#include <queue>

#include "core/common/error.hpp"
#include "core/tokenizer/byte_unicode.hpp"
#include "core/tokenizer/utf8.hpp"

namespace loom {

namespace {

constexpr std::string_view kEndOfTurnTexts[] = {
    "<|end|>",    "<|endoftext|>", "<|im_end|>", "<|eot_id|>",
    "<|eom_id|>", "<end_of_turn>", "<EOT>",      "<|end_of_text|>",
};

constexpr std::string_view kEscapedSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

std::string unescape_spaces(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i, kEscapedSpace.size()) == kEscapedSpace) {
      out += ' ';
      i += kEscapedSpace.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

// The byte a "<0xNN>" token stands for, -1 for any other text.
int byte_token_value(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (const char c : text.substr(3, 2)) {
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

}  // namespace

bool is_end_of_turn_text(std::string_view text) {
  return std::find(std::begin(kEndOfTurnTexts), std::end(kEndOfTurnTexts), text) !=
         std::end(kEndOfTurnTexts);
}

BpeTokenizer::BpeTokenizer(BpeVocab vocab)
    : vocab_(std::move(vocab)), pre_(vocab_.pre_patterns), added_(vocab_.added) {
  const size_t n = vocab_.tokens.size();
  if (n == 0) throw Error("BPE vocabulary is empty");
  if (vocab_.types.empty()) {
    vocab_.types.assign(n, TokenType::kNormal);
    for (const AddedToken& t : vocab_.added) {
      if (t.id >= 0 && static_cast<size_t>(t.id) < n) {
        vocab_.types[t.id] = t.special ? TokenType::kControl : TokenType::kUserDefined;
      }
    }
  }
  if (vocab_.types.size() != n) {
    throw Error("BPE vocabulary has " + std::to_string(vocab_.types.size()) + " token types for " +
                std::to_string(n) + " tokens");
  }
  for (const AddedToken& t : vocab_.added) {
    if (t.id < 0 || static_cast<size_t>(t.id) >= n) {
      throw Error("added token '" + t.content + "' has id " + std::to_string(t.id) +
                  " outside the vocabulary of " + std::to_string(n) + " tokens");
    }
    if (t.content.empty()) throw Error("added token " + std::to_string(t.id) + " is empty");
  }
  for (const int32_t id :
       {vocab_.bos_id, vocab_.eos_id, vocab_.unk_id, vocab_.pad_id, vocab_.eot_id, vocab_.eom_id}) {
    if (id < -1 || id >= static_cast<int32_t>(n)) {
      throw Error("special token id " + std::to_string(id) + " is outside the vocabulary of " +
                  std::to_string(n) + " tokens");
    }
  }

  pieces_.resize(n);
  ids_.reserve(n);
  byte_ids_.fill(-1);
  for (size_t i = 0; i < n; ++i) {
    const TokenType type = vocab_.types[i];
    const std::string& text = vocab_.tokens[i];
    if (type == TokenType::kNormal || type == TokenType::kUndefined) {
      pieces_[i] = vocab_.byte_level ? unicode_to_bytes(text) : unescape_spaces(text);
      ids_.emplace(text, static_cast<int32_t>(i));  // first id wins on duplicates
    } else if (type == TokenType::kByte && !vocab_.byte_level && byte_token_value(text) >= 0) {
      const int b = byte_token_value(text);
      pieces_[i] = std::string(1, static_cast<char>(b));
      if (byte_ids_[b] < 0) byte_ids_[b] = static_cast<int32_t>(i);
    } else if (type != TokenType::kUnused) {
      pieces_[i] = text;  // added tokens are raw text
    }
  }
  if (vocab_.byte_level) {
    for (int b = 0; b < 256; ++b) {
      const auto it = ids_.find(byte_to_unicode(static_cast<uint8_t>(b)));
      byte_ids_[b] = it == ids_.end() ? -1 : it->second;
    }
  }

  merges_.reserve(vocab_.merges.size());
  for (size_t rank = 0; rank < vocab_.merges.size(); ++rank) {
    const auto& [left, right] = vocab_.merges[rank];
    const auto l = ids_.find(left);
    const auto r = ids_.find(right);
    const auto m = ids_.find(left + right);
    if (l == ids_.end() || r == ids_.end() || m == ids_.end()) {
      throw Error("BPE merge " + std::to_string(rank) + " '" + left + " " + right +
                  "' names a token that is not in the vocabulary");
    }
    // A pair listed twice keeps its first (best) rank.
    merges_.emplace(pair_key(l->second, r->second), Merge{static_cast<int32_t>(rank), m->second});
  }

  for (const int32_t id : {vocab_.eos_id, vocab_.eot_id, vocab_.eom_id}) {
    if (id >= 0) eog_ids_.push_back(id);
  }
  for (size_t i = 0; i < n; ++i) {
    if (vocab_.types[i] == TokenType::kControl && is_end_of_turn_text(vocab_.tokens[i])) {
      eog_ids_.push_back(static_cast<int32_t>(i));
    }
  }
}

void BpeTokenizer::bpe(std::string_view word, std::vector<int32_t>& out) const {
  // Symbols form a linked list over the word's units (bytes, or UTF-8 characters without
  // byte_level); merged-away symbols get size 0. id -1: a unit no token covers.
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    uint32_t begin;  // byte offset in word
    uint32_t size;   // bytes
  };
  struct Candidate {
    int32_t rank;
    int32_t left;  // symbol index; ties go to the leftmost pair
    int32_t left_id;
    int32_t right_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  std::vector<Symbol> syms;
  syms.reserve(word.size());
  for (size_t i = 0; i < word.size();) {
    size_t len = 1;
    int32_t id = byte_ids_[static_cast<uint8_t>(word[i])];
    if (!vocab_.byte_level) {
      len = std::min(word.size() - i, utf8_lead_length(static_cast<uint8_t>(word[i])));
      const auto it = ids_.find(word.substr(i, len));
      id = it == ids_.end() ? -1 : it->second;
    }
    const auto k = static_cast<int32_t>(syms.size());
    syms.push_back({id, k - 1, -1, static_cast<uint32_t>(i), static_cast<uint32_t>(len)});
    if (k > 0) syms[k - 1].next = k;
    i += len;
  }
  const auto n = static_cast<int32_t>(syms.size());
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto push_pair = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = syms[left].next;
    if (right < 0 || syms[left].id < 0 || syms[right].id < 0) return;
    const auto it = merges_.find(pair_key(syms[left].id, syms[right].id));
    if (it != merges_.end()) queue.push({it->second.rank, left, syms[left].id, syms[right].id});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push_pair(i);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = syms[c.left];
    // Stale when either side has merged since: a symbol's id only changes by merging.
    if (left.size == 0 || left.id != c.left_id || left.next < 0 ||
        syms[left.next].id != c.right_id) {
      continue;
    }
    const int32_t right = left.next;
    left.id = merges_.find(pair_key(c.left_id, c.right_id))->second.result;
    left.size += syms[right].size;
    left.next = syms[right].next;
    if (left.next >= 0) syms[left.next].prev = c.left;
    syms[right].id = -1;
    syms[right].size = 0;
    push_pair(left.prev);
    push_pair(c.left);
  }
  for (int32_t i = 0; i >= 0 && i < n; i = syms[i].next) {
    const Symbol& s = syms[i];
    if (s.id >= 0) {
      out.push_back(s.id);
    } else if (!vocab_.byte_level) {
      // llama.cpp's fallback: each byte's <0xNN> token, skipped when there is none.
      for (uint32_t b = s.begin; b < s.begin + s.size; ++b) {
        const int32_t id = byte_ids_[static_cast<uint8_t>(word[b])];
        if (id >= 0) out.push_back(id);
      }
    } else if (vocab_.unk_id >= 0) {
      out.push_back(vocab_.unk_id);  // a byte with no token of its own
    }
  }
}

void BpeTokenizer::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  const bool cacheable = word.size() <= kCacheMaxWordBytes;
  // The shard is picked by a cheap mix of the word's ends, so the string is hashed only once
  // (inside the shard's map); it only needs to spread concurrent callers.
  const size_t mix = word.size() * 31 + static_cast<uint8_t>(word.front()) * 7 +
                     static_cast<uint8_t>(word.back());
  CacheShard& shard = cache_[mix % kCacheShards];
  if (cacheable) {
    std::lock_guard<std::mutex> lock(shard.mutex);
    const auto it = shard.words.find(word);
    if (it != shard.words.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = out.size();
  bool whole = false;
  const bool newline_run =
      vocab_.whole_newline_runs && word.find_first_not_of('\n') == std::string_view::npos;
  if (vocab_.ignore_merges || newline_run) {
    std::string spelled;
    if (vocab_.byte_level) {
      bytes_to_unicode(word, spelled);
    } else {
      spelled = word;
    }
    const auto it = ids_.find(spelled);
    if (it != ids_.end()) {
      out.push_back(it->second);
      whole = true;
    }
  }
  if (!whole) bpe(word, out);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(shard.mutex);
    if (shard.words.size() >= kCacheWordsPerShard) shard.words.clear();
    shard.words.emplace(std::string(word), std::vector<int32_t>(out.begin() + start, out.end()));
  }
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool add_special,
                                          bool parse_special) const {
  std::string sanitized;
  if (!utf8_is_valid(text)) {
    sanitized = utf8_sanitize(text);
    text = sanitized;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 2);
  if (add_special && vocab_.add_bos && vocab_.bos_id >= 0) ids.push_back(vocab_.bos_id);
  std::vector<AddedTokenMatcher::Fragment> fragments;
  added_.split(text, parse_special, fragments);
  std::vector<std::string_view> words;
  std::string normalized;
  for (const AddedTokenMatcher::Fragment& f : fragments) {
    if (f.token >= 0) {
      ids.push_back(f.token);
      continue;
    }
    std::string_view plain = f.text;
    if (vocab_.normalizer != NormalForm::kNone || vocab_.add_prefix_space) {
      normalized = unicode_normalize(plain, vocab_.normalizer);
      if (vocab_.add_prefix_space && normalized[0] != ' ') normalized.insert(0, 1, ' ');
      plain = normalized;
    }
    if (!vocab_.byte_level) {
      std::string escaped;
      for (const char c : plain) {
        if (c == ' ') {
          escaped += kEscapedSpace;
        } else {
          escaped += c;
        }
      }
      normalized = std::move(escaped);
      plain = normalized;
    }
    pre_.split(plain, words);
    for (const std::string_view w : words) encode_word(w, ids);
  }
  if (add_special && vocab_.add_eos && vocab_.eos_id >= 0) ids.push_back(vocab_.eos_id);
  return ids;
}

void BpeTokenizer::check_id(int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    throw Error("token id " + std::to_string(id) + " is outside the vocabulary of " +
                std::to_string(vocab_size()) + " tokens");
  }
}

std::string BpeTokenizer::token_to_piece(int32_t id, bool render_special) const {
  check_id(id);
  if (is_control(id) && !render_special) return "";
  return pieces_[id];
}

std::string BpeTokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string text;
  for (const int32_t id : ids) {
    check_id(id);
    if (is_control(id) && !render_special) continue;
    text += pieces_[id];
  }
  return text;
}

bool BpeTokenizer::is_eog(int32_t id) const {
  return std::find(eog_ids_.begin(), eog_ids_.end(), id) != eog_ids_.end();
}

bool BpeTokenizer::is_control(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return false;
  const TokenType t = vocab_.types[id];
  return t == TokenType::kControl || t == TokenType::kUnknown;
}

TokenType BpeTokenizer::token_type(int32_t id) const {
  check_id(id);
  return vocab_.types[id];
}

const std::string& BpeTokenizer::token_text(int32_t id) const {
  check_id(id);
  return vocab_.tokens[id];
}

int32_t BpeTokenizer::find_token(std::string_view text) const {
  const auto it = ids_.find(text);
  if (it != ids_.end()) return it->second;
  for (const AddedToken& t : vocab_.added) {
    if (t.content == text) return t.id;
  }
  return -1;
}

}  // namespace loom
