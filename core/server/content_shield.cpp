#include "core/server/content_shield.hpp"

#include <algorithm>

#include "core/tokenizer/tokenizer.hpp"

namespace loom {
namespace {

constexpr std::string_view kOpen = "\xEE\x80\x80";   // U+E000, private use
constexpr std::string_view kClose = "\xEE\x80\x81";  // U+E001

}  // namespace

std::string ContentShield::shield(std::string_view content) {
  std::vector<std::string> found;
  for (int32_t id : tokenizer_.encode(content, false, /*parse_special=*/true)) {
    if (tokenizer_.is_control(id)) found.push_back(tokenizer_.token_to_piece(id, /*render_special=*/true));
  }
  if (content.find(kOpen) != std::string_view::npos) found.emplace_back(kOpen);
  if (found.empty()) return std::string(content);
  // Longest first, so a text that contains another is replaced whole.
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  found.erase(std::unique(found.begin(), found.end()), found.end());
  std::string out;
  for (size_t pos = 0; pos < content.size();) {
    const auto hit = std::find_if(found.begin(), found.end(), [&](const std::string& t) {
      return !t.empty() && content.compare(pos, t.size(), t) == 0;
    });
    if (hit == found.end()) {
      out += content[pos++];
      continue;
    }
    const auto known = std::find(texts_.begin(), texts_.end(), *hit);
    const size_t k = static_cast<size_t>(known - texts_.begin());
    if (known == texts_.end()) texts_.push_back(*hit);
    out += std::string(kOpen) + std::to_string(k) + std::string(kClose);
    pos += hit->size();
  }
  return out;
}

std::string ContentShield::restore(std::string_view text) const {
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    const size_t open = text.find(kOpen, pos);
    if (open == std::string_view::npos) {
      out.append(text.substr(pos));
      break;
    }
    out.append(text.substr(pos, open - pos));
    const size_t close = text.find(kClose, open + kOpen.size());
    const std::string_view digits =
        close == std::string_view::npos ? std::string_view() : text.substr(open + kOpen.size(), close - open - kOpen.size());
    size_t k = 0;
    const bool number = !digits.empty() && digits.size() < 10 &&
                        std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (number) k = std::stoul(std::string(digits));
    if (!number || k >= texts_.size()) {  // not one of ours (cannot come from content): keep it
      out.append(kOpen);
      pos = open + kOpen.size();
      continue;
    }
    out += texts_[k];
    pos = close + kClose.size();
  }
  return out;
}

std::vector<int32_t> ContentShield::encode(std::string_view rendered, bool add_special) const {
  std::vector<int32_t> out;
  std::vector<int32_t> around = tokenizer_.encode("", add_special);  // BOS (and EOS) as asked
  const int32_t bos = tokenizer_.bos_id();
  const bool leading_bos = !around.empty() && around.front() == bos;
  if (leading_bos) out.push_back(bos);
  size_t cursor = 0;
  auto plain = [&](std::string_view text) {
    if (text.empty()) return;
    const std::vector<int32_t> ids = tokenizer_.encode(restore(text), false, /*parse_special=*/false);
    out.insert(out.end(), ids.begin(), ids.end());
  };
  for (int32_t id : tokenizer_.encode(rendered, false, /*parse_special=*/true)) {
    if (!tokenizer_.is_control(id)) continue;
    const std::string piece = tokenizer_.token_to_piece(id, true);
    const size_t at = piece.empty() ? std::string_view::npos : rendered.find(piece, cursor);
    if (at == std::string_view::npos) continue;  // no text of its own: nothing to split at
    plain(rendered.substr(cursor, at - cursor));
    out.push_back(id);
    cursor = at + piece.size();
  }
  plain(rendered.substr(cursor));
  out.insert(out.end(), around.begin() + (leading_bos ? 1 : 0), around.end());
  return out;
}

}  // namespace loom
