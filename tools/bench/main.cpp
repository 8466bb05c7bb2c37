// loom-bench: benchmarks of Loom. `serve` loads any OpenAI-compatible server and measures at the
// client; `model` (when built) times the model itself.
#include <cstring>
#include <iostream>

#include "tools/bench/serve_main.hpp"
#include "tools/bench/tokenizer_bench.hpp"
#ifdef LOOM_BENCH_HAVE_MODEL
#include "tools/bench/model/model_bench.hpp"
#include "tools/bench/model/perplexity.hpp"
#endif

namespace {

void usage(std::ostream& out) {
  out << "usage: loom-bench <command> [options]   (loom-bench <command> --help for its options)\n"
         "commands:\n"
         "  serve   load an OpenAI-compatible server (Loom, llama.cpp, vLLM, SGLang, ...) and\n"
         "          report TTFT, TPOT, ITL, E2E latency, throughput and goodput\n"
         "  tokenizer  encode throughput (MB/s, one thread) of a GGUF or tokenizer.json tokenizer\n";
#ifdef LOOM_BENCH_HAVE_MODEL
  out << "  model   time the model itself, without a server\n"
         "  perplexity  token-level perplexity of a model on a text (per quantization / KV dtype)\n";
#endif
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(std::cerr);
    return 2;
  }
  const char* command = argv[1];
  if (std::strcmp(command, "serve") == 0) return loom::bench::serve_main(argc - 1, argv + 1);
  if (std::strcmp(command, "tokenizer") == 0) {
    return loom::bench::tokenizer_main(argc - 1, argv + 1);
  }
#ifdef LOOM_BENCH_HAVE_MODEL
  if (std::strcmp(command, "model") == 0) return loom::bench::model_main(argc - 1, argv + 1);
  if (std::strcmp(command, "perplexity") == 0) return loom::bench::perplexity_main(argc - 1, argv + 1);
#endif
  if (std::strcmp(command, "--help") == 0 || std::strcmp(command, "-h") == 0) {
    usage(std::cout);
    return 0;
  }
  std::cerr << "loom-bench: unknown command '" << command << "'\n";
  usage(std::cerr);
  return 2;
}
