// Weights pre-quantized by `loom-convert --quantize int8|int4|fp8` are stored in GGUF integer
// types (I8 bytes for int8 and for fp8 E4M3, I32 words for packed int4), with the format named in
// `loom.quantization.format`. The bytes only mean something to the plugin that wrote their
// layout: int8 and fp8 files are both I8, so the wrong one of the two would run and give garbage.
// The host therefore checks the configured plugin against the file before loading.
#pragma once

#include <optional>
#include <string>

#include "core/formats/gguf_file.hpp"

namespace loom {

// The quantization plugin a file's `loom.quantization.format` needs ("int8", "int4" or "fp8"),
// nullopt when the file has no such key. Throws loom::Error for a format it does not know.
std::optional<std::string> plugin_for_prequantized(const GgufFile& file);

// Throws loom::Error naming the file, its format and both plugins when `plugin` is not the one
// the file needs.
void check_prequantized_plugin(const GgufFile& file, const std::string& plugin);

}  // namespace loom
