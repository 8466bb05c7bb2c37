#include "tools/bench/model/bench_options.hpp"

#include <charconv>

#include "core/common/error.hpp"
#include "loom/sdk_kv_quant.hpp"

namespace loom::bench {
namespace {

int32_t parse_int(const std::string& opt, const std::string& text, int32_t min) {
  int32_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min)
    throw Error(opt + ": \"" + text + "\" is not an integer >= " + std::to_string(min));
  return v;
}

// "1,2,4" -> {1, 2, 4}; an empty string gives an empty list (skip that test).
std::vector<int32_t> parse_list(const std::string& opt, const std::string& text) {
  std::vector<int32_t> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t comma = text.find(',', start);
    const size_t stop = comma == std::string::npos ? text.size() : comma;
    out.push_back(parse_int(opt, text.substr(start, stop - start), 1));
    start = stop + 1;
  }
  return out;
}

}  // namespace

const char* model_bench_usage() {
  return "Usage: loom-bench model -m MODEL.gguf [options]\n"
         "  -m, --model FILE        GGUF model\n"
         "  -t, --threads N         CPU threads (default 2)\n"
         "  -p, --pp LIST           prompt lengths, one prefill each (default 512; \"\" skips)\n"
         "  -n, --tg LIST           decode steps of one sequence (default 128; \"\" skips)\n"
         "  -b, --batched LIST      parallel sequences for batched decode (default 1,2,4,8,16,32)\n"
         "  --batched-prompt N      tokens of context per sequence before timing (default 32)\n"
         "  --batched-steps N       timed decode steps per size (default 16)\n"
         "  -r, --repetitions N     runs per test, reported as mean +- std (default 3)\n"
         "  --attention NAME        attention plugin (default flash_cpu)\n"
         "  --quantization NAME     quantization plugin (default none)\n"
         "  --quantization-config JSON  its config (default {}), e.g. '{\"group_size\": 32}'\n"
         "  --kv-dtype TYPE         KV pool dtype: f32, f16, bf16, int8, fp8_e4m3 (default f32)\n"
         "  --plugin-dir DIR        search DIR for plugins first (repeatable)\n"
         "  --no-stream             skip the memory read bandwidth measurement\n"
         "  --json FILE             also write the results as JSON\n";
}

ModelBenchOptions parse_model_bench_options(int argc, char** argv) {
  ModelBenchOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") o.help = true;
    else if (a == "-m" || a == "--model") o.model = value();
    else if (a == "-t" || a == "--threads") o.threads = parse_int(a, value(), 1);
    else if (a == "-p" || a == "--pp") o.pp = parse_list(a, value());
    else if (a == "-n" || a == "--tg") o.tg = parse_list(a, value());
    else if (a == "-b" || a == "--batched") o.batched = parse_list(a, value());
    else if (a == "--batched-prompt") o.batched_prompt = parse_int(a, value(), 1);
    else if (a == "--batched-steps") o.batched_steps = parse_int(a, value(), 1);
    else if (a == "-r" || a == "--repetitions") o.repetitions = parse_int(a, value(), 1);
    else if (a == "--attention") o.attention = value();
    else if (a == "--quantization") o.quantization = value();
    else if (a == "--quantization-config") o.quantization_config = value();
    else if (a == "--kv-dtype") {
      o.kv_dtype = value();
      if (sdk::kv::dtype_from_name(o.kv_dtype.c_str()) == LOOM_DTYPE_INVALID)
        throw Error("--kv-dtype must be f32, f16, bf16, int8 or fp8_e4m3, got \"" + o.kv_dtype + "\"");
    }
    else if (a == "--plugin-dir") o.plugin_dirs.push_back(value());
    else if (a == "--no-stream") o.stream = false;
    else if (a == "--json") o.json = value();
    else throw Error("unknown option " + a + " (see --help)");
  }
  if (!o.help && o.model.empty()) throw Error("-m MODEL.gguf is required (see --help)");
  return o;
}

}  // namespace loom::bench
