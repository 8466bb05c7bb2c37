// GPT-2's bytes_to_unicode() table, built once.
#include "core/tokenizer/byte_unicode.hpp"

#include <vector>

#include "core/tokenizer/utf8.hpp"

namespace loom {

namespace {

std::string encode_utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

struct Tables {
  std::array<std::string, 256> to_unicode;
  std::vector<int16_t> to_byte;  // [0x200] code point -> byte, -1 when not in the mapping

  Tables() : to_byte(0x200, -1) {
    // Bytes that are printable in Latin-1 keep their code point; the others take U+0100 + n in
    // byte order (the order GPT-2's encoder.json was built with).
    uint32_t next = 0x100;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const uint32_t cp = printable ? b : next++;
      to_unicode[b] = encode_utf8(cp);
      to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t b) { return tables().to_unicode[b]; }

void bytes_to_unicode(std::string_view bytes, std::string& out) {
  const Tables& t = tables();
  for (const char c : bytes) out += t.to_unicode[static_cast<uint8_t>(c)];
}

std::string unicode_to_bytes(std::string_view text) {
  const Tables& t = tables();
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const uint8_t lead = static_cast<uint8_t>(text[i]);
    size_t len = utf8_lead_length(lead);
    if (i + len > text.size()) len = text.size() - i;
    uint32_t cp = 0x200;  // "not mapped" unless decoded below
    if (len == 1 && lead < 0x80) {
      cp = lead;
    } else if (len == 2) {
      cp = ((lead & 0x1Fu) << 6) | (static_cast<uint8_t>(text[i + 1]) & 0x3Fu);
    }
    if (cp < t.to_byte.size() && t.to_byte[cp] >= 0) {
      out += static_cast<char>(t.to_byte[cp]);
    } else {
      out.append(text.substr(i, len));
    }
    i += len;
  }
  return out;
}

}  // namespace loom
