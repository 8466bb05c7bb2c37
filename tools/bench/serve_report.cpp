#include "tools/bench/serve_report.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>

namespace loom::bench {
namespace {

using Json = nlohmann::json;

std::string line(const char* label, const std::string& value) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%-40s %14s\n", label, value.c_str());
  return buf;
}

std::string fixed(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string heading(const char* title) {
  std::string t = " " + std::string(title) + " ";
  const size_t pad = t.size() < 55 ? 55 - t.size() : 0;
  return std::string(pad / 2, '-') + t + std::string(pad - pad / 2, '-') + "\n";
}

void print_distribution(std::ostream& out, const char* title, const char* key,
                        const Distribution& d) {
  out << heading(title);
  const std::string k(key);
  out << line(("Mean " + k + " (ms):").c_str(), fixed(d.mean))
      << line(("Median " + k + " (ms):").c_str(), fixed(d.median))
      << line(("Std " + k + " (ms):").c_str(), fixed(d.std))
      << line(("P90 " + k + " (ms):").c_str(), fixed(d.p90))
      << line(("P99 " + k + " (ms):").c_str(), fixed(d.p99));
}

Json distribution_json(const Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean},  {"median", d.median}, {"std", d.std},
          {"p90", d.p90},     {"p99", d.p99},    {"min", d.min},       {"max", d.max}};
}

Json optional_json(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

}  // namespace

void print_report(std::ostream& out, const RunInfo& info, const ServeSummary& s,
                  std::span<const RequestRecord> records) {
  size_t shown = 0;
  for (const RequestRecord& r : records) {
    if (r.success || shown == 5) continue;
    if (shown++ == 0) out << "First errors:\n";
    out << "  request " << r.conversation << "." << r.turn << ": " << r.error << "\n";
  }
  out << "============ Serving Benchmark Result ============\n";
  out << line("Endpoint:", info.endpoint) << line("Model:", info.model)
      << line("Dataset:", info.dataset) << line("Request rate (req/s):", info.request_rate)
      << line("Burstiness:", fixed(info.burstiness))
      << line("Max concurrency (limit):",
              info.max_concurrency == 0 ? "none" : std::to_string(info.max_concurrency))
      << line("Max concurrency (observed):", std::to_string(s.max_concurrency))
      << line("Successful requests:", std::to_string(s.completed))
      << line("Failed requests:", std::to_string(s.failed))
      << line("Benchmark duration (s):", fixed(s.duration_s))
      << line("Total input tokens:", std::to_string(s.total_input_tokens))
      << line("Total generated tokens:", std::to_string(s.total_output_tokens))
      << line("Request throughput (req/s):", fixed(s.request_throughput));
  if (s.request_goodput) out << line("Request goodput (req/s):", fixed(*s.request_goodput));
  out << line("Output token throughput (tok/s):", fixed(s.output_throughput))
      << line("Total token throughput (tok/s):", fixed(s.total_token_throughput));
  print_distribution(out, "Time to First Token", "TTFT", s.ttft_ms);
  print_distribution(out, "Time per Output Token (excl. 1st token)", "TPOT", s.tpot_ms);
  print_distribution(out, "Inter-token Latency", "ITL", s.itl_ms);
  print_distribution(out, "End-to-end Latency", "E2EL", s.e2e_ms);
  out << "==================================================\n";
  if (!info.exact_prompt_lengths) {
    out << "Note: no --tokenizer; prompt lengths are approximate (one token per word).\n";
  }
  if (s.usage_missing > 0) {
    out << "Note: " << s.usage_missing << " responses had no usage chunk; their output tokens "
        << "were counted as token-bearing chunks.\n";
  }
}

void print_class_report(std::ostream& out, std::span<const ClassSummary> classes) {
  for (const ClassSummary& c : classes) {
    const RequestClass& k = *c.request_class;
    const auto target = [](const std::optional<double>& ms) { return ms ? fixed(*ms) : std::string("none"); };
    out << heading(("Class " + k.name).c_str())
        << line("Priority, TTFT/TPOT targets (ms):",
                std::to_string(k.priority) + " / " + target(k.ttft_ms) + " / " + target(k.tpot_ms))
        << line("Requests sent / successful:", std::to_string(c.sent) + " / " + std::to_string(c.summary.completed))
        << line("Output token throughput (tok/s):", fixed(c.summary.output_throughput))
        << line("Median / P99 TTFT (ms):", fixed(c.summary.ttft_ms.median) + " / " + fixed(c.summary.ttft_ms.p99))
        << line("Median / P99 TPOT (ms):", fixed(c.summary.tpot_ms.median) + " / " + fixed(c.summary.tpot_ms.p99))
        << line("Median / P99 ITL (ms):", fixed(c.summary.itl_ms.median) + " / " + fixed(c.summary.itl_ms.p99))
        << line("SLO attainment (%):", fixed(100 * c.attainment))
        << line("Goodput (req/s):", fixed(c.summary.request_goodput.value_or(c.summary.request_throughput)));
  }
  if (!classes.empty()) out << "==================================================\n";
}

std::string report_json(const RunInfo& info, const ServeSummary& s,
                        std::span<const RequestRecord> records, const GoodputSlo& slo,
                        std::span<const ClassSummary> classes) {
  Json summary = {
      {"base_url", info.base_url},
      {"endpoint", info.endpoint},
      {"model", info.model},
      {"dataset", info.dataset},
      {"request_rate", info.request_rate},
      {"burstiness", info.burstiness},
      {"max_concurrency_limit", info.max_concurrency},
      {"max_concurrency_observed", s.max_concurrency},
      {"exact_prompt_lengths", info.exact_prompt_lengths},
      {"completed", s.completed},
      {"failed", s.failed},
      {"duration_s", s.duration_s},
      {"total_input_tokens", s.total_input_tokens},
      {"total_output_tokens", s.total_output_tokens},
      {"request_throughput", s.request_throughput},
      {"output_throughput", s.output_throughput},
      {"total_token_throughput", s.total_token_throughput},
      {"request_goodput", optional_json(s.request_goodput)},
      {"good_requests", s.good_requests},
      {"goodput_slo_ms",
       {{"ttft", optional_json(slo.ttft_ms)}, {"tpot", optional_json(slo.tpot_ms)},
        {"e2el", optional_json(slo.e2el_ms)}}},
      {"responses_without_usage", s.usage_missing},
      {"ttft_ms", distribution_json(s.ttft_ms)},
      {"tpot_ms", distribution_json(s.tpot_ms)},
      {"itl_ms", distribution_json(s.itl_ms)},
      {"e2el_ms", distribution_json(s.e2e_ms)},
  };
  Json requests = Json::array();
  for (const RequestRecord& r : records) {
    Json item = {{"conversation", r.conversation}, {"turn", r.turn},  {"start_s", r.start},
                 {"success", r.success},           {"error", r.error}, {"client_prompt_tokens", r.client_prompt_tokens}};
    if (r.request_class >= 0 && static_cast<size_t>(r.request_class) < classes.size()) {
      item["class"] = classes[static_cast<size_t>(r.request_class)].request_class->name;
    }
    if (r.success) {
      const RequestMetrics m = request_metrics(r);
      item["ttft_ms"] = m.ttft_ms;
      item["e2el_ms"] = m.e2e_ms;
      item["tpot_ms"] = optional_json(m.tpot_ms);
      item["itl_ms"] = m.itl_ms;
      item["prompt_tokens"] = m.prompt_tokens;
      item["output_tokens"] = m.output_tokens;
      item["usage_from_server"] = m.usage_from_server;
    } else {
      item["e2el_ms"] = (r.end - r.start) * 1e3;
    }
    requests.push_back(std::move(item));
  }
  Json per_class = Json::array();
  for (const ClassSummary& c : classes) {
    const RequestClass& k = *c.request_class;
    per_class.push_back({{"name", k.name},
                         {"share", k.share},
                         {"input_len", k.input_len},
                         {"output_len", k.output_len},
                         {"priority", k.priority},
                         {"ttft_target_ms", optional_json(k.ttft_ms)},
                         {"tpot_target_ms", optional_json(k.tpot_ms)},
                         {"sent", c.sent},
                         {"completed", c.summary.completed},
                         {"output_throughput", c.summary.output_throughput},
                         {"slo_attainment", c.attainment},
                         {"request_goodput", c.summary.request_goodput.value_or(c.summary.request_throughput)},
                         {"ttft_ms", distribution_json(c.summary.ttft_ms)},
                         {"tpot_ms", distribution_json(c.summary.tpot_ms)},
                         {"itl_ms", distribution_json(c.summary.itl_ms)}});
  }
  if (!classes.empty()) summary["classes"] = per_class;
  const Json doc = {{"summary", summary}, {"requests", requests}};
  return doc.dump(2, ' ', false, Json::error_handler_t::replace);
}

}  // namespace loom::bench
