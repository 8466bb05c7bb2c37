// loom-bench serve against the real loom-server on the demo model (stories260K): 16 random
// prompts of 32 tokens, 16 output tokens each with ignore_eos, 4 at a time. Checks that every
// figure of the JSON report is present and consistent; no timing thresholds.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "e2e/server_process.hpp"

namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

using loom::test::ServerProcess;

TEST(BenchSmoke, ServeReportsEveryMetricAgainstLoomServer) {
  const fs::path dir = fs::temp_directory_path() / ("loom-bench-smoke-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string gguf = std::string(LOOM_TEST_DATA) + "/stories260K.gguf";
  std::ofstream(dir / "server.toml") << "[model]\npath = \"" << gguf << "\"\nname = \"stories\"\n"
                                     << "[server]\nhost = \"127.0.0.1\"\nport = 0\n"
                                     << "[runtime]\nthreads = 1\n[logging]\nlevel = \"info\"\n";
  ServerProcess server(LOOM_SERVER_BIN, {"--config", (dir / "server.toml").string()});
  ASSERT_GT(server.port(), 0) << server.output();

  const fs::path json_path = dir / "report.json";
  const std::string command = std::string("timeout 300 ") + LOOM_BENCH_BIN +
                              " serve --base-url http://127.0.0.1:" + std::to_string(server.port()) +
                              " --dataset-name random --num-prompts 16 --random-input-len 32"
                              " --random-output-len 16 --max-concurrency 4 --num-warmups 2"
                              " --seed 1 --goodput e2el:1000000 --no-progress --tokenizer " + gguf +
                              " --json " + json_path.string() + " > " + (dir / "out.txt").string() +
                              " 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream out_file(dir / "out.txt");
  const std::string out((std::istreambuf_iterator<char>(out_file)), {});
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_NE(out.find("Serving Benchmark Result"), std::string::npos) << out;

  std::ifstream in(json_path);
  const Json report = Json::parse(in);
  const Json& s = report.at("summary");
  EXPECT_EQ(s.at("model"), "stories");  // found through GET /v1/models
  EXPECT_EQ(s.at("completed"), 16);
  EXPECT_EQ(s.at("failed"), 0);
  EXPECT_EQ(s.at("total_output_tokens"), 16 * 16);
  EXPECT_EQ(s.at("responses_without_usage"), 0);
  EXPECT_TRUE(s.at("exact_prompt_lengths").get<bool>());
  EXPECT_GE(s.at("max_concurrency_observed").get<int>(), 1);
  EXPECT_LE(s.at("max_concurrency_observed").get<int>(), 4);
  EXPECT_GT(s.at("duration_s").get<double>(), 0);
  for (const char* key : {"request_throughput", "output_throughput", "total_token_throughput"}) {
    EXPECT_GT(s.at(key).get<double>(), 0) << key;
  }
  EXPECT_EQ(s.at("good_requests"), 16);  // an SLO no request can miss
  EXPECT_DOUBLE_EQ(s.at("request_goodput").get<double>(), s.at("request_throughput").get<double>());
  EXPECT_DOUBLE_EQ(s.at("output_throughput").get<double>(),
                   s.at("request_throughput").get<double>() * 16);
  EXPECT_EQ(s.at("ttft_ms").at("count"), 16);
  EXPECT_EQ(s.at("tpot_ms").at("count"), 16);
  EXPECT_EQ(s.at("e2el_ms").at("count"), 16);
  EXPECT_EQ(s.at("itl_ms").at("count").get<int>(), 16 * 15);  // the server sends one token a chunk
  for (const char* metric : {"ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"}) {
    const Json& d = s.at(metric);
    for (const char* key : {"mean", "median", "std", "p90", "p99", "min", "max"}) {
      EXPECT_GE(d.at(key).get<double>(), 0) << metric << "." << key;
    }
    EXPECT_LE(d.at("min").get<double>(), d.at("median").get<double>()) << metric;
    EXPECT_LE(d.at("median").get<double>(), d.at("p90").get<double>()) << metric;
    EXPECT_LE(d.at("p90").get<double>(), d.at("p99").get<double>()) << metric;
    EXPECT_LE(d.at("p99").get<double>(), d.at("max").get<double>()) << metric;
  }

  const Json& requests = report.at("requests");
  ASSERT_EQ(requests.size(), 16u);
  EXPECT_EQ(s.at("completed").get<size_t>() + s.at("failed").get<size_t>(), requests.size());
  int64_t input_tokens = 0;
  for (const Json& r : requests) {
    EXPECT_TRUE(r.at("success").get<bool>()) << r.dump();
    EXPECT_EQ(r.at("output_tokens"), 16) << r.dump();
    EXPECT_EQ(r.at("itl_ms").size(), 15u) << r.dump();
    EXPECT_LE(r.at("ttft_ms").get<double>(), r.at("e2el_ms").get<double>()) << r.dump();
    EXPECT_GE(r.at("start_s").get<double>(), 0);
    // The tokenizer built 32-token prompts; the server adds BOS.
    EXPECT_LE(r.at("client_prompt_tokens").get<int>(), 32);
    EXPECT_EQ(r.at("prompt_tokens").get<int>(), r.at("client_prompt_tokens").get<int>() + 1);
    input_tokens += r.at("prompt_tokens").get<int64_t>();
    double itl_sum = 0;
    for (const Json& v : r.at("itl_ms")) itl_sum += v.get<double>();
    // TTFT + the ITLs reach the last token, which comes before the stream ends.
    EXPECT_LE(r.at("ttft_ms").get<double>() + itl_sum, r.at("e2el_ms").get<double>() + 1e-6);
    EXPECT_GE(r.at("tpot_ms").get<double>(), 0) << r.dump();
  }
  EXPECT_EQ(s.at("total_input_tokens").get<int64_t>(), input_tokens);
  fs::remove_all(dir);
}

}  // namespace
