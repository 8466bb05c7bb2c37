#include "core/grammar/utf8_ranges.hpp"

#include <algorithm>

namespace loom {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

int encoded_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

uint32_t max_of_length(int n) { return n == 1 ? 0x7F : n == 2 ? 0x7FF : n == 3 ? 0xFFFF : kMaxCodePoint; }

}  // namespace

void append_utf8(uint32_t cp, std::vector<uint8_t>& out) {
  const int n = encoded_length(cp);
  if (n == 1) {
    out.push_back(static_cast<uint8_t>(cp));
    return;
  }
  static constexpr uint8_t kLead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
  out.push_back(static_cast<uint8_t>(kLead[n] | (cp >> (6 * (n - 1)))));
  for (int i = n - 2; i >= 0; --i) out.push_back(static_cast<uint8_t>(0x80 | ((cp >> (6 * i)) & 0x3F)));
}

size_t decode_utf8_at(std::string_view s, size_t pos, uint32_t& cp) {
  const auto lead = static_cast<uint8_t>(s[pos]);
  const size_t n = lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : (lead >> 3) == 30 ? 4 : 0;
  if (n == 0 || pos + n > s.size()) return 0;
  cp = n == 1 ? lead : lead & (0x7Fu >> n);
  for (size_t i = 1; i < n; ++i) {
    const auto b = static_cast<uint8_t>(s[pos + i]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  // Well-formed means RFC 3629's: no overlong form, no surrogate, nothing past U+10FFFF (an F5..F7
  // lead decodes to one, which no grammar can hold).
  if (encoded_length(cp) != static_cast<int>(n) || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
  return n;
}

int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void utf8_range_sequences(uint32_t lo, uint32_t hi, std::vector<ByteRangeSequence>& out) {
  if (lo > hi) return;
  // One encoded length at a time.
  const int n = encoded_length(lo);
  if (encoded_length(hi) != n) {
    utf8_range_sequences(lo, max_of_length(n), out);
    utf8_range_sequences(max_of_length(n) + 1, hi, out);
    return;
  }
  // Split until every trailing group of continuation bytes spans its whole 00-3F range in both
  // ends, so that each byte position varies independently of the others.
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        utf8_range_sequences(lo, lo | m, out);
        utf8_range_sequences((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        utf8_range_sequences(lo, (hi & ~m) - 1, out);
        utf8_range_sequences(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::vector<uint8_t> a, b;
  append_utf8(lo, a);
  append_utf8(hi, b);
  ByteRangeSequence seq(a.size());
  for (size_t i = 0; i < a.size(); ++i) seq[i] = ByteRange{a[i], b[i]};
  out.push_back(std::move(seq));
}

std::vector<std::pair<uint32_t, uint32_t>> normalize_code_ranges(std::vector<std::pair<uint32_t, uint32_t>> ranges,
                                                                 bool negated) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  if (negated) {
    std::vector<std::pair<uint32_t, uint32_t>> out;
    uint32_t next = 0;
    for (const auto& r : merged) {
      if (r.first > next) out.emplace_back(next, r.first - 1);
      next = r.second + 1;
    }
    if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
    merged.swap(out);
  }
  // Surrogates are not characters: never part of a class's encodings.
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (const auto& r : merged) {
    if (r.second < 0xD800 || r.first > 0xDFFF) {
      out.push_back(r);
      continue;
    }
    if (r.first < 0xD800) out.emplace_back(r.first, 0xD7FF);
    if (r.second > 0xDFFF) out.emplace_back(0xE000, r.second);
  }
  return out;
}

}  // namespace loom
