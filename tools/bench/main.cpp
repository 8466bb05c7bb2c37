// loom-bench: benchmarks of Loom. `serve` loads any OpenAI-compatible server and measures at the
// client; `model` (when built) times the model itself. Each command parses its own options.
#include <string>
#include <vector>

#include "core/common/command_line.hpp"
#include "tools/bench/serve_main.hpp"
#include "tools/bench/tokenizer_bench.hpp"
#ifdef LOOM_BENCH_HAVE_MODEL
#include "tools/bench/model/model_bench.hpp"
#include "tools/bench/model/perplexity.hpp"
#endif

namespace {

struct Command {
  const char* name;
  const char* help;
  int (*main)(int argc, char** argv);  // argv[0] is the command's name
};

const Command kCommands[] = {
    {"serve", "load an OpenAI-compatible server (Loom, llama.cpp, vLLM, SGLang, ...) and report TTFT, TPOT, ITL, "
              "E2E latency, throughput and goodput",
     loom::bench::serve_main},
    {"tokenizer", "encode throughput (MB/s, one thread) of a GGUF or tokenizer.json tokenizer",
     loom::bench::tokenizer_main},
#ifdef LOOM_BENCH_HAVE_MODEL
    {"model", "time the model itself, without a server", loom::bench::model_main},
    {"perplexity", "token-level perplexity of a model on a text (per quantization / KV dtype)",
     loom::bench::perplexity_main},
#endif
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Benchmarks of Loom (loom-bench COMMAND --help for a command's options).", "loom-bench"};
  loom::cli::apply_style(app);
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, const Command*>> subs;
  for (const Command& c : kCommands) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    sub->set_help_flag();   // COMMAND --help is the command's own
    sub->prefix_command();  // everything after COMMAND goes to it unparsed
    subs.emplace_back(sub, &c);
  }
  if (auto status = loom::cli::parse(app, argc, argv)) return *status;
  for (const auto& [sub, command] : subs) {
    if (!sub->parsed()) continue;
    std::vector<std::string> args = {std::string("loom-bench ") + command->name};
    for (std::string& a : sub->remaining()) args.push_back(std::move(a));
    std::vector<char*> command_argv;
    for (std::string& a : args) command_argv.push_back(a.data());
    command_argv.push_back(nullptr);
    return command->main(static_cast<int>(args.size()), command_argv.data());
  }
  return loom::cli::kUsageExitStatus;
}
