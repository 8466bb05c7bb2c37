// KV tiers through the HTTP surface: a pool of 12 blocks, six long prompts sent round-robin
// twice, so each prompt's prefix was evicted before it comes back; with host + disk tiers the
// second round's answers are the first round's, and /metrics shows the tiers at work per tier.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "e2e/e2e_server.hpp"

namespace loom::test {
namespace {

std::string text_prompt(int i) {
  static const char* kWords[] = {"Lily", "saw",  "a",   "big",  "red", "ball", "in",  "the", "park",
                                 "and",  "Tom",  "ran", "to",   "the", "tree", "with", "his", "dog"};
  std::string out = "Once upon a time";
  for (int w = 0; w < 40; ++w) out += std::string(" ") + kWords[(w * (i + 3) + i) % 18];
  return out;
}

TEST(E2eKvTiers, EvictedPrefixesComeBackFromTheTiers) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("loom-e2e-tiers-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    LiveServer server(demo_config("[scheduler]\nplugin = \"continuous\"\n[cache]\nplugin = \"paged\"\nnum_blocks = 12\n"
                                  "block_size = 16\ncheck_invariants = true\n[cache_offload]\nplugin = \"host\"\n"
                                  "capacity = \"4MiB\"\n[cache_offload.next]\nplugin = \"disk\"\ndir = \"" +
                                  dir.string() + "\"\ncapacity = \"16MiB\"\n"));
    std::vector<std::string> first;
    for (int round = 0; round < 2; ++round) {
      for (int i = 0; i < 6; ++i) {
        const HttpResponse r = server.post("/v1/completions", {{"prompt", text_prompt(i)},
                                                                {"max_tokens", 8},
                                                                {"temperature", 0}});
        ASSERT_EQ(r.status, 200) << r.body;
        const std::string text = nlohmann::json::parse(r.body)["choices"][0]["text"];
        if (round == 0) first.push_back(text);
        else EXPECT_EQ(text, first[static_cast<size_t>(i)]) << "prompt " << i;
      }
    }
    const std::string body = server.client().get("/metrics").body;
    EXPECT_NE(body.find("loom:kv_tier_blocks_in_total{model_name=\"stories260K\",tier=\"host\"}"), std::string::npos);
    EXPECT_NE(body.find("loom:kv_tier_blocks_in_total{model_name=\"stories260K\",tier=\"disk\"}"), std::string::npos);
    EXPECT_NE(body.find("loom:kv_tier_load_seconds_bucket{model_name=\"stories260K\",tier=\"host\",le=\"+Inf\"}"),
              std::string::npos);
    EXPECT_EQ(body.find("kv_tier_hits_total{model_name=\"stories260K\",tier=\"host\"} 0\n"), std::string::npos)
        << body;
    EXPECT_EQ(body.find("reason=\"lower_tier\"} 0\n"), std::string::npos) << "restored tokens are counted";
    EXPECT_EQ(body.find("decision=\"restore\"} 0\n"), std::string::npos) << "blocks were restored";
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace loom::test
