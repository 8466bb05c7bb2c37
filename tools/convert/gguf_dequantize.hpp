// loom-convert --input IN.gguf --dtype f32|f16|bf16: every block-quantized tensor of a GGUF file
// dequantized (sdk::gguf::dequantize_row, the very values the gguf plugin computes with), so a
// quantized download can become a reference model, a speculative-decoding target or the source
// of another quantization. Metadata is kept (general.file_type becomes llama.cpp's ALL_F32 = 0,
// MOSTLY_F16 = 1 or MOSTLY_BF16 = 32); f32/f16/bf16 tensors and norms are copied as they are.
#pragma once

#include <string>
#include <vector>

#include "core/formats/gguf_file.hpp"
#include "core/formats/gguf_writer.hpp"

namespace loom::convert {

// `to` is f32, f16 or bf16. A tensor of a type this build cannot read is refused (loom::Error
// naming the tensor, its type and the types that can be read). One note per dequantized type.
GgufWriter dequantize_gguf(const GgufFile& in, loom_dtype to, std::vector<std::string>* notes);

}  // namespace loom::convert
