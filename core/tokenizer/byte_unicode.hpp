// GPT-2's byte <-> unicode mapping used by byte-level BPE: every byte value gets a printable code
// point (printable Latin-1 bytes map to themselves, the rest to U+0100.. in byte order), so the
// vocabulary is text while covering all bytes. "Ġ" (U+0120) is the space byte 0x20.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace loom {

// UTF-8 of the code point that stands for byte b.
const std::string& byte_to_unicode(uint8_t b);

// Appends the byte-level spelling of raw bytes.
void bytes_to_unicode(std::string_view bytes, std::string& out);

// The bytes a byte-level spelled token stands for. Code points outside the mapping are copied as
// their UTF-8 (so a token that is not byte-level text decodes to itself).
std::string unicode_to_bytes(std::string_view text);

}  // namespace loom
