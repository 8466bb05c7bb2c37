// Request classes of a mixed load (`--class`): each class has its share of the requests, its
// prompt and answer lengths, the priority it is sent with and its SLO targets (sent as the
// request's `slo` field and used for the class's attainment and goodput). An interactive class
// (short prompts, tight TPOT) beside a batch class (long prompts, loose SLO) is the load an
// SLO-aware scheduler is judged on.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tools/bench/prompt_text.hpp"
#include "tools/bench/request_record.hpp"
#include "tools/bench/serve_metrics.hpp"
#include "tools/bench/workload.hpp"

namespace loom::bench {

struct RequestClass {
  std::string name;
  double share = 1;  // relative weight among the classes (> 0)
  int64_t input_len = 0, output_len = 0;
  int64_t priority = 0;  // sent as `priority` (lower runs first, as vLLM)
  std::optional<double> ttft_ms, tpot_ms;  // sent as `slo`; "-" in the spec: none
};

// "name:share:input:output:priority:ttft_ms:tpot_ms". Throws loom::Error naming the part at fault.
RequestClass parse_request_class(const std::string& spec);

// n single-turn conversations; conversation i's class is drawn by share (seeded), its lengths
// from the class's as random_workload draws them (range_ratio).
std::vector<Conversation> class_workload(size_t n, std::span<const RequestClass> classes, double range_ratio,
                                         const PromptText& text, uint64_t seed);

struct ClassSummary {
  const RequestClass* request_class = nullptr;
  size_t sent = 0;
  ServeSummary summary;     // over this class's records, goodput against its own SLO
  double attainment = 0;    // requests meeting the class's SLO / requests sent (failures miss)
};

std::vector<ClassSummary> summarize_classes(std::span<const RequestRecord> records, double duration_s,
                                            std::span<const RequestClass> classes);

}  // namespace loom::bench
