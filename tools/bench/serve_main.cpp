#include "tools/bench/serve_main.hpp"

#include <unistd.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/common/command_line.hpp"
#include "core/common/error.hpp"
#include "tools/bench/arrival_process.hpp"
#include "tools/bench/serve_args.hpp"
#include "tools/bench/serve_report.hpp"
#include "tools/bench/serve_runner.hpp"

namespace loom::bench {
namespace {

std::string first_model_id(const ServerTarget& target) {
  const auto body = nlohmann::json::parse(http_get(target, "/v1/models"), nullptr, false);
  if (body.is_object() && body.contains("data") && body["data"].is_array() &&
      !body["data"].empty() && body["data"][0].contains("id") && body["data"][0]["id"].is_string()) {
    return body["data"][0]["id"].get<std::string>();
  }
  throw Error("GET /v1/models lists no model id; give --model NAME");
}

std::vector<Conversation> build_workload(const ServeArgs& a, const PromptText& text) {
  if (!a.classes.empty()) return class_workload(a.num_prompts, a.classes, a.random.range_ratio, text, a.seed);
  if (a.dataset_name == "random") return random_workload(a.num_prompts, a.random, text, a.seed);
  if (a.dataset_name == "shared-prefix") {
    return shared_prefix_workload(a.num_prompts, a.shared_prefix, text, a.seed);
  }
  if (a.dataset_name == "multi-turn") {
    return multi_turn_workload(a.num_prompts, a.multi_turn, text, a.seed);
  }
  return sharegpt_workload(a.num_prompts, ShareGptOptions{a.dataset_path}, text, a.seed);
}

// Requests sent before the measured run (first turns of the first prompts), not recorded.
void warm_up(const RunPlan& plan, size_t count, const PromptText& text) {
  RunPlan warm = plan;
  warm.progress = false;
  warm.conversations.clear();
  for (size_t i = 0; i < count; ++i) {
    Conversation c = plan.conversations[i % plan.conversations.size()];
    c.turns.resize(1);
    warm.conversations.push_back(std::move(c));
  }
  warm.arrivals.assign(count, 0.0);
  const RunResult result = run_benchmark(warm, text);
  size_t failed = 0;
  for (const RequestRecord& r : result.records) {
    if (r.success) continue;
    if (failed++ == 0) std::cerr << "warm-up request failed: " << r.error << "\n";
  }
  std::cerr << "warm-up: " << count - failed << "/" << count << " requests succeeded\n";
}

int run(const ServeArgs& a) {
  ServerTarget target = parse_base_url(
      a.base_url.empty() ? "http://" + a.host + ":" + std::to_string(a.port) : a.base_url);
  target.api_key = a.api_key;
  target.timeout = std::chrono::seconds(a.timeout_s);
  const std::unique_ptr<PromptText> text =
      a.tokenizer.empty() ? word_prompt_text() : tokenizer_prompt_text(a.tokenizer);

  RunPlan plan;
  plan.target = target;
  plan.path = a.endpoint;
  plan.body.model = a.model.empty() ? first_model_id(target) : a.model;
  plan.body.chat = a.endpoint == "/v1/chat/completions";
  plan.body.ignore_eos = a.ignore_eos;
  plan.body.class_fields = a.class_fields;
  plan.conversations = build_workload(a, *text);
  plan.arrivals = arrival_offsets(plan.conversations.size(),
                                  ArrivalOptions{a.request_rate, a.burstiness, a.seed});
  plan.max_concurrency = a.max_concurrency;
  plan.progress = !a.quiet && (a.progress || isatty(STDERR_FILENO) == 1);

  if (a.num_warmups > 0) warm_up(plan, a.num_warmups, *text);
  const RunResult result = run_benchmark(plan, *text);
  const ServeSummary summary = summarize(result.records, result.duration_s, a.goodput);

  RunInfo info;
  info.base_url = "http://" + target.host + ":" + target.port + target.base_path;
  info.endpoint = a.endpoint;
  info.model = plan.body.model;
  info.dataset = a.classes.empty() ? a.dataset_name : "classes";
  info.request_rate = a.request_rate > 0 ? std::to_string(a.request_rate) : "inf";
  info.burstiness = a.burstiness;
  info.max_concurrency = a.max_concurrency;
  info.exact_prompt_lengths = text->exact();
  const std::vector<ClassSummary> classes = summarize_classes(result.records, result.duration_s, a.classes);
  print_report(std::cout, info, summary, result.records);
  print_class_report(std::cout, classes);
  if (!a.json_path.empty()) {
    std::ofstream out(a.json_path);
    out << report_json(info, summary, result.records, a.goodput, classes) << "\n";
    if (!out) throw Error("--json: cannot write '" + a.json_path + "'");
  }
  return summary.completed > 0 ? 0 : 1;
}

}  // namespace

int serve_main(int argc, char** argv) {
  ServeArgs args;
  try {
    args = parse_serve_args(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const Error& e) {
    std::cerr << "loom-bench serve: " << e.what() << "\nRun with --help for more information.\n";
    return cli::kUsageExitStatus;
  }
  if (args.help) {
    std::cout << serve_usage();
    return 0;
  }
  try {
    return run(args);
  } catch (const std::exception& e) {
    std::cerr << "loom-bench serve: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace loom::bench
