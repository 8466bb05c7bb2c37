// A Hugging Face model directory (config.json + safetensors) as the executor's LlamaWeights:
// hyperparameters from config.json, and weight views into the safetensors mappings under the
// GGUF tensor names the executor uses. Hugging Face stores q/k rows un-permuted, so its RoPE
// pairs dimensions NeoX-style (rotate_half: i with i + d/2); the hparams say so.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/executor/llama_model.hpp"
#include "core/formats/safetensors_file.hpp"

namespace loom {

// Reads config.json of `dir` (json: its parsed contents). Throws loom::Error naming the field,
// or the unsupported architecture together with the supported list.
LlamaHparams read_hf_hparams(const std::string& dir, const nlohmann::json& config);

// Finds and shape-checks every tensor (shapes from config.json). The views point into `ckpt`,
// which must outlive the result. vocab_size is taken from config.json.
LlamaWeights load_hf_weights(const SafetensorsCheckpoint& ckpt, const LlamaHparams& hparams);

// The GGUF name of a Hugging Face tensor name ("model.layers.3.self_attn.q_proj.weight" ->
// "blk.3.attn_q.weight"; one expert's matrix, "model.layers.3.mlp.experts.5.up_proj.weight", names the
// layer's stacked experts tensor, "blk.3.ffn_up_exps.weight"); empty when the name is not one Loom uses.
std::string hf_to_gguf_tensor_name(const std::string& hf_name);

// A safetensors tensor as a view (shape outermost first, contiguous rows).
loom_tensor_view safetensors_view(const SafetensorsTensor& t);

// The JSON object in file `path`; throws loom::Error naming the file when it is missing
// (unless optional, then null) or not JSON.
nlohmann::json read_json_file(const std::string& path, bool optional);

}  // namespace loom
