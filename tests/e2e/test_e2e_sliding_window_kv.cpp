// Sliding-window KV through the whole server (cache interface 1.5, core/executor/kv_groups.hpp),
// on the random gemma3-tiny preset (f32; 3 layers: 2 local of window 8, 1 global), for each cache
// with group tables (paged, radix):
//   * the layers split into 3 block-table groups; while a long request decodes, /metrics shows
//     the local groups holding only their window's blocks (at most 2 of 16 tokens each) beside the
//     global group's whole context;
//   * its greedy output equals the one with cache contiguous, which keeps one table for every
//     layer (and says so at start-up), bit for bit in f32; and so does the same prompt again,
//     served from the prefix cache (the local groups' released blocks are still cached).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "core/formats/gguf_file.hpp"
#include "core/formats/llama_gguf_export.hpp"
#include "core/formats/model_presets.hpp"
#include "e2e/e2e_server.hpp"

namespace loom {
namespace {

using test::HttpTestClient;
using test::LiveServer;

constexpr int32_t kBlock = 16;
constexpr int32_t kPrompt = 300;

struct TemporaryModel {
  std::string path;
  ~TemporaryModel() { std::filesystem::remove(path); }
};

const std::string& gemma3_tiny_path() {
  static const TemporaryModel model{[] {
    RandomLlamaOptions opts;
    opts.shape = llama_preset("gemma3-tiny");
    opts.dtype = LOOM_DTYPE_F32;
    opts.seed = 3;
    opts.init_std = 0.2f;
    opts.name = "gemma3-tiny";
    const GgufMetadata tok = tokenizer_metadata(GgufFile::open(std::string(LOOM_TEST_DATA) + "/stories260K.gguf"));
    const std::filesystem::path file =
        std::filesystem::temp_directory_path() / ("loom-swa-gemma3-" + std::to_string(::getpid()) + ".gguf");
    random_llama_gguf(opts, tok).write(file.string());
    return file.string();
  }()};
  return model.path;
}

std::string config(const std::string& cache) {
  return test::demo_config("[scheduler]\nplugin = \"continuous\"\n[cache]\nplugin = \"" + cache +
                               "\"\nnum_blocks = 400\nblock_size = " + std::to_string(kBlock) + "\n",
                           gemma3_tiny_path());
}

nlohmann::json prompt() {
  std::mt19937 gen(17);
  std::uniform_int_distribution<int32_t> token(3, 511);
  nlohmann::json ids = nlohmann::json::array({1});
  while (static_cast<int32_t>(ids.size()) < kPrompt) ids.push_back(token(gen));
  return ids;
}

// The first choice of a greedy completion with its logprobs: text, tokens and their values.
nlohmann::json greedy_choice(const LiveServer& server) {
  const nlohmann::json body = {{"prompt", prompt()}, {"max_tokens", 24}, {"temperature", 0}, {"ignore_eos", true},
                               {"logprobs", 2}};
  const auto r = server.post("/v1/completions", body);
  EXPECT_EQ(r.status, 200u) << r.body;
  const nlohmann::json j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["usage"]["completion_tokens"], 24);
  return j["choices"][0];
}

class E2eSlidingWindowKv : public ::testing::TestWithParam<std::string> {};

TEST_P(E2eSlidingWindowKv, LocalGroupsHoldOnlyTheirWindowWhileDecoding) {
  LiveServer server(config(GetParam()));
  const nlohmann::json body = {{"prompt", prompt()}, {"max_tokens", 200}, {"temperature", 0}, {"ignore_eos", true},
                               {"stream", true}};
  const std::string text = body.dump();
  // The snapshot must catch the request while it decodes; a tiny model may finish it first, so a
  // few tries are allowed.
  bool caught = false;
  for (int attempt = 0; attempt < 5 && !caught; ++attempt) {
    HttpTestClient stream(server.port(), "127.0.0.1", std::chrono::seconds(60));
    stream.send_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                    std::to_string(text.size()) + "\r\n\r\n" + text);
    // Twenty tokens in, the request is decoding at a position p of 319..499.
    std::string got;
    size_t events = 0;
    while (events < 20) {
      got += stream.read_raw_until("\n\n");
      events = 0;
      for (size_t at = got.find("data: {"); at != std::string::npos; at = got.find("data: {", at + 1)) ++events;
    }
    const auto m = server.metrics();
    stream.reset();
    if (m.at("loom:kv_cache_num_seqs") != 1) continue;
    caught = true;
    // The global group holds ceil((p + 1) / 16) blocks, 20..32; a local one of window 8 holds the
    // blocks of positions p - 7 .. p, 1 or 2. Keeping every block would take three times 20 at least.
    const double used = m.at("loom:kv_cache_used_blocks");
    EXPECT_GE(used, 20 + 2 * 1);
    EXPECT_LE(used, 32 + 2 * 2);
    EXPECT_EQ(m.at("loom:kv_cache_total_blocks"), 400);
    // Wait for the aborted request to hand its blocks back before the next try or the end.
    EXPECT_TRUE(test::wait_for([&] { return server.metrics().at("loom:kv_cache_num_seqs") == 0; }));
  }
  EXPECT_TRUE(caught) << "the request always finished before /metrics was read";
}

TEST_P(E2eSlidingWindowKv, GreedyOutputEqualsTheOneTableCacheAndAPrefixHit) {
  nlohmann::json grouped, hit, one_table;
  {
    LiveServer server(config(GetParam()));
    grouped = greedy_choice(server);
    hit = greedy_choice(server);
    // The second request found the first's 18 full blocks (the last token is always computed).
    EXPECT_EQ(server.metrics().at("loom:prefix_cache_hits_total"), 18 * kBlock);
  }
  {
    LiveServer server(config("contiguous"));
    one_table = greedy_choice(server);
  }
  EXPECT_EQ(grouped.dump(), one_table.dump());
  EXPECT_EQ(hit.dump(), one_table.dump());
  EXPECT_EQ(grouped["logprobs"]["tokens"].size(), 24u);
}

INSTANTIATE_TEST_SUITE_P(Caches, E2eSlidingWindowKv, ::testing::Values("paged", "radix"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace loom
