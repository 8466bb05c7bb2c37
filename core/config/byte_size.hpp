// Byte sizes as people write them in configs: 512, "512", "64KiB", "2GiB", "1.5GB", "100 MB".
// One rule set for the core and the plugins, so `kv_memory = "64MiB"` means the same everywhere.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace loom {

// Parses a non-negative byte count: an integer with an optional decimal fraction, optional
// spaces, and an optional unit. Units (case-insensitive): B; decimal KB MB GB TB (1000^n);
// binary KiB MiB GiB TiB (1024^n). A fraction must come to a whole number of bytes
// ("1.5KiB" = 1536, "0.5B" is an error). Throws loom::Error naming the text on anything else,
// on negative values and on values above INT64_MAX.
int64_t parse_byte_size(std::string_view text);

// The shortest exact spelling with a binary unit ("64MiB", "1536KiB"), or plain digits when no
// binary unit divides the value ("1000"). parse_byte_size(format_byte_size(n)) == n.
std::string format_byte_size(int64_t bytes);

}  // namespace loom
