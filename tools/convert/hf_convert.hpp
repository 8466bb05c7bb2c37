// loom-convert --hf: a Hugging Face model directory (config.json, safetensors, tokenizer.json,
// tokenizer_config.json) -> one GGUF file as llama.cpp's convert_hf_to_gguf.py lays it out:
// general.architecture llama (Llama, Mistral), qwen2 or qwen3 with their keys; q/k rows of the
// llama family permuted from Hugging Face's rotate_half order to GGUF's interleaved pairs; Llama 3
// RoPE scaling as the rope_freqs.weight divisors; the tokenizer as tokenizer.ggml.* metadata
// and the chat template as tokenizer.chat_template.
#pragma once

#include <string>
#include <vector>

#include "core/executor/model_source.hpp"
#include "core/formats/gguf_writer.hpp"

namespace loom::convert {

struct HfConvertOptions {
  loom_dtype dtype = LOOM_DTYPE_F32;  // matrices: f32, f16 or bf16; norms and biases stay f32
  std::string name;                   // general.name; empty: the directory's name
};

// The GGUF of an opened HF directory. Tensor bytes are produced while the file is written and
// read from `src`'s mappings, so `src` must outlive the writer. `notes` (optional) collects what
// a reader should know (e.g. a sliding window only llama.cpp-style metadata keys carry).
// Throws loom::Error naming what cannot be expressed (dynamic RoPE scaling, partial rotary with
// the interleaved layout, ...).
GgufWriter hf_to_gguf(const ModelSource& src, const HfConvertOptions& opts, std::vector<std::string>* notes);

// Row order of one projection [n_heads * head_dim, cols] for GGUF's interleaved RoPE: within each
// head, row 2i takes row i and row 2i+1 takes row i + head_dim/2 (NeoX -> interleaved pairs).
// values: [rows, cols] row-major, permuted in place.
void permute_rows_for_interleaved_rope(std::vector<float>& values, int64_t n_heads, int64_t head_dim, int64_t cols);

}  // namespace loom::convert
