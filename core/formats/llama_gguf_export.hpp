// Building Llama-architecture GGUF files the way llama.cpp lays them out (tensor names, dims,
// metadata keys), from a llama2.c checkpoint or from random weights of any shape.
//
// Tensor map (GGUF dims are innermost-first, so a row-major [out, in] matrix has dims {in, out}):
//   token_embd.weight {dim, vocab}        output_norm.weight {dim}      output.weight {dim, vocab}
//   blk.N.attn_norm.weight {dim}          blk.N.ffn_norm.weight {dim}
//   blk.N.attn_q.weight {dim, dim}        blk.N.attn_k.weight {dim, kv_dim}   attn_v likewise
//   blk.N.attn_output.weight {dim, dim}   blk.N.ffn_gate.weight {dim, hidden} (llama2.c w1)
//   blk.N.ffn_down.weight {hidden, dim} (w2)   blk.N.ffn_up.weight {dim, hidden} (w3)
// A Mixtral-style MoE layer (shape.n_experts > 0) has, instead of ffn_gate/up/down,
//   blk.N.ffn_gate_inp.weight {dim, experts} (f32)   blk.N.ffn_gate_exps.weight {dim, hidden, experts}
//   blk.N.ffn_down_exps.weight {hidden, dim, experts}   blk.N.ffn_up_exps.weight {dim, hidden, experts}
// output.weight is omitted when the head is tied to the embedding. Norm vectors stay f32 in
// every file type (as llama.cpp does); matrices take the requested dtype.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/formats/gguf_file.hpp"
#include "core/formats/gguf_writer.hpp"
#include "core/formats/llama2c_checkpoint.hpp"
#include "core/formats/model_presets.hpp"

namespace loom {

using GgufMetadata = std::vector<std::pair<std::string, GgufValue>>;

// tokenizer.* metadata of a llama2.c tokenizer: model "llama", tokens, scores, token_type,
// unknown/bos/eos ids, add_bos_token = true, add_eos_token = false.
GgufMetadata tokenizer_metadata(const Llama2cTokenizer& tok);
// Every tokenizer.* key of a GGUF file, verbatim. Throws loom::Error when it has no
// tokenizer.ggml.tokens array.
GgufMetadata tokenizer_metadata(const GgufFile& file);
// Vocab size = length of tokenizer.ggml.tokens; throws when absent.
int64_t tokenizer_vocab_size(const GgufMetadata& tokenizer);

// general.* and llama.* keys for `shape` (vocab_size must be set); general.file_type from dtype.
void set_llama_metadata(GgufWriter& w, const LlamaShape& shape, const std::string& name, loom_dtype dtype);

struct Llama2cConvertOptions {
  std::string name = "llama";
  loom_dtype dtype = LOOM_DTYPE_F32;  // f32, f16 or bf16 for the matrices
  int64_t context_length = 0;         // 0: the checkpoint's seq_len
};

// A writer whose tensors stream from `ck` (which must outlive the write). Checks that the
// tokenizer has exactly the checkpoint's vocab_size tokens.
GgufWriter llama2c_to_gguf(const Llama2cCheckpoint& ck, const Llama2cTokenizer& tok,
                           const Llama2cConvertOptions& opts);

struct RandomLlamaOptions {
  LlamaShape shape;                   // vocab_size is taken from the tokenizer
  loom_dtype dtype = LOOM_DTYPE_F16;  // f32, f16 or bf16 for the matrices
  uint64_t seed = 0;
  float init_std = 0.02f;             // weights ~ uniform with this standard deviation
  std::string name = "random-llama";
};

// A writer of a random-weight Llama whose tensors are generated while they are written
// (nothing is held in memory); the same options and seed give the same bytes.
GgufWriter random_llama_gguf(const RandomLlamaOptions& opts, const GgufMetadata& tokenizer);

}  // namespace loom
