// AddedTokenMatcher: one left-to-right scan; only bytes that start some added token are tried.
#include "core/tokenizer/added_tokens.hpp"

#include <algorithm>

namespace loom {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  for (uint32_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i].content.empty()) continue;
    by_first_byte_[static_cast<uint8_t>(tokens_[i].content[0])].push_back(i);
  }
  for (auto& list : by_first_byte_) {
    std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
  }
}

const AddedToken* AddedTokenMatcher::find(int32_t id) const {
  for (const AddedToken& t : tokens_) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

void AddedTokenMatcher::split(std::string_view text, bool parse_special,
                              std::vector<Fragment>& out) const {
  out.clear();
  size_t plain_begin = 0;
  size_t i = 0;
  while (i < text.size()) {
    const auto& candidates = by_first_byte_[static_cast<uint8_t>(text[i])];
    const AddedToken* hit = nullptr;
    for (const uint32_t c : candidates) {
      const AddedToken& t = tokens_[c];
      if (t.special && !parse_special) continue;
      if (text.compare(i, t.content.size(), t.content) == 0) {
        hit = &t;
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    size_t plain_end = i;
    if (hit->lstrip) {
      while (plain_end > plain_begin && is_space(text[plain_end - 1])) --plain_end;
    }
    if (plain_end > plain_begin) {
      out.push_back({-1, text.substr(plain_begin, plain_end - plain_begin)});
    }
    out.push_back({hit->id, text.substr(i, hit->content.size())});
    i += hit->content.size();
    if (hit->rstrip) {
      while (i < text.size() && is_space(text[i])) ++i;
    }
    plain_begin = i;
  }
  if (plain_begin < text.size()) out.push_back({-1, text.substr(plain_begin)});
}

}  // namespace loom
