// Command-line options of `loom-bench model` (and the engine options `perplexity` shares), in
// the shared CLI11 style of core/common/command_line.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/common/command_line.hpp"
#include "loom/sdk_kv_quant.hpp"

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

std::string model_bench_usage();

// The options of the engine a benchmark builds, for any options struct with these fields (the
// model bench's and perplexity's).
template <typename Options>
void add_engine_options(CLI::App& app, Options& o) {
  app.add_option("-m,--model", o.model, "GGUF model")->required();
  app.add_option("-t,--threads", o.threads, "CPU threads (default 2)")->check(cli::integer_in(1));
  app.add_option("--attention", o.attention, "attention plugin (default flash_cpu)");
  app.add_option("--quantization", o.quantization, "quantization plugin (default none)");
  app.add_option("--quantization-config", o.quantization_config,
                 "its config as JSON (default {}), e.g. '{\"group_size\": 32}'");
  app.add_option("--kv-dtype", o.kv_dtype, "KV pool dtype: f32, f16, bf16, int8, fp8_e4m3 (default f32)")
      ->check(CLI::Validator(
          [](std::string& v) {
            return sdk::kv::dtype_from_name(v.c_str()) == LOOM_DTYPE_INVALID
                       ? "must be f32, f16, bf16, int8 or fp8_e4m3, got \"" + v + "\""
                       : std::string();
          },
          ""));
  app.add_option("--plugin-dir", o.plugin_dirs, "search DIR for plugins first (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--json", o.json, "also write the results as JSON");
}

}  // namespace loom::bench
