// The semantic cache behind the real server (stories260K, the exact and embedding plugins): the
// server asks it before queueing and stores finished answers after. An exact repeat is always a
// hit, marked by the header and the body field, with the same text, streamed as SSE chunks and
// with usage.prompt_tokens_details.cached_tokens; a request that differs in temperature, seed,
// tools, tenant, cache salt or any other parameter is never a hit; nothing is cached without
// opting in (unless opt_in = false), nor a non-deterministic request; the counters reach
// /metrics. With the embedding plugin (a tiny BERT as the [embedding] model) two prompts whose
// questions embed identically hit across different prompt tokens, but never across tenants.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "e2e/e2e_server.hpp"
#include "tests/unit/tiny_bert.hpp"

namespace {

namespace fs = std::filesystem;
using loom::test::LiveServer;
using nlohmann::json;
using Headers = loom::test::HttpTestClient::Headers;

constexpr const char* kHeader = "x-loom-semantic-cache";

struct Reply {
  unsigned status;
  std::string marker;  // the x-loom-semantic-cache header; "" when absent
  std::string body;
  json parsed() const { return json::parse(body); }
};

Reply post(const LiveServer& s, const std::string& route, const json& body, const Headers& headers = {}) {
  const auto r = s.client().post(route, body.dump(), headers);
  const auto it = r.headers.find(kHeader);
  return {r.status, it == r.headers.end() ? "" : std::string(it->value()), r.body};
}

std::string exact_config(const std::string& extra = "") {
  return loom::test::demo_config() + "[semantic_cache]\nplugin = \"exact\"\n" + extra;
}

const json kCompletion = {{"prompt", "Once upon a time"}, {"max_tokens", 12}, {"temperature", 0}, {"semantic_cache", true}};

TEST(E2eSemanticCache, AnExactRepeatIsAlwaysAHitWithTheSameAnswer) {
  LiveServer server(exact_config());
  const Reply first = post(server, "/v1/completions", kCompletion);
  ASSERT_EQ(first.status, 200u) << first.body;
  EXPECT_EQ(first.marker, "miss");
  EXPECT_FALSE(first.parsed().contains("semantic_cache"));
  for (int i = 0; i < 3; ++i) {
    const Reply again = post(server, "/v1/completions", kCompletion);
    ASSERT_EQ(again.status, 200u) << again.body;
    EXPECT_EQ(again.marker, "hit");
    const json j = again.parsed();
    EXPECT_EQ(j["choices"][0]["text"], first.parsed()["choices"][0]["text"]);
    EXPECT_EQ(j["choices"][0]["finish_reason"], first.parsed()["choices"][0]["finish_reason"]);
    EXPECT_EQ(j["usage"]["completion_tokens"], first.parsed()["usage"]["completion_tokens"]);
    EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], j["usage"]["prompt_tokens"]);
    EXPECT_EQ(j["semantic_cache"], json::parse(R"({"hit": true, "similarity": 1.0})"));
  }
  const auto m = server.metrics();
  EXPECT_EQ(m.at("loom:semantic_cache_hits_total"), 3);
  EXPECT_EQ(m.at("loom:semantic_cache_misses_total"), 1);
  EXPECT_EQ(m.at("loom:semantic_cache_stores_total"), 1);
  EXPECT_EQ(m.at("loom:semantic_cache_entries"), 1);
  EXPECT_EQ(m.at("loom:semantic_cache_hit_similarity_count"), 3);
}

TEST(E2eSemanticCache, AHitStreamsLikeAComputedAnswer) {
  LiveServer server(exact_config());
  json chat = {{"messages", {{{"role", "user"}, {"content", "Tell me a story"}}}}, {"max_tokens", 10},
               {"temperature", 0}, {"stream", true}, {"stream_options", {{"include_usage", true}}}};
  const Headers opt_in = {{kHeader, "on"}};
  const Reply computed = post(server, "/v1/chat/completions", chat, opt_in);
  const Reply cached = post(server, "/v1/chat/completions", chat, opt_in);
  ASSERT_EQ(cached.status, 200u);
  EXPECT_EQ(computed.marker, "miss");
  EXPECT_EQ(cached.marker, "hit");
  // The concatenated deltas, finish reason and usage of each stream.
  auto read = [](const std::string& sse, std::string& text, json& usage, std::string& finish, int& chunks) {
    size_t at = 0;
    while ((at = sse.find("data: ", at)) != std::string::npos) {
      const size_t end = sse.find("\n\n", at);
      const std::string data = sse.substr(at + 6, end - at - 6);
      at = end;
      if (data == "[DONE]") break;
      const json c = json::parse(data);
      ++chunks;
      if (!c["usage"].is_null()) usage = c["usage"];
      if (c["choices"].empty()) continue;
      text += c["choices"][0]["delta"].value("content", "");
      if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
    }
  };
  std::string t1, t2, f1, f2;
  json u1, u2;
  int n1 = 0, n2 = 0;
  read(computed.body, t1, u1, f1, n1);
  read(cached.body, t2, u2, f2, n2);
  EXPECT_EQ(t2, t1);
  EXPECT_EQ(f2, f1);
  EXPECT_GT(n2, 3) << "a cached answer streams as several chunks";
  EXPECT_EQ(u2["completion_tokens"], u1["completion_tokens"]);
  EXPECT_EQ(u2["prompt_tokens_details"]["cached_tokens"], u2["prompt_tokens"]);
  EXPECT_NE(cached.body.find(R"("semantic_cache":{"hit":true,"similarity":1.0})"), std::string::npos);
}

TEST(E2eSemanticCache, OtherSamplingToolsTenantsOrSaltsAreNeverAHit) {
  LiveServer server(exact_config());
  json seeded = kCompletion;
  seeded["seed"] = 5;
  seeded["temperature"] = 0.8;
  ASSERT_EQ(post(server, "/v1/completions", seeded).marker, "miss");
  ASSERT_EQ(post(server, "/v1/completions", seeded).marker, "hit");
  const std::vector<std::pair<const char*, json>> changes = {
      {"temperature", {{"temperature", 0.9}}},
      {"seed", {{"seed", 6}}},
      {"top_p", {{"top_p", 0.5}}},
      {"max_tokens", {{"max_tokens", 11}}},
      {"stop", {{"stop", "x"}}},
      {"user (tenant)", {{"user", "alice"}}},
      {"cache_salt", {{"cache_salt", "s1"}}},
      {"response_format", {{"response_format", {{"type", "json_object"}}}}},
  };
  for (const auto& [what, patch] : changes) {
    json body = seeded;
    body.update(patch);
    EXPECT_EQ(post(server, "/v1/completions", body).marker, "miss") << what;
  }
  // The tenant header (the gateway's fairness id) separates answers too.
  EXPECT_EQ(post(server, "/v1/completions", seeded, {{"x-gateway-inference-fairness-id", "t1"}}).marker, "miss");
  EXPECT_EQ(post(server, "/v1/completions", seeded, {{"x-gateway-inference-fairness-id", "t2"}}).marker, "miss");
  EXPECT_EQ(post(server, "/v1/completions", seeded, {{"x-gateway-inference-fairness-id", "t1"}}).marker, "hit");
  // Tools: a chat request with a tool list is not the same request as one without.
  json chat = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 6}, {"temperature", 0},
               {"semantic_cache", true}};
  ASSERT_EQ(post(server, "/v1/chat/completions", chat).marker, "miss");
  ASSERT_EQ(post(server, "/v1/chat/completions", chat).marker, "hit");
  json with_tools = chat;
  with_tools["tools"] = json::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  with_tools["tool_choice"] = "none";  // rendered, not parsed: the demo model writes no tool calls
  EXPECT_EQ(post(server, "/v1/chat/completions", with_tools).marker, "miss");
}

TEST(E2eSemanticCache, OffUnlessAskedAndOnlyForDeterministicRequests) {
  {
    LiveServer server(exact_config());
    json plain = kCompletion;
    plain.erase("semantic_cache");
    EXPECT_EQ(post(server, "/v1/completions", plain).marker, "");
    EXPECT_EQ(post(server, "/v1/completions", plain).marker, "");  // not stored, not looked up
    json sampled = kCompletion;
    sampled["temperature"] = 0.7;
    const Reply r = post(server, "/v1/completions", sampled);
    EXPECT_EQ(r.marker, "skip; not deterministic (temperature > 0, no seed)");
    json two = kCompletion;
    two["n"] = 2;
    EXPECT_EQ(post(server, "/v1/completions", two).marker, "skip; n or best_of > 1");
    const auto m = server.metrics();
    EXPECT_EQ(m.at("loom:semantic_cache_stores_total"), 0);
  }
  {
    LiveServer server(exact_config("opt_in = false\n"));
    json plain = kCompletion;
    plain.erase("semantic_cache");
    EXPECT_EQ(post(server, "/v1/completions", plain).marker, "miss");
    EXPECT_EQ(post(server, "/v1/completions", plain).marker, "hit");
    EXPECT_EQ(post(server, "/v1/completions", plain, {{kHeader, "off"}}).marker, "");  // opted out
  }
  {
    LiveServer server(loom::test::demo_config());
    const Reply r = post(server, "/v1/completions", kCompletion);
    EXPECT_EQ(r.status, 400u);
    EXPECT_NE(r.body.find("no semantic cache"), std::string::npos) << r.body;
    EXPECT_EQ(post(server, "/v1/completions", kCompletion, {{kHeader, "maybe"}}).status, 400u);
  }
}

TEST(E2eSemanticCache, EmbeddingPluginHitsTheSameQuestionAcrossPromptsButNotTenants) {
  const fs::path dir = fs::temp_directory_path() / ("loom-e2e-sc-bert-" + std::to_string(getpid()));
  fs::remove_all(dir);
  loom::test::tiny_bert::write_dir(dir);
  {
    LiveServer server(loom::test::demo_config() + "[semantic_cache]\nplugin = \"embedding\"\nthreshold = 0.999\n" +
                      "[embedding]\npath = \"" + dir.string() + "\"\n");
    // The BERT lowercases: both questions embed identically, while the story model's prompt
    // tokens differ.
    json a = {{"prompt", "Hello world"}, {"max_tokens", 6}, {"temperature", 0}, {"semantic_cache", true}};
    json b = a;
    b["prompt"] = "HELLO WORLD";
    ASSERT_EQ(post(server, "/v1/completions", a).marker, "miss");
    const Reply hit = post(server, "/v1/completions", b);
    EXPECT_EQ(hit.marker, "hit");
    EXPECT_EQ(hit.parsed()["choices"][0]["text"], post(server, "/v1/completions", a).parsed()["choices"][0]["text"]);
    EXPECT_NEAR(hit.parsed()["semantic_cache"]["similarity"].get<double>(), 1.0, 1e-5);
    json other_tenant = b;
    other_tenant["user"] = "bob";
    EXPECT_EQ(post(server, "/v1/completions", other_tenant).marker, "miss");
    json other_question = a;
    other_question["prompt"] = "the cafe";
    EXPECT_EQ(post(server, "/v1/completions", other_question).marker, "miss");
  }
  fs::remove_all(dir);
}

TEST(E2eSemanticCache, EmbeddingPluginWithoutAnEmbeddingModelIsRefusedAtStart) {
  try {
    LiveServer server(loom::test::demo_config() + "[semantic_cache]\nplugin = \"embedding\"\n");
    FAIL() << "started";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("configure an [embedding] model"), std::string::npos) << e.what();
  }
}

}  // namespace
