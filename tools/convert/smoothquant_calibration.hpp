// loom-convert --smoothquant CALIB.txt: the calibration pass of SmoothQuant (Xiao et al. 2023).
// The float model runs over the calibration text in process, through the executor with the
// quantization plugin "none" behind a recording vtable, which keeps for every per-layer matrix
// the maximum |x_j| of each input channel j over all calibration tokens. loom_quantized.cpp
// turns those maxima into smoothing factors s_j = max|x_j|^alpha / max_o|W[o][j]|^(1 - alpha)
// (the int8 plugin's own smoothing_factors), stores W diag(s) quantized and s as N.smooth.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/formats/gguf_file.hpp"

namespace loom::convert {

// Tensor name ("blk.0.attn_q.weight") -> max |x_j| per input channel, [in_features].
using ActivationMaxima = std::map<std::string, std::vector<float>>;

// The calibration text as the model's own tokenizer encodes it (BOS first when the model adds one).
std::vector<int32_t> calibration_tokens(const GgufFile& file, const std::string& text);

// Runs `file` (float matrices) over `tokens` in sequences of at most `chunk` tokens (each from
// position 0) and returns the maxima of every per-layer matrix's input.
ActivationMaxima collect_activation_maxima(const GgufFile& file, std::span<const int32_t> tokens, int32_t chunk = 256);

}  // namespace loom::convert
