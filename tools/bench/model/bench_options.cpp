#include "tools/bench/model/bench_options.hpp"

#include <charconv>

#include "core/common/error.hpp"

namespace loom::bench {
namespace {

// "1,2,4" -> {1, 2, 4}; an empty string gives an empty list (skip that test).
std::vector<int32_t> parse_list(const std::string& opt, const std::string& text) {
  std::vector<int32_t> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t comma = text.find(',', start);
    const size_t stop = comma == std::string::npos ? text.size() : comma;
    const std::string item = text.substr(start, stop - start);
    int32_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || end != item.data() + item.size() || v < 1)
      throw Error(opt + ": \"" + item + "\" is not an integer >= 1");
    out.push_back(v);
    start = stop + 1;
  }
  return out;
}

struct Lists {
  std::string pp, tg, batched;
};

void add_options(CLI::App& app, ModelBenchOptions& o, Lists& lists) {
  cli::apply_style(app);
  add_engine_options(app, o);
  app.add_option("-p,--pp", lists.pp, "prompt lengths, one prefill each (default 512; \"\" skips)");
  app.add_option("-n,--tg", lists.tg, "decode steps of one sequence (default 128; \"\" skips)");
  app.add_option("-b,--batched", lists.batched, "parallel sequences for batched decode (default 1,2,4,8,16,32)");
  app.add_option("--batched-prompt", o.batched_prompt, "tokens of context per sequence before timing (default 32)")
      ->check(cli::integer_in(1));
  app.add_option("--batched-steps", o.batched_steps, "timed decode steps per size (default 16)")
      ->check(cli::integer_in(1));
  app.add_option("-r,--repetitions", o.repetitions, "runs per test, reported as mean +- std (default 3)")
      ->check(cli::integer_in(1));
  app.add_flag("!--no-stream", o.stream, "skip the memory read bandwidth measurement");
}

constexpr const char* kDescription = "Times the model itself, without a server (llama-bench's tests).";

}  // namespace

std::string model_bench_usage() {
  ModelBenchOptions o;
  Lists lists;
  CLI::App app{kDescription, "loom-bench model"};
  add_options(app, o, lists);
  return app.help();
}

ModelBenchOptions parse_model_bench_options(int argc, char** argv) {
  ModelBenchOptions o;
  Lists lists;
  CLI::App app{kDescription, "loom-bench model"};
  add_options(app, o, lists);
  if (cli::parse_or_throw(app, std::vector<std::string>(argv + 1, argv + argc))) {
    o.help = true;
    return o;
  }
  if (app.count("--pp") > 0) o.pp = parse_list("--pp", lists.pp);
  if (app.count("--tg") > 0) o.tg = parse_list("--tg", lists.tg);
  if (app.count("--batched") > 0) o.batched = parse_list("--batched", lists.batched);
  return o;
}

}  // namespace loom::bench
