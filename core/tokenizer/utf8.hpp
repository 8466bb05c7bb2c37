// UTF-8 helpers for tokenizers and streaming detokenization. Token pieces are raw bytes: a
// byte-fallback token carries one byte of a multi-byte character, so text assembled from tokens
// may be cut inside a character or be invalid. These helpers classify such byte strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace loom {

// U+FFFD REPLACEMENT CHARACTER, what an invalid sequence becomes.
inline constexpr std::string_view kUtf8Replacement = "\xEF\xBF\xBD";

// Length a lead byte announces, used to cut text into characters for tokenizing: 1 for ASCII,
// continuation bytes (10xxxxxx) and nothing else; 2/3/4 for 110/1110/1111 prefixes. It does not
// look at the following bytes, so "\xC3A" is one 2-byte unit (as SentencePiece-BPE in llama.cpp
// splits it), which makes invalid text byte-fall-back exactly like the reference.
size_t utf8_lead_length(uint8_t lead);

enum class Utf8Status { kComplete, kIncomplete, kInvalid };

// What starts at s[0] (s non-empty), per Unicode's "maximal subpart" rule:
//  kComplete   - a well-formed character of `length` bytes;
//  kIncomplete - all `length` bytes (== s.size()) are a valid start of a character that more
//                bytes could still complete;
//  kInvalid    - the first `length` bytes (>= 1) are a maximal invalid subpart: one U+FFFD.
struct Utf8Char {
  Utf8Status status = Utf8Status::kComplete;
  size_t length = 0;
};
Utf8Char utf8_next(std::string_view s);

// True when s is well-formed UTF-8 (no invalid and no incomplete sequence).
bool utf8_is_valid(std::string_view s);

// Length of the longest prefix of s after which nothing is pending: s.substr(n) is empty or a
// single incomplete-but-completable character (at most 3 bytes). Invalid bytes count as decided,
// so they are inside the prefix.
size_t utf8_complete_prefix_length(std::string_view s);

// s with every maximal invalid subpart, and an incomplete character at the end, replaced by
// U+FFFD.
std::string utf8_sanitize(std::string_view s);

}  // namespace loom
