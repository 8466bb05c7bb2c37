#include "tools/bench/request_class.hpp"

#include <cmath>
#include <random>

#include "core/common/error.hpp"

namespace loom::bench {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (const char c : s) {
    if (c == sep) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

double number(const std::string& spec, const char* part, const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw Error("--class " + spec + ": " + part + " must be a number, got '" + text + "'");
}

int64_t count(const std::string& spec, const char* part, const std::string& text, int64_t min) {
  const double v = number(spec, part, text);
  if (v != std::floor(v) || v < static_cast<double>(min) || v > 1e9) {
    throw Error("--class " + spec + ": " + part + " must be an integer >= " + std::to_string(min) + ", got '" + text + "'");
  }
  return static_cast<int64_t>(v);
}

std::optional<double> target(const std::string& spec, const char* part, const std::string& text) {
  if (text == "-") return std::nullopt;
  const double v = number(spec, part, text);
  if (!(v > 0)) throw Error("--class " + spec + ": " + part + " must be > 0 ms or '-', got '" + text + "'");
  return v;
}

}  // namespace

RequestClass parse_request_class(const std::string& spec) {
  const std::vector<std::string> parts = split(spec, ':');
  if (parts.size() != 7) {
    throw Error("--class " + spec + ": expected name:share:input:output:priority:ttft_ms:tpot_ms (7 parts), got " +
                std::to_string(parts.size()));
  }
  RequestClass c;
  c.name = parts[0];
  if (c.name.empty()) throw Error("--class " + spec + ": the name is empty");
  c.share = number(spec, "share", parts[1]);
  if (!(c.share > 0)) throw Error("--class " + spec + ": share must be > 0, got '" + parts[1] + "'");
  c.input_len = count(spec, "input", parts[2], 1);
  c.output_len = count(spec, "output", parts[3], 1);
  const double priority = number(spec, "priority", parts[4]);
  if (priority != std::floor(priority) || std::fabs(priority) > 1e9) {
    throw Error("--class " + spec + ": priority must be an integer, got '" + parts[4] + "'");
  }
  c.priority = static_cast<int64_t>(priority);
  c.ttft_ms = target(spec, "ttft_ms", parts[5]);
  c.tpot_ms = target(spec, "tpot_ms", parts[6]);
  return c;
}

std::vector<Conversation> class_workload(size_t n, std::span<const RequestClass> classes, double range_ratio,
                                         const PromptText& text, uint64_t seed) {
  if (classes.empty()) throw Error("class_workload: no classes");
  std::vector<double> weights;
  for (const RequestClass& c : classes) weights.push_back(c.share);
  std::mt19937_64 rng(seed);
  std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
  std::vector<Conversation> out(n);
  for (Conversation& conversation : out) {
    const size_t k = pick(rng);
    const RequestClass& c = classes[k];
    const int64_t input_len = draw_length(c.input_len, range_ratio, rng, "--class input");
    const int64_t output_len = draw_length(c.output_len, range_ratio, rng, "--class output");
    conversation.request_class = static_cast<int32_t>(k);
    conversation.priority = c.priority;
    conversation.slo_ttft_ms = c.ttft_ms;
    conversation.slo_tpot_ms = c.tpot_ms;
    conversation.turns.push_back(PromptTurn{text.random_text(input_len, rng), output_len});
  }
  return out;
}

std::vector<ClassSummary> summarize_classes(std::span<const RequestRecord> records, double duration_s,
                                            std::span<const RequestClass> classes) {
  std::vector<ClassSummary> out;
  for (size_t k = 0; k < classes.size(); ++k) {
    std::vector<RequestRecord> mine;
    for (const RequestRecord& r : records) {
      if (r.request_class == static_cast<int32_t>(k)) mine.push_back(r);
    }
    ClassSummary s;
    s.request_class = &classes[k];
    s.sent = mine.size();
    GoodputSlo slo;
    slo.ttft_ms = classes[k].ttft_ms;
    slo.tpot_ms = classes[k].tpot_ms;
    s.summary = summarize(mine, duration_s, slo);
    // With no target every completed request meets it.
    const size_t good = slo.any() ? s.summary.good_requests : s.summary.completed;
    s.attainment = s.sent == 0 ? 0 : static_cast<double>(good) / static_cast<double>(s.sent);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace loom::bench
