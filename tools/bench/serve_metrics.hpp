// The serving metrics of `vllm bench serve`, computed from recorded request timelines. Pure:
// records and the run's duration in, every figure out.
//
// Per successful request: TTFT = first token chunk - start; ITL = gaps between consecutive
// token chunks; E2E = end - start; output tokens = usage.completion_tokens, or the number of
// token chunks when the server sent no usage; TPOT = (E2E - TTFT) / (output tokens - 1), only
// when output tokens > 1. ITLs are pooled over all requests. Percentiles interpolate linearly
// between closest ranks (numpy's default): rank = p/100 * (n - 1) over the sorted values.
// Std is the population standard deviation. Times in the summary are milliseconds.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tools/bench/request_record.hpp"

namespace loom::bench {

struct RequestMetrics {
  double ttft_ms = 0;
  double e2e_ms = 0;
  std::optional<double> tpot_ms;  // only when output_tokens > 1
  std::vector<double> itl_ms;
  int64_t prompt_tokens = 0;  // usage.prompt_tokens when sent, else the client's count
  int64_t output_tokens = 0;
  bool usage_from_server = false;
};

// Only for a successful record (at least one token chunk).
RequestMetrics request_metrics(const RequestRecord& record);

struct Distribution {
  size_t count = 0;
  double mean = 0, std = 0, median = 0, p90 = 0, p99 = 0, min = 0, max = 0;
};

// Linear interpolation between closest ranks; 0 for an empty set.
double percentile(std::vector<double> values, double p);
Distribution distribution(std::span<const double> values);

// Service-level objectives for goodput, each in milliseconds (absent: not checked).
struct GoodputSlo {
  std::optional<double> ttft_ms, tpot_ms, e2el_ms;
  bool any() const { return ttft_ms || tpot_ms || e2el_ms; }
};

struct ServeSummary {
  size_t completed = 0;
  size_t failed = 0;
  double duration_s = 0;
  int64_t total_input_tokens = 0;   // over completed requests
  int64_t total_output_tokens = 0;  // over completed requests
  double request_throughput = 0;    // completed / duration
  double output_throughput = 0;     // output tokens / duration
  double total_token_throughput = 0;  // (input + output tokens) / duration
  std::optional<double> request_goodput;  // requests meeting every SLO / duration
  size_t good_requests = 0;
  size_t max_concurrency = 0;  // most requests in flight at once, from the records
  size_t usage_missing = 0;    // completed requests whose output tokens were counted by chunks
  Distribution ttft_ms, tpot_ms, itl_ms, e2e_ms;
};

// duration_s: from the first request's start to the last one's end, as the runner measured it.
ServeSummary summarize(std::span<const RequestRecord> records, double duration_s,
                       const GoodputSlo& slo);

// Most intervals [start, end) open at once; an end at the same instant as a start comes first.
// Records with end <= start (turns never sent) are left out.
size_t max_overlap(std::span<const RequestRecord> records);

}  // namespace loom::bench
