#include "core/server/metrics_text.hpp"

#include <cstdio>

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

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

class MetricsWriter {
 public:
  explicit MetricsWriter(const std::string& model_name)
      : labels_("{model_name=\"" + escape_label(model_name) + "\"}") {}

  void add(const char* name, const char* type, const char* help, double value) {
    out_ += std::string("# HELP ") + name + " " + help + "\n";
    out_ += std::string("# TYPE ") + name + " " + type + "\n";
    out_ += std::string(name) + labels_ + " " + number(value) + "\n";
  }
  std::string take() { return std::move(out_); }

 private:
  std::string labels_;
  std::string out_;
};

}  // namespace

std::string render_metrics(const EngineStats& s, const std::string& model_name) {
  MetricsWriter w(model_name);
  const double usage =
      s.kv_total_blocks > 0 ? static_cast<double>(s.kv_used_blocks) / s.kv_total_blocks : 0.0;
  w.add("loom:num_requests_running", "gauge", "Number of requests in the running batch.",
        s.num_running);
  w.add("loom:num_requests_waiting", "gauge", "Number of requests waiting to be scheduled.",
        s.num_waiting);
  w.add("loom:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", usage);
  w.add("loom:kv_cache_used_blocks", "gauge", "KV-cache blocks in use.", s.kv_used_blocks);
  w.add("loom:kv_cache_total_blocks", "gauge", "KV-cache blocks in the pool.", s.kv_total_blocks);
  w.add("loom:kv_cache_num_seqs", "gauge", "Sequences holding KV-cache blocks.", s.kv_num_seqs);
  w.add("loom:num_preemptions_total", "counter", "Cumulative number of preemptions.",
        static_cast<double>(s.num_preemptions));
  w.add("loom:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
        static_cast<double>(s.prompt_tokens_total));
  w.add("loom:generation_tokens_total", "counter", "Number of generation tokens processed.",
        static_cast<double>(s.generation_tokens_total));
  w.add("loom:request_success_total", "counter", "Count of successfully processed requests.",
        static_cast<double>(s.requests_finished));
  return w.take();
}

}  // namespace loom
