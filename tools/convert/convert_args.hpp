// Command line of loom-convert (CLI11, the shared style of core/common/command_line.hpp): parsed
// into one value, every mistake a UsageError (exit 2).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "loom/types.h"

namespace loom::convert {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class Mode { kHelp, kLlama2c, kRandom, kInput, kHf };

struct Args {
  Mode mode = Mode::kHelp;
  std::string output;
  std::string name;                  // empty: the mode's default
  std::optional<loom_dtype> dtype;   // empty: the mode's default
  int64_t ctx = 0;                   // 0: from the source
  // --llama2c
  std::string llama2c_model;
  std::string tokenizer;
  // --random
  std::string preset;
  std::string dims;
  std::string vocab_from;
  uint64_t seed = 0;
  bool tied = false;
  // --quantize NAME (weight_quantizer.hpp; empty: matrices keep --dtype); --input IN.gguf
  std::string quantize;
  std::string input;
  // --group-size N, --no-zero-point: --quantize int4 only (loom_quantized.hpp)
  int64_t group_size = 128;
  bool zero_point = true;
  // --smoothquant CALIB.txt [--alpha A]: --quantize int8 only (smoothquant_calibration.hpp)
  std::string smoothquant;
  float alpha = 0.5f;
  // --hf DIR: a Hugging Face model directory (hf_convert.hpp)
  std::string hf_dir;
};

Args parse_args(const std::vector<std::string>& argv);
std::string usage_text();  // the --help text

}  // namespace loom::convert
