// Command-line options of `loom-bench model`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom::bench {

struct ModelBenchOptions {
  std::string model;                           // -m: GGUF file
  int32_t threads = 2;                         // -t
  std::vector<int32_t> pp = {512};             // -p: prompt lengths (one prefill each)
  std::vector<int32_t> tg = {128};             // -n: decode steps of one sequence
  std::vector<int32_t> batched = {1, 2, 4, 8, 16, 32};  // -b: parallel sequences
  int32_t batched_prompt = 32;                 // --batched-prompt: context before the timed decodes
  int32_t batched_steps = 16;                  // --batched-steps: decode steps timed per size
  int32_t repetitions = 3;                     // -r
  std::string attention = "flash_cpu";         // --attention plugin
  std::string quantization = "none";           // --quantization plugin
  std::string quantization_config = "{}";      // --quantization-config: its JSON config
  std::string kv_dtype = "f32";                // --kv-dtype: f32, f16, bf16, int8, fp8_e4m3
  std::vector<std::string> plugin_dirs;        // --plugin-dir, searched before the executable's dir
  bool stream = true;                          // --no-stream skips the bandwidth measurement
  std::string json;                            // --json FILE
  bool help = false;
};

// Parses argv[1..] (argv[0] is the subcommand name). Throws loom::Error naming the option.
ModelBenchOptions parse_model_bench_options(int argc, char** argv);

const char* model_bench_usage();

}  // namespace loom::bench
