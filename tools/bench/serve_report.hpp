// The results of a run: a readable table (laid out like vLLM's "Serving Benchmark Result") and
// a JSON document with the summary and every request's record.
#pragma once

#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "tools/bench/request_class.hpp"
#include "tools/bench/request_record.hpp"
#include "tools/bench/serve_metrics.hpp"

namespace loom::bench {

struct RunInfo {
  std::string base_url, endpoint, model, dataset;
  std::string request_rate = "inf";
  double burstiness = 1.0;
  size_t max_concurrency = 0;  // 0: no limit
  bool exact_prompt_lengths = false;
};

void print_report(std::ostream& out, const RunInfo& info, const ServeSummary& summary,
                  std::span<const RequestRecord> records);

// One block per request class: requests, throughput, TTFT/TPOT/ITL, SLO attainment, goodput.
void print_class_report(std::ostream& out, std::span<const ClassSummary> classes);

// `classes` adds "classes" to the summary and "class" to each request.
std::string report_json(const RunInfo& info, const ServeSummary& summary,
                        std::span<const RequestRecord> records, const GoodputSlo& slo,
                        std::span<const ClassSummary> classes = {});

}  // namespace loom::bench
