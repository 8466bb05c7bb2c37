// The deployment files name only metrics loom-server really exports: a live server on the demo
// model (tests/e2e/e2e_server.hpp) serves a request, /metrics is scraped, and every `loom:` name
// in the Grafana dashboard's queries, the HPA, the Prometheus adapter rule and the KEDA trigger
// must be among its samples. The dashboard must also cover what it promises to show.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "e2e/e2e_server.hpp"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every `loom:<name>` in text (a PromQL query, a YAML file).
std::set<std::string> metric_names(const std::string& text) {
  static const std::regex name(R"(loom:[A-Za-z_][A-Za-z0-9_]*)");
  std::set<std::string> out;
  for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it) out.insert(it->str());
  return out;
}

// Every string value under a key named "expr" or "query" (panel targets, template variables).
void collect_queries(const nlohmann::json& j, std::string& out) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      if ((key == "expr" || key == "query" || key == "definition") && value.is_string()) out += value.get<std::string>() + "\n";
      collect_queries(value, out);
    }
  } else if (j.is_array()) {
    for (const auto& value : j) collect_queries(value, out);
  }
}

class DeployMetrics : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new loom::test::LiveServer(loom::test::demo_config());
    const nlohmann::json body = {{"model", "stories260K"}, {"prompt", "Once upon a time"}, {"max_tokens", 4}};
    const auto r = server_->post("/v1/completions", body);
    ASSERT_EQ(r.status, 200u) << r.body;
    for (const auto& [name, value] : server_->metrics()) exported_.insert(name);
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  static void expect_exported(const std::set<std::string>& names, const std::string& where) {
    EXPECT_FALSE(names.empty()) << where << " names no loom: metric";
    for (const auto& n : names) EXPECT_EQ(exported_.count(n), 1u) << where << " names " << n << ", which /metrics lacks";
  }

  static loom::test::LiveServer* server_;
  static std::set<std::string> exported_;
};

loom::test::LiveServer* DeployMetrics::server_ = nullptr;
std::set<std::string> DeployMetrics::exported_;

TEST_F(DeployMetrics, DashboardQueriesNameOnlyExportedMetrics) {
  const auto dashboard = nlohmann::json::parse(read_file(std::string(LOOM_DEPLOY_DIR) + "/grafana/loom-dashboard.json"));
  std::string queries;
  collect_queries(dashboard, queries);
  const auto names = metric_names(queries);
  expect_exported(names, "the dashboard");
  // What the dashboard promises: TTFT/ITL/E2E p50 and p99, throughput, queue depth, KV usage,
  // preemptions and the prefix-cache hit rate.
  for (const char* hist : {"loom:time_to_first_token_seconds", "loom:inter_token_latency_seconds",
                           "loom:e2e_request_latency_seconds"}) {
    for (const char* q : {"0.5", "0.99"})
      EXPECT_NE(queries.find(std::string("histogram_quantile(") + q + ", sum by (le) (rate(" + hist + "_bucket"),
                std::string::npos)
          << hist << " p" << q;
  }
  for (const char* n : {"loom:generation_tokens_total", "loom:prompt_tokens_total", "loom:num_requests_waiting",
                        "loom:kv_cache_usage_perc", "loom:num_preemptions_total", "loom:prefix_cache_hits_total",
                        "loom:prefix_cache_queries_total"})
    EXPECT_EQ(names.count(n), 1u) << "the dashboard does not show " << n;
}

TEST_F(DeployMetrics, AutoscalersScaleOnAnExportedMetric) {
  const std::string dir = LOOM_DEPLOY_DIR;
  for (const char* file : {"/kubernetes/autoscaling/hpa.yaml", "/kubernetes/autoscaling/prometheus-adapter-rules.yaml",
                           "/kubernetes/keda/scaledobject.yaml"}) {
    const auto names = metric_names(read_file(dir + file));
    expect_exported(names, file);
    EXPECT_EQ(names, std::set<std::string>{"loom:num_requests_waiting"}) << file;
  }
}

TEST_F(DeployMetrics, TheConfigMapHoldsAValidConfig) {
  // The TOML block of the ConfigMap (indented 4 under `loom.toml: |`), read by Loom's own parser.
  std::istringstream in(read_file(std::string(LOOM_DEPLOY_DIR) + "/kubernetes/configmap.yaml"));
  std::string line, toml;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line == "  loom.toml: |") {
      inside = true;
    } else if (inside) {
      toml += (line.size() >= 4 ? line.substr(4) : std::string()) + "\n";
    }
  }
  ASSERT_FALSE(toml.empty());
  const loom::Config config = loom::parse_config(toml, "configmap.yaml");
  EXPECT_EQ(config.server.port, 8080);
  EXPECT_EQ(config.server.host, "0.0.0.0");
}

}  // namespace
