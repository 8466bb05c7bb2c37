// Code point ranges as UTF-8 byte-range sequences: [U+0080, U+07FF] is the one sequence
// [C2-DF][80-BF]; an arbitrary range splits into a few such sequences (at most a handful per
// encoded length). This is what lets the grammar IR be over bytes while classes are over
// characters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace loom {

struct ByteRange {
  uint8_t lo = 0;
  uint8_t hi = 0;
};
using ByteRangeSequence = std::vector<ByteRange>;  // one range per byte position

// Appends the sequences whose byte strings are exactly the UTF-8 encodings of [lo, hi]
// (lo <= hi <= 0x10FFFF; surrogates in the range are encoded like any other code point, so
// callers exclude them).
void utf8_range_sequences(uint32_t lo, uint32_t hi, std::vector<ByteRangeSequence>& out);

// Sorted, merged ranges; negated: the complement within [0, 0x10FFFF] without surrogates.
std::vector<std::pair<uint32_t, uint32_t>> normalize_code_ranges(std::vector<std::pair<uint32_t, uint32_t>> ranges,
                                                                 bool negated);

// UTF-8 encoding of one code point.
void append_utf8(uint32_t cp, std::vector<uint8_t>& out);

// The code point whose UTF-8 encoding starts at s[pos]: its length, or 0 when the bytes there
// are not well-formed UTF-8 (RFC 3629: overlong forms, surrogates and code points past U+10FFFF
// are not; the grammar and regex texts are UTF-8).
size_t decode_utf8_at(std::string_view s, size_t pos, uint32_t& cp);

// 0-15 for a hex digit, -1 otherwise.
int hex_digit_value(char c);

}  // namespace loom
