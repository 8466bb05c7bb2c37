// A [cache_offload] tier beside block-table groups, through loom-server: the random gemma3-tiny
// preset (f32; 3 layers: 2 local of window 8, 1 global) keeps its 3 groups with a host tier, and
// start-up says so. On a pool of 21 blocks, four prompt families sent one by one, then twenty
// requests at once, are preempted by swap and have their shared prefixes evicted, spilled and
// restored; every completion (text and logprobs) equals the one a server without a tier gives on
// a roomy pool, and /metrics shows the swaps, spills and restores.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/server_process.hpp"
#include "unit/engine_prompt_runs.hpp"
#include "unit/http_test_client.hpp"
#include "unit/random_preset_model.hpp"

namespace loom::test {
namespace {

namespace fs = std::filesystem;

// Four families of a 64-token prefix (four blocks), as test_engine_kv_tiers_groups runs them on
// the engine, as request bodies: greedy, with the sampled tokens' logprobs.
struct Workload {
  std::vector<nlohmann::json> warm, storm;
};

const Workload& workload() {
  static const Workload w = [] {
    const FamilyPrompts prompts = prefix_families(
        {.seed = 20261207, .families = 4, .prefix_tokens = 64, .per_family = 5, .min_new = 16, .max_new = 30});
    auto body = [](const Prompt& p) {
      return nlohmann::json{{"prompt", p.ids}, {"max_tokens", p.max_tokens}, {"temperature", 0},
                            {"ignore_eos", true}, {"logprobs", 1}};
    };
    Workload out;
    for (const Prompt& p : prompts.warm) out.warm.push_back(body(p));
    for (const Prompt& p : prompts.storm) out.storm.push_back(body(p));
    return out;
  }();
  return w;
}

class E2eKvTiersGroups : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("loom-e2e-tiers-groups-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A config file for loom-server: the model, naive attention, continuous scheduling, paged.
  std::string config(int32_t num_blocks, bool tier) const {
    const fs::path path = dir_ / (tier ? "tier.toml" : "alone.toml");
    std::ofstream(path) << "[model]\npath = \"" << random_preset_path("gemma3-tiny", 3) << "\"\nname = \"g\"\n"
                        << "[server]\nport = 0\n[runtime]\nthreads = 2\nseed = 7\n[attention]\nplugin = \"naive\"\n"
                        << "[scheduler]\nplugin = \"continuous\"\nmax_num_seqs = 64\nmax_num_batched_tokens = 96\n"
                        << "[cache]\nplugin = \"paged\"\nnum_blocks = " << num_blocks
                        << "\nblock_size = 16\ncheck_invariants = true\n"
                        << (tier ? "[cache_offload]\nplugin = \"host\"\ncapacity = \"16MiB\"\n" : "");
    return path.string();
  }

  fs::path dir_;
};

// The first choice's text and sampled-token logprobs.
nlohmann::json completion(int port, const nlohmann::json& body) {
  HttpTestClient client(static_cast<uint16_t>(port), "127.0.0.1", std::chrono::seconds(120));
  const HttpResponse r = client.post("/v1/completions", body.dump());
  EXPECT_EQ(r.status, 200u) << r.body;
  if (r.status != 200u) return nullptr;
  const nlohmann::json choice = nlohmann::json::parse(r.body)["choices"][0];
  return {choice["text"], choice["logprobs"]["token_logprobs"]};
}

// The value of the /metrics sample whose name and labels start with `series`.
double sample(const std::string& metrics, const std::string& series) {
  std::istringstream in(metrics);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(series, 0) == 0) return std::stod(line.substr(line.rfind(' ') + 1));
  ADD_FAILURE() << "no " << series << " in\n" << metrics;
  return -1;
}

TEST_F(E2eKvTiersGroups, SwapsSpillsAndRestoresGiveWhatComputingGives) {
  std::vector<nlohmann::json> alone_warm, alone_storm;
  {
    ServerProcess server(LOOM_SERVER_BIN, {"--config", config(400, false)});
    ASSERT_NE(server.port(), 0) << server.output();
    for (const auto& body : workload().warm) alone_warm.push_back(completion(server.port(), body));
    for (const auto& body : workload().storm) alone_storm.push_back(completion(server.port(), body));
  }

  ServerProcess server(LOOM_SERVER_BIN, {"--config", config(21, true)});
  ASSERT_NE(server.port(), 0) << server.output();
  EXPECT_NE(server.output().find("KV cache: 3 block-table groups, each block holding 1 of the 3 layers, windows "
                                 "[0, 8, 8]"),
            std::string::npos)
      << server.output();
  for (size_t i = 0; i < workload().warm.size(); ++i)
    EXPECT_EQ(completion(server.port(), workload().warm[i]), alone_warm[i]) << "warm prompt " << i;
  std::vector<nlohmann::json> storm(workload().storm.size());
  {
    std::vector<std::thread> clients;
    for (size_t i = 0; i < storm.size(); ++i)
      clients.emplace_back([&, i] { storm[i] = completion(server.port(), workload().storm[i]); });
    for (std::thread& t : clients) t.join();
  }
  for (size_t i = 0; i < storm.size(); ++i) EXPECT_EQ(storm[i], alone_storm[i]) << "storm prompt " << i;

  const std::string m = HttpTestClient(static_cast<uint16_t>(server.port())).get("/metrics").body;
  EXPECT_GT(sample(m, "loom:num_preemptions_total{"), 0) << m;
  EXPECT_GT(sample(m, "loom:kv_swapped_out_blocks_total{"), 0) << m;
  EXPECT_GT(sample(m, "loom:kv_swapped_in_blocks_total{"), 0) << m;
  EXPECT_GT(sample(m, "loom:kv_tier_spills_total{model_name=\"g\",outcome=\"spilled\"}"), 0) << m;
  const double restored = sample(m, "loom:kv_tier_restore_decisions_total{model_name=\"g\",decision=\"restore\"}");
  EXPECT_GT(restored, 0) << m;
  EXPECT_EQ(sample(m, "loom:prefix_cache_misses_total{model_name=\"g\",reason=\"lower_tier\"}"), restored / 3 * 16)
      << "three pool blocks, one per group, restore a position of 16 tokens";
}

}  // namespace
}  // namespace loom::test
