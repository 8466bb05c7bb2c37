#include "core/tokenizer/utf8.hpp"

namespace loom {

size_t utf8_lead_length(uint8_t lead) {
  if (lead < 0xC0) return 1;  // ASCII, or a stray continuation byte taken alone
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

Utf8Char utf8_next(std::string_view s) {
  const auto b0 = static_cast<uint8_t>(s[0]);
  if (b0 < 0x80) return {Utf8Status::kComplete, 1};
  // Allowed range of the second byte per lead byte (Unicode Table 3-7); later bytes are 80..BF.
  // The narrowed second-byte ranges exclude overlongs, surrogates and code points > U+10FFFF.
  size_t need = 0;
  uint8_t lo = 0x80;
  uint8_t hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {Utf8Status::kInvalid, 1};  // 80..C1 and F5..FF never start a character
  }
  for (size_t i = 1; i < need; ++i) {
    if (i >= s.size()) return {Utf8Status::kIncomplete, s.size()};
    const auto b = static_cast<uint8_t>(s[i]);
    if (b < lo || b > hi) return {Utf8Status::kInvalid, i};
    lo = 0x80;
    hi = 0xBF;
  }
  return {Utf8Status::kComplete, need};
}

bool utf8_is_valid(std::string_view s) {
  while (!s.empty()) {
    const Utf8Char c = utf8_next(s);
    if (c.status != Utf8Status::kComplete) return false;
    s.remove_prefix(c.length);
  }
  return true;
}

size_t utf8_complete_prefix_length(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    const Utf8Char c = utf8_next(s.substr(pos));
    if (c.status == Utf8Status::kIncomplete) return pos;
    pos += c.length;
  }
  return pos;
}

std::string utf8_sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  while (!s.empty()) {
    const Utf8Char c = utf8_next(s);
    if (c.status == Utf8Status::kComplete) {
      out.append(s.substr(0, c.length));
    } else {
      out.append(kUtf8Replacement);
    }
    s.remove_prefix(c.length);
  }
  return out;
}

}  // namespace loom
