// loom-convert --quantize int8|int4|fp8: GGUF files whose per-layer matrices are stored in the
// form Loom's quantization plugins of the same names make at load, computed by the plugins' own
// row quantizers, so a model served from the converted file gives exactly the float file's
// logits under that plugin, without quantizing at every start.
//
// Layout of one matrix N, Loom shape [out, in] (GGUF dims are the reverse, innermost first):
//   int8: N I8 [out, in] (q in [-127, 127]) + N.scale F32 [out]        (int8_format.hpp)
//   fp8:  N I8 [out, in] holding E4M3 codes + N.scale F32 [out]        (fp8_format.hpp)
//         + N.smooth F32 [in] with --smoothquant: SmoothQuant factors s folded into W (W diag(s))
//   int4: N I32 [out, ceil(in / 8)] packed nibbles (GPTQ order) + N.scale F32 [out, n_groups]
//         + N.zero I8 [out, n_groups] (0..15; omitted without zero points) (int4_format.hpp);
//         n_groups = ceil(in / group_size), the last group short when group_size does not divide in.
// Only the seven per-layer matrices (attn_q/k/v/output, ffn_gate/up/down) are quantized:
// token_embd.weight and the output head stay in their float dtype (GPTQ/AWQ leave lm_head
// unquantized; the embedding lookup needs floats), norms and other tensors are copied.
// Metadata: loom.quantization.format = "int8" | "int4" | "fp8_e4m3", and for int4
// loom.quantization.group_size (u32) and loom.quantization.zero_point (bool); with SmoothQuant
// loom.quantization.smoothquant_alpha (f32). general.file_type
// is left as the source's: llama.cpp's ftype list has no per-channel int8, fp8 or these int4.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/formats/gguf_file.hpp"
#include "core/formats/gguf_writer.hpp"
#include "tools/convert/smoothquant_calibration.hpp"

namespace loom::convert {

struct LoomQuantOptions {
  std::string format;       // "int8", "int4" or "fp8" (the --quantize value)
  int64_t group_size = 128; // int4: 32, 64 or 128
  bool zero_point = true;   // int4: asymmetric groups with zero points
  // int8 with SmoothQuant: the calibration maxima of every layer matrix's input (nullptr: none)
  // and the migration strength. Each matrix N is then stored as W diag(s) quantized, with
  // N.smooth F32 [in] = s, s from the int8 plugin's smoothing_factors().
  const ActivationMaxima* act_absmax = nullptr;
  float alpha = 0.5f;
};

// (loom_quant_formats() and is_loom_quant_format() are in weight_quantizer.hpp.)
// The loom.quantization.format value of a --quantize value ("fp8" -> "fp8_e4m3").
std::string loom_quant_format_key(const std::string& name);

// Whether a tensor name is one of the per-layer matrices: "blk.<n>.attn_q.weight", ...
bool is_layer_matrix(const std::string& name);

// One matrix quantized: the bytes of N, and of its companions (zero empty when not written).
struct LoomQuantized {
  loom_dtype dtype;            // of N: I8 or I32
  std::vector<int64_t> dims;   // of N, GGUF order
  std::vector<uint8_t> data;   // N's bytes
  std::vector<float> scale;    // [out] (int8, fp8) or [out, n_groups] (int4)
  std::vector<uint8_t> zero;   // int4 with zero points: [out, n_groups]
  std::vector<float> smooth;   // int8 with SmoothQuant: [in]
  int64_t n_groups = 1;
};
// t: a 2-D f32/f16/bf16 tensor. Throws loom::Error naming the tensor otherwise.
LoomQuantized quantize_matrix(const GgufTensorInfo& t, const LoomQuantOptions& o);

// A writer of `in` with its layer matrices in `o.format`; quantization runs while writing, one
// matrix at a time. `in` (and o.act_absmax) must outlive the write. Notes (what stayed float)
// go to `notes`.
GgufWriter loom_quantize_gguf(const GgufFile& in, const LoomQuantOptions& o, std::vector<std::string>* notes);

}  // namespace loom::convert
