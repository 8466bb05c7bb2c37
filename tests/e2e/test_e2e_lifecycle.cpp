// Request lifecycle through the real server: a client that disconnects mid-stream frees its
// sequence (seen in the cache plugin's accounting), and a TOML edit swaps a plugin.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/formats/gguf_file.hpp"
#include "core/formats/llama_gguf_export.hpp"
#include "core/formats/model_presets.hpp"
#include "e2e/e2e_server.hpp"

namespace loom::test {
namespace {

using nlohmann::json;

// A random-weight model big enough that 2,000 tokens take many seconds on the CPU, so a request
// is certainly still running when its client goes away. Made once per test run.
std::string slow_model_path() {
  const auto path = std::filesystem::temp_directory_path() / "loom-e2e-slow-model.gguf";
  if (!std::filesystem::exists(path)) {
    const GgufFile vocab = GgufFile::open(std::string(LOOM_TEST_DATA) + "/stories260K.gguf");
    RandomLlamaOptions opts;
    opts.shape = parse_llama_dims("dim=512,hidden=1536,layers=8,heads=8,kv_heads=4,ctx=4096");
    opts.dtype = LOOM_DTYPE_F16;
    opts.seed = 1;
    opts.name = "slow";
    random_llama_gguf(opts, tokenizer_metadata(vocab)).write(path.string());
  }
  return path.string();
}

TEST(E2eLifecycle, ClientDisconnectMidStreamFreesItsSequence) {
  LiveServer server(demo_config(R"(
[cache]
plugin = "contiguous"
kv_memory = "256MiB"
)", slow_model_path()));
  const auto before = server.metrics();
  EXPECT_EQ(before.at("loom:kv_cache_used_blocks"), 0);

  HttpTestClient client(server.port());
  const std::string body =
      json{{"prompt", "Once"}, {"max_tokens", 2000}, {"ignore_eos", true}, {"stream", true}}.dump();
  client.send_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  const std::string first = client.read_raw_until("data: ");
  ASSERT_NE(first.find("200"), std::string::npos) << first;

  // The request holds its blocks while it streams...
  const auto during = server.metrics();
  EXPECT_EQ(during.at("loom:kv_cache_num_seqs"), 1);
  EXPECT_GT(during.at("loom:kv_cache_used_blocks"), 0);
  EXPECT_EQ(during.at("loom:num_requests_running"), 1);

  // ...and gives them back once its client is gone, without finishing.
  client.close();
  EXPECT_TRUE(wait_for([&] {
    const auto m = server.metrics();
    return m.at("loom:kv_cache_num_seqs") == 0 && m.at("loom:kv_cache_used_blocks") == 0 &&
           m.at("loom:num_requests_running") == 0;
  })) << "the disconnected request still holds KV blocks";
  EXPECT_EQ(server.metrics().at("loom:request_success_total"), before.at("loom:request_success_total"));

  // The server goes on serving.
  const HttpResponse ok = server.post("/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 2}});
  EXPECT_EQ(ok.status, 200u) << ok.body;
}

// Two schedulers from the same build, chosen by config alone, serve the same greedy text.
TEST(E2eLifecycle, TomlEditSwapsTheScheduler) {
  std::vector<std::string> texts;
  for (const char* scheduler : {"fcfs", "priority"}) {
    LiveServer server(demo_config(std::string("[scheduler]\nplugin = \"") + scheduler + R"("
max_num_seqs = 4
[cache]
plugin = "contiguous"
kv_memory = "8MiB"
)"));
    const HttpResponse r = server.post("/v1/completions", {{"prompt", ""}, {"temperature", 0}, {"max_tokens", 64}});
    ASSERT_EQ(r.status, 200u) << scheduler << ": " << r.body;
    texts.push_back(json::parse(r.body)["choices"][0]["text"]);
  }
  EXPECT_EQ(texts[0], texts[1]);
  EXPECT_EQ(texts[0].rfind("Once upon a time", 0), 0u);
}

TEST(E2eLifecycle, UnknownPluginNameIsOneClearLineListingTheAvailableOnes) {
  try {
    LiveServer server(demo_config("[scheduler]\nplugin = \"no_such_scheduler\"\n"));
    FAIL() << "the engine started with an unknown scheduler";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("no_such_scheduler"), std::string::npos) << message;
    EXPECT_NE(message.find("fcfs"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace loom::test
