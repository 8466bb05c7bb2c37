// loom-convert --quantize: the weight formats a converted file's matrices can be written in, and
// the rewrite of a GGUF with its f32/f16/bf16 matrices quantized.
//
// A GGUF block format is one registry entry {name, output dtype, block geometry, quantize-rows
// function}. The entries are every format of weight_quantizer.cpp's table that the SDK's block
// dispatch (sdk::gguf::quantize_row) can write in this build, so a type added to the SDK shows up
// here once the table names it. The K-quant mixes (q4_k_m, ...) are quant_mix.hpp's.
//
// Which tensors are quantized (as llama.cpp's llama-quantize does):
//   - 2-D f32/f16/bf16 tensors; 1-D tensors (norms) stay as they are, already-quantized ones are
//     copied verbatim.
//   - The output head (output.weight, or token_embd.weight when the head is tied to it) is
//     quantized to q6_K unless the format is q8_0 or q6_K: low-bit logits cost quality the rest
//     of the model does not (llama.cpp keeps Q6_K there too).
//   - A matrix whose rows are not whole blocks of the format falls back, with a note: q4_K ->
//     q4_0, q6_K -> q8_0, q5_K -> q5_1, q2_K/q3_K -> q4_0, iq4_xs -> iq4_nl, and to its stored
//     dtype when even that does not fit (the demo model's ffn_down, in = 172).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/formats/gguf_file.hpp"
#include "core/formats/gguf_writer.hpp"

namespace loom::convert {

struct WeightQuantizer {
  std::string name;             // the --quantize value: "q8_0"
  loom_dtype dtype;             // tensor type written
  int64_t block_values;         // a row must be a whole number of blocks
  int64_t block_bytes;
  uint32_t file_type;           // general.file_type (llama_ftype) of a file mostly in this format
  std::string fallback;         // entry used when rows are not whole blocks ("" = keep the source)
  // x: [n] f32 (n a multiple of block_values) -> n / block_values blocks at out.
  std::function<void(const float* x, int64_t n, uint8_t* out)> quantize_row;
};

// Every format, in --help order.
const std::vector<WeightQuantizer>& weight_quantizers();
// The entry named `name`, or nullptr.
const WeightQuantizer* find_weight_quantizer(const std::string& name);
// The --quantize values written in Loom's own pre-quantized layout instead of a GGUF block
// type: "int8", "int4", "fp8" (loom_quantized.hpp writes them).
const std::vector<std::string>& loom_quant_formats();
bool is_loom_quant_format(const std::string& name);
// "q8_0, q4_0, ..., int8, int4, fp8": every --quantize value, for messages.
std::string weight_quantizer_names();

// The dtype one tensor is written in (source dtype = kept), and why when it is not `q`'s.
struct TensorQuantization {
  loom_dtype dtype;
  std::string note;  // empty when the tensor simply takes q's format or is not a matrix
};
TensorQuantization plan_tensor(const GgufTensorInfo& t, bool head, const WeightQuantizer& q);

// A writer of `in` with its matrices quantized by `q`: every metadata key (general.file_type
// updated), every tensor in order, quantized rows produced while written. Notes about fallbacks
// go to `notes`. `in` must outlive the write.
GgufWriter quantize_gguf(const GgufFile& in, const WeightQuantizer& q, std::vector<std::string>* notes);

}  // namespace loom::convert
