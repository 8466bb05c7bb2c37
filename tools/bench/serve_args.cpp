#include "tools/bench/serve_args.hpp"

#include <cmath>
#include <limits>

#include "core/common/command_line.hpp"
#include "core/common/error.hpp"

namespace loom::bench {
namespace {

double to_double(const std::string& option, const std::string& value) {
  try {
    size_t used = 0;
    const double v = std::stod(value, &used);
    if (used == value.size() && !std::isnan(v)) return v;
  } catch (const std::exception&) {
  }
  throw Error(option + ": expected a number, got '" + value + "'");
}

// "ttft:500" -> the SLO field; several may be given after one --goodput.
void read_slo(const std::string& item, GoodputSlo& slo) {
  const size_t colon = item.find(':');
  if (colon == std::string::npos) throw Error("--goodput: expected NAME:MS (ttft, tpot, e2el), got '" + item + "'");
  const std::string name = item.substr(0, colon);
  const double ms = to_double("--goodput " + name, item.substr(colon + 1));
  if (!(ms > 0)) throw Error("--goodput " + item + ": the limit must be > 0 ms");
  if (name == "ttft") slo.ttft_ms = ms;
  else if (name == "tpot") slo.tpot_ms = ms;
  else if (name == "e2el") slo.e2el_ms = ms;
  else throw Error("--goodput: unknown metric '" + name + "' (ttft, tpot or e2el)");
}

constexpr const char* kDescription =
    "Loads an OpenAI-compatible server with streaming requests and reports TTFT, TPOT, ITL, E2E latency, "
    "throughput and goodput as measured at the client.";

// The options as CLI11 fills them (a few need a second look after parsing).
struct Raw {
  std::string request_rate;
  std::vector<std::string> goodput;
  std::vector<std::string> classes;
  bool no_class_fields = false;
  int64_t input_len = 0, output_len = 0;
  bool no_ignore_eos = false;
};

void add_options(CLI::App& app, ServeArgs& a, Raw& raw) {
  cli::apply_style(app);
  app.add_option("--base-url", a.base_url, "http://host:port[/prefix] (default: from --host and --port)")
      ->group("Server");
  app.add_option("--host", a.host, "default 127.0.0.1")->group("Server");
  app.add_option("--port", a.port, "default 8080")->check(cli::integer_in(1, 65535))->group("Server");
  app.add_option("--endpoint", a.endpoint, "/v1/completions (default) or /v1/chat/completions")
      ->check(CLI::IsMember({"/v1/completions", "/v1/chat/completions"}))
      ->group("Server");
  app.add_option("--model", a.model, "default: the first id of GET /v1/models")->group("Server");
  app.add_option("--api-key", a.api_key, "sent as Authorization: Bearer KEY")->group("Server");
  app.add_option("--timeout", a.timeout_s, "longest wait for any one network step, s (default 600)")
      ->check(cli::integer_in(1))
      ->group("Server");

  app.add_option("--dataset-name", a.dataset_name, "random (default), shared-prefix, multi-turn, sharegpt")
      ->check(CLI::IsMember({"random", "shared-prefix", "multi-turn", "sharegpt"}))
      ->group("Workload");
  app.add_option("--num-prompts", a.num_prompts, "requests (conversations for multi-turn), default 1000")
      ->check(cli::integer_in(1))
      ->group("Workload");
  app.add_option("--tokenizer", a.tokenizer,
                 "exact prompt lengths with this tokenizer (a GGUF, an HF model directory or a tokenizer.json);\n"
                 "without it prompts are common words "
                 "counted one token each (approximate)")
      ->group("Workload");
  app.add_option("--random-input-len", raw.input_len, "default 1024 (multi-turn: each user turn, default 128)")
      ->check(cli::integer_in(1))
      ->group("Workload");
  app.add_option("--random-output-len", raw.output_len, "default 128 (multi-turn: each answer, default 64)")
      ->check(cli::integer_in(1))
      ->group("Workload");
  app.add_option("--random-range-ratio", a.random.range_ratio, "lengths uniform in [len*(1-R), len*(1+R)], default 0")
      ->group("Workload");
  app.add_option("--random-prefix-len", a.random.prefix_len, "a random prefix shared by every prompt, default 0")
      ->check(cli::integer_in(0))
      ->group("Workload");
  app.add_option("--num-groups", a.shared_prefix.num_groups, "shared-prefix: G system prompts (default 4)")
      ->check(cli::integer_in(1))
      ->group("Workload");
  app.add_option("--prefix-len", a.shared_prefix.prefix_len, "shared-prefix: P tokens each (default 512)")
      ->check(cli::integer_in(1))
      ->group("Workload");
  app.add_option("--suffix-len", a.shared_prefix.suffix_len, "shared-prefix: S more tokens per prompt (default 64)")
      ->check(cli::integer_in(1))
      ->group("Workload");
  app.add_option("--output-len", a.shared_prefix.output_len, "shared-prefix: O output tokens (default 64)")
      ->check(cli::integer_in(1))
      ->group("Workload");
  app.add_option("--num-turns", a.multi_turn.num_turns, "multi-turn: turns per conversation, default 4")
      ->check(cli::integer_in(1))
      ->group("Workload");
  app.add_option("--dataset-path", a.dataset_path, "sharegpt: a ShareGPT JSON file")->group("Workload");
  app.add_option("--class", raw.classes,
                 "a request class NAME:SHARE:INPUT:OUTPUT:PRIORITY:TTFT_MS:TPOT_MS (repeat for a mixed load;\n"
                 "'-' for no target): prompts drawn per class by share, sent with priority and slo;\n"
                 "the report adds TTFT/TPOT/ITL, SLO attainment and goodput per class")
      ->group("Workload");
  app.add_flag("--no-class-fields", raw.no_class_fields,
               "send no priority/slo fields (for a server that has none); the classes are still reported")
      ->group("Workload");
  app.add_flag("--no-ignore-eos", raw.no_ignore_eos, "do not send ignore_eos: true (answers may end early)")
      ->group("Workload");

  app.add_option("--request-rate", raw.request_rate, "requests/s, or inf (default: all at once)")->group("Load");
  app.add_option("--burstiness", a.burstiness, "gamma shape of the gaps (1 = Poisson, default)")->group("Load");
  app.add_option("--max-concurrency", a.max_concurrency, "most requests in flight (default: no limit)")
      ->check(cli::integer_in(1))
      ->group("Load");
  app.add_option("--num-warmups", a.num_warmups, "requests sent first and not measured (default 0)")->group("Load");
  app.add_option("--seed", a.seed, "default 0")->group("Load");

  app.add_option("--goodput", raw.goodput, "SLOs for goodput, NAME:MS ...: ttft, tpot, e2el (milliseconds)")
      ->group("Output");
  app.add_option("--json", a.json_path, "summary and every request's record as JSON")->group("Output");
  app.add_flag("--progress,!--no-progress", a.progress,
               "progress bar on stderr (default: only on a terminal)")
      ->group("Output");
}

}  // namespace

ServeArgs parse_serve_args(const std::vector<std::string>& args) {
  ServeArgs a;
  Raw raw;
  CLI::App app{kDescription, "loom-bench serve"};
  add_options(app, a, raw);
  if (cli::parse_or_throw(app, args)) {
    a.help = true;
    return a;
  }
  if (app.count("--random-input-len") > 0) a.random.input_len = a.multi_turn.input_len = raw.input_len;
  if (app.count("--random-output-len") > 0) a.random.output_len = a.multi_turn.output_len = raw.output_len;
  a.ignore_eos = !raw.no_ignore_eos;
  // --no-progress forces the bar off even on a terminal; --progress on even off one.
  if (app.count("--no-progress") > 0 && !a.progress) a.quiet = true;
  if (!raw.request_rate.empty()) {
    a.request_rate = raw.request_rate == "inf" ? 0.0 : to_double("--request-rate", raw.request_rate);
    if (a.request_rate < 0) throw Error("--request-rate must be > 0 or inf, got '" + raw.request_rate + "'");
  }
  for (const std::string& item : raw.goodput) read_slo(item, a.goodput);
  for (const std::string& spec : raw.classes) a.classes.push_back(parse_request_class(spec));
  a.class_fields = !raw.no_class_fields;
  if (!a.classes.empty() && app.count("--dataset-name") > 0 && a.dataset_name != "random") {
    throw Error("--class builds its own prompts; it cannot be combined with --dataset-name " + a.dataset_name);
  }
  return a;
}

std::string serve_usage() {
  ServeArgs a;
  Raw raw;
  CLI::App app{kDescription, "loom-bench serve"};
  add_options(app, a, raw);
  return app.help();
}

}  // namespace loom::bench
