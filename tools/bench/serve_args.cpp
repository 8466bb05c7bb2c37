#include "tools/bench/serve_args.hpp"

#include <cmath>
#include <functional>
#include <map>

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

int64_t to_int(const std::string& option, const std::string& value, int64_t min) {
  try {
    size_t used = 0;
    const long long v = std::stoll(value, &used);
    if (used == value.size() && v >= min) return v;
  } catch (const std::exception&) {
  }
  throw Error(option + ": expected an integer >= " + std::to_string(min) + ", got '" + value + "'");
}

// "ttft:500" -> the SLO field; several may be given after one --goodput.
bool read_slo(const std::string& item, GoodputSlo& slo) {
  const size_t colon = item.find(':');
  if (colon == std::string::npos) return false;
  const std::string name = item.substr(0, colon);
  const double ms = to_double("--goodput " + name, item.substr(colon + 1));
  if (!(ms > 0)) throw Error("--goodput " + item + ": the limit must be > 0 ms");
  if (name == "ttft") slo.ttft_ms = ms;
  else if (name == "tpot") slo.tpot_ms = ms;
  else if (name == "e2el") slo.e2el_ms = ms;
  else throw Error("--goodput: unknown metric '" + name + "' (ttft, tpot or e2el)");
  return true;
}

}  // namespace

ServeArgs parse_serve_args(const std::vector<std::string>& args) {
  ServeArgs a;
  using Setter = std::function<void(const std::string&)>;
  const std::map<std::string, Setter> valued = {
      {"--base-url", [&](const std::string& v) { a.base_url = v; }},
      {"--host", [&](const std::string& v) { a.host = v; }},
      {"--port", [&](const std::string& v) { a.port = static_cast<int>(to_int("--port", v, 1)); }},
      {"--endpoint", [&](const std::string& v) { a.endpoint = v; }},
      {"--model", [&](const std::string& v) { a.model = v; }},
      {"--api-key", [&](const std::string& v) { a.api_key = v; }},
      {"--timeout", [&](const std::string& v) { a.timeout_s = static_cast<int>(to_int("--timeout", v, 1)); }},
      {"--dataset-name", [&](const std::string& v) { a.dataset_name = v; }},
      {"--dataset-path", [&](const std::string& v) { a.dataset_path = v; }},
      {"--tokenizer", [&](const std::string& v) { a.tokenizer = v; }},
      {"--num-prompts", [&](const std::string& v) { a.num_prompts = to_int("--num-prompts", v, 1); }},
      {"--random-input-len", [&](const std::string& v) { a.random.input_len = a.multi_turn.input_len = to_int("--random-input-len", v, 1); }},
      {"--random-output-len", [&](const std::string& v) { a.random.output_len = a.multi_turn.output_len = to_int("--random-output-len", v, 1); }},
      {"--random-range-ratio", [&](const std::string& v) { a.random.range_ratio = to_double("--random-range-ratio", v); }},
      {"--random-prefix-len", [&](const std::string& v) { a.random.prefix_len = to_int("--random-prefix-len", v, 0); }},
      {"--num-groups", [&](const std::string& v) { a.shared_prefix.num_groups = to_int("--num-groups", v, 1); }},
      {"--prefix-len", [&](const std::string& v) { a.shared_prefix.prefix_len = to_int("--prefix-len", v, 1); }},
      {"--suffix-len", [&](const std::string& v) { a.shared_prefix.suffix_len = to_int("--suffix-len", v, 1); }},
      {"--output-len", [&](const std::string& v) { a.shared_prefix.output_len = to_int("--output-len", v, 1); }},
      {"--num-turns", [&](const std::string& v) { a.multi_turn.num_turns = to_int("--num-turns", v, 1); }},
      {"--request-rate", [&](const std::string& v) {
         a.request_rate = v == "inf" ? 0.0 : to_double("--request-rate", v);
         if (a.request_rate < 0) throw Error("--request-rate must be > 0 or inf, got '" + v + "'");
       }},
      {"--burstiness", [&](const std::string& v) { a.burstiness = to_double("--burstiness", v); }},
      {"--max-concurrency", [&](const std::string& v) { a.max_concurrency = to_int("--max-concurrency", v, 1); }},
      {"--seed", [&](const std::string& v) { a.seed = static_cast<uint64_t>(to_int("--seed", v, 0)); }},
      {"--num-warmups", [&](const std::string& v) { a.num_warmups = to_int("--num-warmups", v, 0); }},
      {"--json", [&](const std::string& v) { a.json_path = v; }},
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      a.help = true;
    } else if (arg == "--no-ignore-eos") {
      a.ignore_eos = false;
    } else if (arg == "--progress") {
      a.progress = true;
    } else if (arg == "--no-progress") {
      a.quiet = true;
    } else if (arg == "--goodput") {
      size_t taken = 0;
      while (i + 1 < args.size() && read_slo(args[i + 1], a.goodput)) ++i, ++taken;
      if (taken == 0) throw Error("--goodput needs at least one NAME:MS (ttft, tpot, e2el)");
    } else if (const auto it = valued.find(arg); it != valued.end()) {
      if (i + 1 >= args.size()) throw Error(arg + " needs a value");
      it->second(args[++i]);
    } else {
      throw Error("unknown option '" + arg + "' (see loom-bench serve --help)");
    }
  }
  if (a.endpoint != "/v1/completions" && a.endpoint != "/v1/chat/completions") {
    throw Error("--endpoint must be /v1/completions or /v1/chat/completions, got '" + a.endpoint + "'");
  }
  if (a.dataset_name != "random" && a.dataset_name != "shared-prefix" &&
      a.dataset_name != "multi-turn" && a.dataset_name != "sharegpt") {
    throw Error("--dataset-name must be random, shared-prefix, multi-turn or sharegpt, got '" +
                a.dataset_name + "'");
  }
  return a;
}

const char* serve_usage() {
  return R"(loom-bench serve: load an OpenAI-compatible server with streaming requests and report
TTFT, TPOT, ITL, E2E latency, throughput and goodput as measured at the client.

Server:
  --base-url URL            http://host:port[/prefix] (default: from --host and --port)
  --host HOST --port PORT   default 127.0.0.1 8080
  --endpoint PATH           /v1/completions (default) or /v1/chat/completions
  --model NAME              default: the first id of GET /v1/models
  --api-key KEY             sent as Authorization: Bearer KEY
  --timeout S               longest wait for any one network step (default 600)
Workload:
  --dataset-name NAME       random (default), shared-prefix, multi-turn, sharegpt
  --num-prompts N           requests (conversations for multi-turn), default 1000
  --tokenizer FILE.gguf     exact prompt lengths with that GGUF's tokenizer; without it prompts
                            are common words counted one token each (approximate)
  --random-input-len N      default 1024 (multi-turn: each user turn, default 128)
  --random-output-len N     default 128 (multi-turn: each answer, default 64)
  --random-range-ratio R    lengths uniform in [len*(1-R), len*(1+R)], default 0
  --random-prefix-len N     a random prefix shared by every prompt, default 0
  --num-groups G --prefix-len P --suffix-len S --output-len O
                            shared-prefix: G system prompts of P tokens, each prompt S more
                            tokens and O output tokens (defaults 4, 512, 64, 64)
  --num-turns T             multi-turn: turns per conversation, default 4
  --dataset-path FILE       sharegpt: a ShareGPT JSON file
  --no-ignore-eos           do not send ignore_eos: true (answers may end early)
Load:
  --request-rate R          requests/s, or inf (default: all at once)
  --burstiness B            gamma shape of the gaps (1 = Poisson, default)
  --max-concurrency C       most requests in flight (default: no limit)
  --num-warmups W           requests sent first and not measured (default 0)
  --seed S                  default 0
Output:
  --goodput NAME:MS ...     SLOs for goodput: ttft, tpot, e2el (milliseconds)
  --json FILE               summary and every request's record as JSON
  --progress / --no-progress  progress bar on stderr (default: only on a terminal)
)";
}

}  // namespace loom::bench
