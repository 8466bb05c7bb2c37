// Request classes and admission control end to end: priority, slo and the gateway headers are
// validated (400 naming the field) and feed the per-class SLO counters; with admission on, 500
// requests sent at once each get 200 or 429 with Retry-After, none hangs, memory stays bounded
// and /metrics accounts for every one of them.
#include <gtest/gtest.h>

#include <chrono>

#include <fstream>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "e2e/e2e_server.hpp"

namespace loom::test {
namespace {

using nlohmann::json;

// The sum of every series of `name` in a /metrics text whose labels contain `label` ("" = all).
double metric_sum(const std::string& text, const std::string& name, const std::string& label = "") {
  double sum = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + "{", 0) != 0) continue;
    if (!label.empty() && line.find(label) == std::string::npos) continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

std::string param_of(const HttpResponse& r) {
  const json body = json::parse(r.body);
  return body["error"]["param"].is_string() ? body["error"]["param"].get<std::string>() : "";
}

const std::string kClasses = R"(
[scheduler]
plugin = "slo"
[cache]
plugin = "paged"
kv_memory = "16MiB"
[slo]
classes = [{ priority = 0, ttft_ms = 60000, tpot_ms = 60000 }]
)";

TEST(E2eAdmission, InvalidClassFieldsAre400NamingTheField) {
  LiveServer server(demo_config(kClasses));
  auto post = [&](const json& body, const HttpTestClient::Headers& headers = {}) {
    return server.client().post("/v1/completions", body.dump(), headers);
  };
  const json base = {{"prompt", "Once upon a time"}, {"max_tokens", 2}};
  json bad = base;
  bad["priority"] = "high";
  EXPECT_EQ(post(bad).status, 400u);
  EXPECT_EQ(param_of(post(bad)), "priority");
  bad = base;
  bad["priority"] = 1.5;
  EXPECT_EQ(param_of(post(bad)), "priority");
  bad = base;
  bad["slo"] = {{"ttft_ms", 0}};
  EXPECT_EQ(param_of(post(bad)), "slo.ttft_ms");
  bad = base;
  bad["slo"] = {{"deadline", 5}};
  EXPECT_EQ(param_of(post(bad)), "slo.deadline");
  bad = base;
  bad["slo"] = 100;
  EXPECT_EQ(param_of(post(bad)), "slo");
  EXPECT_EQ(param_of(post(base, {{"x-slo-tpot-ms", "fast"}})), "x-slo-tpot-ms");
  EXPECT_EQ(param_of(post(base, {{"x-slo-ttft-ms", "-5"}})), "x-slo-ttft-ms");
  // The chat route reads the same fields.
  const json chat = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}, {"max_tokens", 2}, {"priority", json::array()}};
  EXPECT_EQ(param_of(server.client().post("/v1/chat/completions", chat.dump())), "priority");
}

TEST(E2eAdmission, ClassTargetsFeedThePerClassCounters) {
  LiveServer server(demo_config(kClasses));
  json body = {{"prompt", "Once upon a time"}, {"max_tokens", 4}, {"ignore_eos", true}};
  EXPECT_EQ(server.client().post("/v1/completions", body.dump()).status, 200u);  // class 0's 60 s targets
  body["priority"] = 3;                                                             // no class defaults
  EXPECT_EQ(server.client().post("/v1/completions", body.dump(), {{"x-slo-ttft-ms", "60000"}}).status, 200u);
  body["slo"] = {{"tpot_ms", 60000}};
  body["user"] = "tenant-a";
  EXPECT_EQ(server.client().post("/v1/completions", body.dump(), {{"x-gateway-inference-fairness-id", "t1"}}).status,
            200u);
  // The engine counts a request just after its last output is sent: wait (bounded) until the
  // third one is counted, then every counter must hold exactly.
  std::string text = server.client().get("/metrics").body;
  for (int i = 0; i < 200 && metric_sum(text, "loom:request_slo_tpot_met_total", "priority=\"3\"") < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    text = server.client().get("/metrics").body;
  }
  EXPECT_EQ(metric_sum(text, "loom:request_slo_ttft_met_total", "priority=\"0\""), 1);
  EXPECT_EQ(metric_sum(text, "loom:request_slo_tpot_met_total", "priority=\"0\""), 1);
  EXPECT_EQ(metric_sum(text, "loom:request_slo_ttft_met_total", "priority=\"3\""), 1);  // the header's target
  EXPECT_EQ(metric_sum(text, "loom:request_slo_tpot_met_total", "priority=\"3\""), 1);  // the body's target
  EXPECT_EQ(metric_sum(text, "loom:request_queue_wait_seconds_count"), 3);
  EXPECT_GT(metric_sum(text, "loom:request_goodput"), 0);
  EXPECT_GT(metric_sum(text, "loom:step_time_model_samples_total"), 0);
}

int64_t vm_hwm_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

TEST(E2eAdmission, FiveHundredAtOnceEachGet200Or429WithRetryAfter) {
  constexpr int kRequests = 500;
  LiveServer server(demo_config(R"(
[scheduler]
plugin = "continuous"
max_num_seqs = 4
max_num_batched_tokens = 64
[cache]
plugin = "paged"
kv_memory = "16MiB"
[slo]
admission = true
max_queue_len = 16
)"));
  std::vector<unsigned> status(kRequests, 0);
  std::vector<std::string> retry_after(kRequests), code(kRequests), error(kRequests);
  {
    std::latch ready(kRequests);
    std::vector<std::thread> threads;
    threads.reserve(kRequests);
    for (int i = 0; i < kRequests; ++i) {
      threads.emplace_back([&, i] {
        try {
          HttpTestClient client(server.port(), "127.0.0.1", std::chrono::seconds(120));
          ready.arrive_and_wait();
          const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 32}, {"ignore_eos", true}};
          const HttpResponse r = client.post("/v1/completions", body.dump());
          status[i] = r.status;
          retry_after[i] = r.header(boost::beast::http::field::retry_after);
          if (r.status == 429) code[i] = json::parse(r.body)["error"]["code"].get<std::string>();
        } catch (const std::exception& e) {
          error[i] = e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  int ok = 0, refused = 0;
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_EQ(error[i], "") << "request " << i << " got no answer";
    if (status[i] == 200) {
      ++ok;
      EXPECT_EQ(retry_after[i], "");
    } else {
      ASSERT_EQ(status[i], 429u) << "request " << i;
      ++refused;
      ASSERT_FALSE(retry_after[i].empty()) << "request " << i << ": 429 without Retry-After";
      const int seconds = std::stoi(retry_after[i]);
      EXPECT_GE(seconds, 1);
      EXPECT_LE(seconds, 60);
      EXPECT_EQ(code[i], "queue_full");
    }
  }
  EXPECT_EQ(ok + refused, kRequests);
  EXPECT_GE(ok, 16) << "the first max_queue_len requests always find room";
  EXPECT_GT(refused, 0) << "500 at once never filled a queue of 16";
  const std::string text = server.client().get("/metrics").body;
  EXPECT_EQ(metric_sum(text, "loom:request_success_total"), ok);
  EXPECT_EQ(metric_sum(text, "loom:num_requests_rejected_total"), refused);
  EXPECT_EQ(metric_sum(text, "loom:num_requests_rejected_total", "reason=\"queue_full\""), refused);
  EXPECT_EQ(metric_sum(text, "loom:num_requests_failed_total"), 0);
  EXPECT_EQ(metric_sum(text, "loom:num_requests_aborted_total"), 0);
  const int64_t hwm = vm_hwm_kib();
  std::printf("500 at once: %d answered 200, %d answered 429; VmHWM %lld KiB\n", ok, refused,
              static_cast<long long>(hwm));
  RecordProperty("vm_hwm_kib", std::to_string(hwm));
  EXPECT_LT(hwm, 1024 * 1024) << "VmHWM over 1 GiB";
}

}  // namespace
}  // namespace loom::test
