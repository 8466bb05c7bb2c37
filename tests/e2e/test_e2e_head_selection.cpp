// The head's selection through the server: with [runtime] head_top_k (the default 64) greedy and
// top-k requests sample from the head's best entries alone; with head_top_k = 0 every row is
// computed whole. Both give the same text for every request, sent concurrently so that selected
// rows, whole rows (logprobs, penalties, sampling without top_k) and prefill share steps.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

#include "e2e/e2e_server.hpp"

namespace loom::test {
namespace {

using nlohmann::json;

std::string config_with_head_top_k(int k) {
  std::string c = demo_config(R"(
[scheduler]
plugin = "continuous"
[cache]
plugin = "paged"
kv_memory = "16MiB"
block_size = 16
)");
  const std::string seed = "seed = 7\n";
  c.replace(c.find(seed), seed.size(), seed + "head_top_k = " + std::to_string(k) + "\n");
  return c;
}

// Requests of every kind, each with its own seed.
std::vector<json> requests() {
  const std::vector<std::string> prompts = {"Once upon a time", "The little dog", "Lily and Ben went to the park",
                                            "One day, a big"};
  std::vector<json> out;
  int seed = 100;
  for (const std::string& p : prompts) {
    const json base = {{"prompt", p}, {"max_tokens", 24}, {"ignore_eos", true}, {"seed", seed++}};
    json greedy = base, top_k = base, top_k_p = base, plain = base, logprobs = base, penalty = base;
    greedy["temperature"] = 0;
    top_k["temperature"] = 0.9;
    top_k["top_k"] = 5;
    top_k_p["temperature"] = 1.2;
    top_k_p["top_k"] = 40;
    top_k_p["top_p"] = 0.8;
    top_k_p["min_p"] = 0.05;
    plain["temperature"] = 1.0;  // no top_k: the whole row
    logprobs["temperature"] = 0;
    logprobs["logprobs"] = 2;
    penalty["temperature"] = 0;
    penalty["frequency_penalty"] = 0.5;
    for (const json& j : {greedy, top_k, top_k_p, plain, logprobs, penalty}) out.push_back(j);
  }
  return out;
}

std::vector<std::string> texts(const LiveServer& server, const std::vector<json>& bodies) {
  std::vector<std::future<std::string>> pending;
  for (const json& b : bodies)
    pending.push_back(std::async(std::launch::async, [&server, b] {
      const HttpResponse r = server.post("/v1/completions", b);
      EXPECT_EQ(r.status, 200u) << r.body;
      return json::parse(r.body)["choices"][0]["text"].get<std::string>();
    }));
  std::vector<std::string> out;
  for (auto& f : pending) out.push_back(f.get());
  return out;
}

TEST(E2eHeadSelection, SelectedRowsSampleWhatWholeRowsSample) {
  const std::vector<json> bodies = requests();
  std::vector<std::string> selected, whole;
  {
    LiveServer server(config_with_head_top_k(64));
    selected = texts(server, bodies);
  }
  {
    LiveServer server(config_with_head_top_k(0));
    whole = texts(server, bodies);
  }
  ASSERT_EQ(selected.size(), bodies.size());
  for (size_t i = 0; i < bodies.size(); ++i) {
    EXPECT_FALSE(selected[i].empty()) << bodies[i].dump();
    EXPECT_EQ(selected[i], whole[i]) << bodies[i].dump();
  }
  // Different seeds and settings give different stories: the comparison is not of constants.
  EXPECT_NE(selected[1], selected[7]);
}

}  // namespace
}  // namespace loom::test
