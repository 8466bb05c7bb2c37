// The rewrite of a GGUF file with each tensor in a dtype of its own: every metadata key kept, every
// tensor in the source's order, rows converted while written (source -> f32 -> target), so a
// 16 GB model needs a few rows of memory. --quantize (one format or a mix) and --dtype
// (dequantization) both come down to choosing one dtype per tensor and calling rewrite_gguf.
//
// Which types a conversion can use is whatever the SDK's block table (loom/sdk_gguf_blocks.hpp)
// dequantizes and quantizes, plus f32/f16/bf16: a type added there is usable here unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/formats/gguf_file.hpp"
#include "core/formats/gguf_writer.hpp"

namespace loom::convert {

bool is_float_type(loom_dtype t);  // f32, f16, bf16
// A block-quantized ggml type this build turns into f32 (sdk::gguf::dequantize_row).
bool can_dequantize(loom_dtype t);
// A block-quantized ggml type this build writes (sdk::gguf::quantize_row); activation-only types
// (q8_1, q8_K) never count.
bool can_quantize(loom_dtype t);
// "f32, f16, bf16, q4_0, ...": the types a rewrite can read (for messages).
std::string readable_type_names();

// dtypes[i] is the type tensor i of `in` is written in; a tensor whose dtype is its own is copied
// byte for byte. `file_type` goes to general.file_type (llama.cpp's llama_ftype). Throws
// loom::Error naming the tensor and the type when a conversion is not possible. `in` must
// outlive the write.
GgufWriter rewrite_gguf(const GgufFile& in, const std::vector<loom_dtype>& dtypes, uint32_t file_type);

}  // namespace loom::convert
