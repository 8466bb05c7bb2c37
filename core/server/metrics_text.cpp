#include "core/server/metrics_text.hpp"

#include <charconv>
#include <cmath>
#include <algorithm>
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace loom {
namespace {

// Label values escape backslash, double quote and newline (exposition format rules).
std::string escape_label(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

// Shortest text that reads back as the same double: "0.001" rather than "0.00100000000000000002".
std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

class MetricsWriter {
 public:
  MetricsWriter(const std::string& model_name, const std::string& prefix)
      : model_label_("model_name=\"" + escape_label(model_name) + "\""), prefix_(prefix + ":") {}

  void add(const char* base_name, const char* type, const char* help, double value) {
    const std::string name = prefix_ + base_name;
    header(name, type, help);
    sample(name, "", value);
  }
  // One counter with a series per value of `label`.
  void add_labeled(const char* base_name, const char* type, const char* help, const char* label,
                   std::initializer_list<std::pair<const char*, double>> series) {
    const std::string name = prefix_ + base_name;
    header(name, type, help);
    for (const auto& [label_value, value] : series)
      sample(name, std::string(label) + "=\"" + escape_label(label_value) + "\"", value);
  }
  // One series per (label value, value), label values known only at run time.
  void add_series(const char* base_name, const char* type, const char* help, const char* label,
                  const std::vector<std::pair<std::string, double>>& series) {
    const std::string name = prefix_ + base_name;
    header(name, type, help);
    for (const auto& [label_value, value] : series)
      sample(name, std::string(label) + "=\"" + escape_label(label_value) + "\"", value);
  }
  // A summary without quantiles, one _sum and _count per label value.
  void add_summary(const char* base_name, const char* help, const char* label,
                   const std::vector<std::tuple<std::string, double, double>>& series) {
    const std::string name = prefix_ + base_name;
    header(name, "summary", help);
    for (const auto& [label_value, sum, count] : series) {
      const std::string l = std::string(label) + "=\"" + escape_label(label_value) + "\"";
      sample(name + "_sum", l, sum);
      sample(name + "_count", l, count);
    }
  }
  // _bucket series (cumulative, le inclusive, ending with +Inf), then _count and _sum.
  void add_histogram(const char* base_name, const char* help, const HistogramSnapshot& h) {
    const std::string name = prefix_ + base_name;
    header(name, "histogram", help);
    const std::string bucket = name + "_bucket";
    for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
      const uint64_t c = i < h.cumulative.size() ? h.cumulative[i] : 0;
      sample(bucket, "le=\"" + number(h.upper_bounds[i]) + "\"", static_cast<double>(c));
    }
    sample(bucket, "le=\"+Inf\"", static_cast<double>(h.count));
    sample(name + "_count", "", static_cast<double>(h.count));
    sample(name + "_sum", "", h.sum);
  }
  // One histogram with a series of buckets per label value.
  void add_histograms(const char* base_name, const char* help, const char* label,
                      const std::vector<std::pair<std::string, const HistogramSnapshot*>>& series) {
    const std::string name = prefix_ + base_name;
    header(name, "histogram", help);
    for (const auto& [label_value, h] : series) {
      const std::string l = std::string(label) + "=\"" + escape_label(label_value) + "\"";
      for (size_t i = 0; i < h->upper_bounds.size(); ++i) {
        const uint64_t c = i < h->cumulative.size() ? h->cumulative[i] : 0;
        sample(name + "_bucket", l + ",le=\"" + number(h->upper_bounds[i]) + "\"", static_cast<double>(c));
      }
      sample(name + "_bucket", l + ",le=\"+Inf\"", static_cast<double>(h->count));
      sample(name + "_count", l, static_cast<double>(h->count));
      sample(name + "_sum", l, h->sum);
    }
  }
  std::string take() { return std::move(out_); }

 private:
  void header(const std::string& name, const char* type, const char* help) {
    out_ += "# HELP " + name + " " + help + "\n";
    out_ += "# TYPE " + name + " " + type + "\n";
  }
  void sample(const std::string& name, const std::string& extra_label, double value) {
    out_ += name + "{" + model_label_;
    if (!extra_label.empty()) out_ += "," + extra_label;
    out_ += "} " + number(value) + "\n";
  }

  std::string model_label_;
  std::string prefix_;  // "loom:" or "vllm:"
  std::string out_;
};

double num(int64_t v) { return static_cast<double>(v); }

// Per priority class: SLO attainment and queue wait; refusals by reason; goodput; the step-time
// model. The three admission reasons are always listed, so a dashboard sees zeros, not gaps.
void add_slo_metrics(MetricsWriter& w, const SloSnapshot& slo) {
  using Series = std::vector<std::pair<std::string, double>>;
  auto per_class = [&](int64_t SloClassCounts::*field) {
    Series out;
    for (const SloClassCounts& c : slo.classes) out.emplace_back(std::to_string(c.priority), num(c.*field));
    return out;
  };
  w.add_series("request_slo_ttft_met_total", "counter", "Requests whose time to first token met their target, by priority.",
               "priority", per_class(&SloClassCounts::ttft_met));
  w.add_series("request_slo_ttft_missed_total", "counter", "Requests whose time to first token missed their target, by priority.",
               "priority", per_class(&SloClassCounts::ttft_missed));
  w.add_series("request_slo_tpot_met_total", "counter", "Requests whose time per output token met their target, by priority.",
               "priority", per_class(&SloClassCounts::tpot_met));
  w.add_series("request_slo_tpot_missed_total", "counter", "Requests whose time per output token missed their target, by priority.",
               "priority", per_class(&SloClassCounts::tpot_missed));
  std::vector<std::tuple<std::string, double, double>> waits;
  for (const SloClassCounts& c : slo.classes)
    waits.emplace_back(std::to_string(c.priority), c.queue_wait_seconds_sum, num(c.queue_wait_count));
  w.add_summary("request_queue_wait_seconds", "Time from arrival to first scheduled, by priority.", "priority", waits);
  Series rejected = {{"queue_full", 0}, {"queued_tokens_exceeded", 0}, {"ttft_unattainable", 0}};
  for (const auto& [reason, n] : slo.rejected) {
    auto it = std::find_if(rejected.begin(), rejected.end(), [&](const auto& r) { return r.first == reason; });
    if (it != rejected.end()) it->second = num(n); else rejected.emplace_back(reason, num(n));
  }
  w.add_series("num_requests_rejected_total", "counter", "Requests refused with 429 by admission control, by reason.",
               "reason", rejected);
  w.add("num_requests_aborted_total", "counter", "Requests cancelled before they finished.", num(slo.aborted));
  w.add("num_requests_failed_total", "counter",
        "Requests finished with an error (e.g. their deadline passed in the queue).", num(slo.failed));
  w.add("request_goodput", "gauge", "Requests per second that met every SLO target, over the goodput window.",
        slo.goodput);
  w.add("request_goodput_window_seconds", "gauge", "The sliding window of request_goodput.", slo.goodput_window_s);
  const StepCoefficients& m = slo.step_model;
  w.add_series("step_time_model_us", "gauge",
               "Step-time model: predicted step us = base + prefill_token*prefill + decode_token*decode + kv_token*kv.",
               "term",
               {{"base", m.base_us}, {"prefill_token", m.per_prefill_token_us}, {"decode_token", m.per_decode_token_us},
                {"kv_token", m.per_kv_token_us}});
  w.add("step_time_model_samples_total", "counter", "Steps the step-time model has been fitted on.", num(m.samples));
}

// Only when a [semantic_cache] plugin is loaded.
void add_semantic_cache_metrics(MetricsWriter& w, const SemanticCacheSnapshot& c) {
  if (!c.enabled) return;
  w.add("semantic_cache_hits_total", "counter", "Requests answered from the semantic cache.", num(c.hits));
  w.add("semantic_cache_misses_total", "counter", "Semantic cache lookups that found no answer.", num(c.misses));
  w.add("semantic_cache_stores_total", "counter", "Finished answers stored in the semantic cache.", num(c.stores));
  w.add("semantic_cache_errors_total", "counter", "Semantic cache plugin calls that failed (taken as misses).",
        num(c.errors));
  w.add("semantic_cache_entries", "gauge", "Answers held by the semantic cache.", num(c.entries));
  w.add("semantic_cache_evictions_total", "counter", "Answers evicted to stay within capacity.", num(c.evictions));
  w.add("semantic_cache_expirations_total", "counter", "Answers dropped because their TTL passed.",
        num(c.expirations));
  w.add_histogram("semantic_cache_hit_similarity", "Similarity of semantic cache hits (1 = exact).", c.similarity);
}

// Speculative decoding, under vLLM's spec_decode_* names; listed only with a [speculator].
void add_spec_decode_metrics(MetricsWriter& w, const SpecDecodeStats& s) {
  if (!s.enabled) return;
  w.add("spec_decode_num_drafts_total", "counter", "Number of spec decoding drafts (a request's drafts verified in one step).",
        num(s.num_drafts));
  w.add("spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens.", num(s.num_draft_tokens));
  w.add("spec_decode_num_accepted_tokens_total", "counter", "Number of accepted tokens.", num(s.num_accepted_tokens));
  std::vector<std::pair<std::string, double>> per_pos;
  for (size_t i = 0; i < s.accepted_per_pos.size(); ++i) per_pos.emplace_back(std::to_string(i), num(s.accepted_per_pos[i]));
  w.add_series("spec_decode_num_accepted_tokens_per_pos_total", "counter", "Accepted tokens per draft position.",
               "position", per_pos);
  // Tokens a verification yields: the accepted drafts plus the target's own token.
  w.add("spec_decode_mean_accepted_length", "gauge", "Mean tokens per verification: 1 + accepted drafts / drafts.",
        s.num_drafts > 0 ? 1.0 + static_cast<double>(s.num_accepted_tokens) / static_cast<double>(s.num_drafts) : 0.0);
  w.add("spec_decode_steps_total", "counter", "Steps with a request speculation could run for.", num(s.num_steps));
  w.add("spec_decode_adaptive_off_steps_total", "counter",
        "Of those steps, the ones where adaptation chose no drafts at all (speculation off).", num(s.num_steps_adaptive_off));
  w.add("spec_decode_adaptive_off_ratio", "gauge", "Share of those steps where adaptation turned speculation off.",
        s.num_steps > 0 ? static_cast<double>(s.num_steps_adaptive_off) / static_cast<double>(s.num_steps) : 0.0);
  w.add_series("spec_decode_proposal_cost_us", "gauge",
               "Proposal cost model: predicted us = per_step*max drafts asked + per_request_draft*drafts asked "
               "+ per_catch_up_token*tokens the speculator has not seen.",
               "term",
               {{"per_step", s.proposal_per_step_us},
                {"per_request_draft", s.proposal_per_request_draft_us},
                {"per_catch_up_token", s.proposal_per_catch_up_token_us}});
}

// The cache_offload tiers' part in prefix spill and restore: per tier (label tier = plugin
// name, ".2", ".3" for a repeated name), and the host's restore-vs-recompute decisions.
void add_tier_metrics(MetricsWriter& w, const EngineStats& s) {
  if (s.kv_tiers.empty()) return;
  using Series = std::vector<std::pair<std::string, double>>;
  std::vector<std::string> labels;
  for (const TierStats& t : s.kv_tiers) {
    std::string l = t.name;
    for (int n = 2; std::find(labels.begin(), labels.end(), l) != labels.end(); ++n) l = t.name + "." + std::to_string(n);
    labels.push_back(l);
  }
  auto per_tier = [&](int64_t TierStats::*field) {
    Series out;
    for (size_t i = 0; i < labels.size(); ++i) out.emplace_back(labels[i], num(s.kv_tiers[i].*field));
    return out;
  };
  w.add_series("kv_tier_hits_total", "counter", "Prefix blocks a restore found in this tier.", "tier",
               per_tier(&TierStats::hits));
  w.add_series("kv_tier_misses_total", "counter", "Prefix blocks a restore looked for in this tier and did not find.",
               "tier", per_tier(&TierStats::misses));
  w.add_series("kv_tier_blocks_in_total", "counter", "KV blocks written into this tier (spills, promotions).", "tier",
               per_tier(&TierStats::blocks_in));
  w.add_series("kv_tier_blocks_out_total", "counter", "KV blocks read back out of this tier (restores).", "tier",
               per_tier(&TierStats::blocks_out));
  w.add_series("kv_tier_bytes_in_total", "counter", "Bytes of KV blocks written into this tier.", "tier",
               per_tier(&TierStats::bytes_in));
  w.add_series("kv_tier_bytes_out_total", "counter", "Bytes of KV blocks read out of this tier.", "tier",
               per_tier(&TierStats::bytes_out));
  w.add_series("kv_tier_used_bytes", "gauge", "Bytes this tier holds.", "tier", per_tier(&TierStats::used_bytes));
  w.add_series("kv_tier_capacity_bytes", "gauge", "Bytes this tier may hold.", "tier", per_tier(&TierStats::capacity_bytes));
  w.add_series("kv_tier_entries", "gauge", "KV blocks this tier holds.", "tier", per_tier(&TierStats::entries));
  std::vector<std::pair<std::string, const HistogramSnapshot*>> saves, loads;
  for (size_t i = 0; i < labels.size(); ++i) {
    saves.emplace_back(labels[i], &s.kv_tiers[i].save_seconds);
    loads.emplace_back(labels[i], &s.kv_tiers[i].load_seconds);
  }
  w.add_histograms("kv_tier_save_seconds", "Time to copy one KV block into the tier.", "tier", saves);
  w.add_histograms("kv_tier_load_seconds", "Time to copy one KV block out of the tier.", "tier", loads);
  const TierDecisions& d = s.kv_tier_decisions;
  w.add_labeled("kv_tier_restore_decisions_total", "counter",
                "Pool misses a tier held, in blocks: restored, or recomputed and why.", "decision",
                {{"restore", num(d.restored)},
                 {"recompute_no_staging", num(d.recompute_no_staging)},
                 {"recompute_prefix_lost", num(d.recompute_prefix_lost)},
                 {"recompute_load_failed", num(d.recompute_load_failed)},
                 {"unused", num(d.recompute_not_needed)}});
  w.add_labeled("kv_tier_spills_total", "counter", "Evicted prefix blocks: staged for the tiers, or dropped.", "outcome",
                {{"spilled", num(d.spilled)}, {"dropped_no_staging", num(d.spill_dropped)}});
}

}  // namespace

std::string render_metrics(const EngineStats& s, const std::string& model_name,
                           const std::string& prefix) {
  MetricsWriter w(model_name, prefix);
  const double usage =
      s.kv_total_blocks > 0 ? static_cast<double>(s.kv_used_blocks) / s.kv_total_blocks : 0.0;
  w.add("num_requests_running", "gauge", "Number of requests in the running batch.",
        s.num_running);
  w.add("num_requests_waiting", "gauge", "Number of requests waiting to be scheduled.",
        s.num_waiting);
  w.add("kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", usage);
  w.add("kv_cache_used_blocks", "gauge", "KV-cache blocks in use.", s.kv_used_blocks);
  w.add("kv_cache_total_blocks", "gauge", "KV-cache blocks in the pool.", s.kv_total_blocks);
  w.add("kv_cache_cached_blocks", "gauge",
        "KV-cache blocks unreferenced but kept for prefix reuse.", s.kv_cached_blocks);
  w.add("kv_cache_num_seqs", "gauge", "Sequences holding KV-cache blocks.", s.kv_num_seqs);
  w.add("num_preemptions_total", "counter", "Cumulative number of preemptions.",
        num(s.num_preemptions));
  w.add("prefix_cache_queries_total", "counter",
        "Prefix cache queries, in terms of number of queried tokens.", num(s.prefix_cache_queries));
  w.add("prefix_cache_hits_total", "counter",
        "Prefix cache hits, in terms of number of cached tokens.", num(s.prefix_cache_hits));
  w.add_labeled("prefix_cache_misses_total", "counter",
                "Prefix cache misses, in terms of number of queried tokens not found, by reason.",
                "reason",
                {{"no_match", num(s.prefix_cache_miss_no_match)},
                 {"partial_block", num(s.prefix_cache_miss_partial_block)},
                 {"evicted", num(s.prefix_cache_miss_evicted)},
                 {"salt_mismatch", num(s.prefix_cache_miss_salt_mismatch)},
                 {"lower_tier", num(s.prefix_cache_miss_lower_tier)}});
  w.add("kv_swapped_out_blocks_total", "counter",
        "KV-cache blocks saved to the offload tier when their request was preempted.",
        num(s.kv_swapped_out_blocks));
  w.add("kv_swapped_in_blocks_total", "counter",
        "KV-cache blocks restored from the offload tier instead of recomputed.", num(s.kv_swapped_in_blocks));
  w.add("prompt_tokens_total", "counter", "Number of prefill tokens processed.",
        num(s.prompt_tokens_total));
  w.add("generation_tokens_total", "counter", "Number of generation tokens processed.",
        num(s.generation_tokens_total));
  w.add_labeled("request_success_total", "counter",
                "Count of successfully processed requests.", "finished_reason",
                {{"stop", num(s.requests_finished_stop)}, {"length", num(s.requests_finished_length)}});
  w.add_histogram("time_to_first_token_seconds",
                  "Histogram of time to first token in seconds.", s.time_to_first_token);
  w.add_histogram("inter_token_latency_seconds",
                  "Histogram of inter-token latency in seconds.", s.inter_token_latency);
  w.add_histogram("request_time_per_output_token_seconds",
                  "Histogram of time_per_output_token_seconds per request.", s.time_per_output_token);
  w.add_histogram("e2e_request_latency_seconds",
                  "Histogram of e2e request latency in seconds.", s.e2e_request_latency);
  w.add_histogram("request_queue_time_seconds",
                  "Histogram of time spent in WAITING phase for request.", s.request_queue_time);
  w.add_histogram("request_prefill_time_seconds",
                  "Histogram of time spent in PREFILL phase for request.", s.request_prefill_time);
  w.add_histogram("request_decode_time_seconds",
                  "Histogram of time spent in DECODE phase for request.", s.request_decode_time);
  w.add_histogram("request_prompt_tokens", "Number of prefill tokens processed.",
                  s.request_prompt_tokens);
  w.add_histogram("request_generation_tokens", "Number of generation tokens processed.",
                  s.request_generation_tokens);
  w.add_histogram("iteration_tokens_total", "Histogram of number of tokens per engine_step.",
                  s.iteration_tokens);
  w.add("engine_steps_total", "counter", "Engine steps that ran a batch.", num(s.engine_steps));
  w.add("engine_step_seconds_total", "counter", "Wall time of those steps, from scheduling to the last output.",
        s.engine_step_seconds);
  w.add("grammar_steps_total", "counter", "Engine steps that sampled a request under a grammar.", num(s.grammar_steps));
  w.add("grammar_step_seconds_total", "counter", "Wall time of the steps that sampled under a grammar.",
        s.grammar_step_seconds);
  w.add("grammar_seconds_total", "counter",
        "Time spent masking logits with grammars and advancing their state (a share of grammar_step_seconds_total).",
        s.grammar_seconds);
  add_tier_metrics(w, s);
  add_slo_metrics(w, s.slo);
  add_semantic_cache_metrics(w, s.semantic_cache);
  add_spec_decode_metrics(w, s.spec_decode);
  return w.take();
}

}  // namespace loom
