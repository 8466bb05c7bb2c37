#include "tools/bench/serve_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace loom::bench {

RequestMetrics request_metrics(const RequestRecord& record) {
  RequestMetrics m;
  const std::vector<double>& t = record.token_times;  // [n_token_chunks], seconds
  m.ttft_ms = t.empty() ? 0.0 : (t.front() - record.start) * 1e3;
  m.e2e_ms = (record.end - record.start) * 1e3;
  for (size_t i = 1; i < t.size(); ++i) m.itl_ms.push_back((t[i] - t[i - 1]) * 1e3);
  m.usage_from_server = record.usage_completion_tokens.has_value();
  m.output_tokens = record.usage_completion_tokens.value_or(static_cast<int64_t>(t.size()));
  m.prompt_tokens = record.usage_prompt_tokens.value_or(record.client_prompt_tokens);
  if (m.output_tokens > 1) {
    m.tpot_ms = (m.e2e_ms - m.ttft_ms) / static_cast<double>(m.output_tokens - 1);
  }
  return m;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double rank = p / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - static_cast<double>(lo));
}

Distribution distribution(std::span<const double> values) {
  Distribution d;
  d.count = values.size();
  if (values.empty()) return d;
  double sum = 0;
  for (const double v : values) sum += v;
  d.mean = sum / static_cast<double>(values.size());
  double squares = 0;
  for (const double v : values) squares += (v - d.mean) * (v - d.mean);
  d.std = std::sqrt(squares / static_cast<double>(values.size()));
  const std::vector<double> copy(values.begin(), values.end());
  d.median = percentile(copy, 50);
  d.p90 = percentile(copy, 90);
  d.p99 = percentile(copy, 99);
  d.min = *std::min_element(values.begin(), values.end());
  d.max = *std::max_element(values.begin(), values.end());
  return d;
}

size_t max_overlap(std::span<const RequestRecord> records) {
  std::vector<std::pair<double, int>> edges;  // (time, +1 start / -1 end); ends sort first
  edges.reserve(records.size() * 2);
  for (const RequestRecord& r : records) {
    if (!(r.end > r.start)) continue;  // never in flight (a turn not sent)
    edges.emplace_back(r.start, +1);
    edges.emplace_back(r.end, -1);
  }
  std::sort(edges.begin(), edges.end());
  size_t open = 0, most = 0;
  for (const auto& [time, delta] : edges) {
    open = delta > 0 ? open + 1 : open - 1;
    most = std::max(most, open);
  }
  return most;
}

ServeSummary summarize(std::span<const RequestRecord> records, double duration_s,
                       const GoodputSlo& slo) {
  ServeSummary s;
  s.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl, e2e;
  for (const RequestRecord& r : records) {
    if (!r.success) {
      ++s.failed;
      continue;
    }
    const RequestMetrics m = request_metrics(r);
    ++s.completed;
    s.total_input_tokens += m.prompt_tokens;
    s.total_output_tokens += m.output_tokens;
    if (!m.usage_from_server) ++s.usage_missing;
    ttft.push_back(m.ttft_ms);
    e2e.push_back(m.e2e_ms);
    if (m.tpot_ms) tpot.push_back(*m.tpot_ms);
    itl.insert(itl.end(), m.itl_ms.begin(), m.itl_ms.end());
    // A request without a TPOT (one output token) has nothing to miss on that SLO.
    const bool good = (!slo.ttft_ms || m.ttft_ms <= *slo.ttft_ms) &&
                      (!slo.tpot_ms || m.tpot_ms.value_or(0.0) <= *slo.tpot_ms) &&
                      (!slo.e2el_ms || m.e2e_ms <= *slo.e2el_ms);
    if (good) ++s.good_requests;
  }
  if (duration_s > 0) {
    s.request_throughput = static_cast<double>(s.completed) / duration_s;
    s.output_throughput = static_cast<double>(s.total_output_tokens) / duration_s;
    s.total_token_throughput =
        static_cast<double>(s.total_input_tokens + s.total_output_tokens) / duration_s;
    if (slo.any()) s.request_goodput = static_cast<double>(s.good_requests) / duration_s;
  }
  s.max_concurrency = max_overlap(records);
  s.ttft_ms = distribution(ttft);
  s.tpot_ms = distribution(tpot);
  s.itl_ms = distribution(itl);
  s.e2e_ms = distribution(e2e);
  return s;
}

}  // namespace loom::bench
