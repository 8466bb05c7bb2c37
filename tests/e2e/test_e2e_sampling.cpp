// n > 1 and logprobs through the OpenAI routes on the real engine. The oracle for n: with seed s,
// choice i equals an n = 1 request seeded s + i, for every cache (contiguous cannot fork and runs
// n requests; paged and radix fork the prompt's KV and copy blocks on write), streamed or not.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "e2e/e2e_server.hpp"

namespace loom::test {
namespace {

using nlohmann::json;

std::string cache_tables(const std::string& cache) {
  return "[scheduler]\nplugin = \"fcfs\"\n[cache]\nplugin = \"" + cache +
         "\"\nkv_memory = \"16MiB\"\n" + (cache == "contiguous" ? "" : "block_size = 4\n");
}

json post_ok(const LiveServer& server, const std::string& route, const json& body) {
  const HttpResponse r = server.post(route, body);
  EXPECT_EQ(r.status, 200u) << r.body;
  return json::parse(r.body);
}

// The streamed chunks of one request, merged per choice: text, finish_reason, and the logprobs
// entries (chat: content; completions: token_logprobs) in order.
struct Streamed {
  std::map<int, std::string> text;
  std::map<int, std::string> finish;
  std::map<int, json> logprobs;
  json usage;
};

Streamed stream(const LiveServer& server, const std::string& route, json body) {
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  const HttpResponse r = server.post(route, body);
  EXPECT_EQ(r.status, 200u) << r.body;
  Streamed out;
  for (const std::string& data : sse_data_events(r.body)) {
    if (data == "[DONE]") break;
    const json chunk = json::parse(data);
    if (!chunk["usage"].is_null()) out.usage = chunk["usage"];
    for (const json& c : chunk["choices"]) {
      const int i = c["index"].get<int>();
      out.text[i] += c.contains("delta") ? c["delta"].value("content", "") : c["text"].get<std::string>();
      if (!c["finish_reason"].is_null()) out.finish[i] = c["finish_reason"];
      if (c["logprobs"].is_null()) continue;
      json& merged = out.logprobs[i];
      const json& part = c.contains("delta") ? c["logprobs"]["content"] : c["logprobs"]["token_logprobs"];
      if (merged.is_null()) merged = json::array();
      for (const json& e : part) merged.push_back(e);
    }
  }
  return out;
}

class E2eChoices : public ::testing::TestWithParam<std::string> {};

TEST_P(E2eChoices, CompletionChoiceIEqualsASingleRequestSeededSPlusI) {
  LiveServer server(demo_config(cache_tables(GetParam())));
  const json base = {{"prompt", "Once upon a time, there was a little"}, {"max_tokens", 12},
                     {"temperature", 1.0}, {"ignore_eos", true}};
  json multi = base;
  multi["n"] = 3;
  multi["seed"] = 41;
  const json j = post_ok(server, "/v1/completions", multi);
  ASSERT_EQ(j["choices"].size(), 3u);
  int completion_tokens = 0;
  std::vector<std::string> singles;
  for (int i = 0; i < 3; ++i) {
    json one = base;
    one["seed"] = 41 + i;
    const json s = post_ok(server, "/v1/completions", one);
    singles.push_back(s["choices"][0]["text"]);
    completion_tokens += s["usage"]["completion_tokens"].get<int>();
    EXPECT_EQ(j["choices"][i]["index"], i);
    EXPECT_EQ(j["choices"][i]["text"], singles.back()) << "choice " << i;
    EXPECT_EQ(j["choices"][i]["finish_reason"], "length");
  }
  EXPECT_NE(singles[0], singles[1]);  // different seeds: different stories
  EXPECT_EQ(j["usage"]["completion_tokens"], completion_tokens);
  EXPECT_EQ(j["usage"]["prompt_tokens"], post_ok(server, "/v1/completions", base)["usage"]["prompt_tokens"]);

  // Streamed: the same texts per index, one finish per choice, usage summed.
  const Streamed st = stream(server, "/v1/completions", multi);
  ASSERT_EQ(st.text.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(st.text.at(i), singles[static_cast<size_t>(i)]) << "streamed choice " << i;
    EXPECT_EQ(st.finish.at(i), "length");
  }
  EXPECT_EQ(st.usage["completion_tokens"], completion_tokens);
}

TEST_P(E2eChoices, ChatChoicesStopOnTheirOwnAndMatchSingles) {
  LiveServer server(demo_config(cache_tables(GetParam())));
  // EOS allowed: choices end at different lengths, each with its own finish_reason.
  const json base = {{"messages", {{{"role", "user"}, {"content", "Tell me a story"}}}},
                     {"max_tokens", 40}, {"temperature", 1.0}};
  json multi = base;
  multi["n"] = 4;
  multi["seed"] = 7;
  const json j = post_ok(server, "/v1/chat/completions", multi);
  ASSERT_EQ(j["choices"].size(), 4u);
  const Streamed st = stream(server, "/v1/chat/completions", multi);
  int total = 0;
  for (int i = 0; i < 4; ++i) {
    json one = base;
    one["seed"] = 7 + i;
    const json s = post_ok(server, "/v1/chat/completions", one);
    total += s["usage"]["completion_tokens"].get<int>();
    EXPECT_EQ(j["choices"][i]["message"]["content"], s["choices"][0]["message"]["content"]) << i;
    EXPECT_EQ(j["choices"][i]["finish_reason"], s["choices"][0]["finish_reason"]) << i;
    EXPECT_EQ(st.text.at(i), s["choices"][0]["message"]["content"].get<std::string>()) << i;
    EXPECT_EQ(st.finish.at(i), s["choices"][0]["finish_reason"].get<std::string>()) << i;
  }
  EXPECT_EQ(j["usage"]["completion_tokens"], total);
}

INSTANTIATE_TEST_SUITE_P(Caches, E2eChoices, ::testing::Values("contiguous", "paged", "radix"));

TEST(E2eLogprobs, CompletionLogprobsAreTheModelsDistribution) {
  LiveServer server(demo_config());
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0},
                     {"ignore_eos", true}, {"logprobs", 3}};
  const json j = post_ok(server, "/v1/completions", body);
  const json& lp = j["choices"][0]["logprobs"];
  ASSERT_TRUE(lp.is_object()) << j.dump();
  ASSERT_EQ(lp["tokens"].size(), 6u);
  ASSERT_EQ(lp["token_logprobs"].size(), 6u);
  ASSERT_EQ(lp["top_logprobs"].size(), 6u);
  ASSERT_EQ(lp["text_offset"].size(), 6u);
  std::string joined;
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(lp["text_offset"][i].get<size_t>(), joined.size());
    joined += lp["tokens"][i].get<std::string>();
    const json& top = lp["top_logprobs"][i];
    ASSERT_EQ(top.size(), 3u);  // greedy: the sampled token is the best, already among the 3
    double best = -1e9, mass = 0;
    for (const auto& [token, value] : top.items()) {
      best = std::max(best, value.get<double>());
      mass += std::exp(value.get<double>());
      EXPECT_LE(value.get<double>(), 0.0);
    }
    EXPECT_LE(mass, 1.0 + 1e-6);
    // Greedy picks the most likely token: its logprob is the top one, under its own name.
    EXPECT_DOUBLE_EQ(lp["token_logprobs"][i].get<double>(), best);
    EXPECT_DOUBLE_EQ(top.at(lp["tokens"][i].get<std::string>()).get<double>(), best);
  }
  EXPECT_EQ(joined, j["choices"][0]["text"]);

  // Logprobs do not depend on temperature (raw logits), and leave the text alone.
  json hot = body;
  hot["temperature"] = 1.5;
  hot["seed"] = 3;
  hot["logprobs"] = 0;
  const json h = post_ok(server, "/v1/completions", hot);
  const json& hlp = h["choices"][0]["logprobs"];
  ASSERT_EQ(hlp["top_logprobs"].size(), 6u);
  EXPECT_EQ(hlp["top_logprobs"][0].size(), 1u);  // logprobs 0: the sampled token alone
  hot.erase("logprobs");
  EXPECT_EQ(post_ok(server, "/v1/completions", hot)["choices"][0]["text"], h["choices"][0]["text"]);
  EXPECT_TRUE(post_ok(server, "/v1/completions", hot)["choices"][0]["logprobs"].is_null());
}

TEST(E2eLogprobs, ChatLogprobsStreamedEqualNonStreamed) {
  LiveServer server(demo_config());
  const json body = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 8},
                     {"temperature", 0.8}, {"seed", 5}, {"ignore_eos", true},
                     {"logprobs", true}, {"top_logprobs", 2}};
  const json j = post_ok(server, "/v1/chat/completions", body);
  const json& content = j["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 8u) << j.dump();
  for (const json& e : content) {
    const std::string token = e["token"];
    ASSERT_EQ(e["top_logprobs"].size(), 2u);
    EXPECT_GE(e["top_logprobs"][0]["logprob"].get<double>(), e["top_logprobs"][1]["logprob"].get<double>());
    EXPECT_GE(e["top_logprobs"][0]["logprob"].get<double>(), e["logprob"].get<double>());
    std::string bytes;
    for (const json& b : e["bytes"]) bytes.push_back(static_cast<char>(b.get<int>()));
    if (token.rfind("bytes:", 0) != 0) {
      EXPECT_EQ(bytes, token);
    }
  }
  const Streamed st = stream(server, "/v1/chat/completions", body);
  EXPECT_EQ(st.text.at(0), j["choices"][0]["message"]["content"].get<std::string>());
  EXPECT_EQ(st.logprobs.at(0), content);
}

TEST(E2eLogprobs, OutOfRangeValuesAre400sNamingTheField) {
  LiveServer server(demo_config());
  const json chat = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
  json c = chat;
  c["logprobs"] = true;
  c["top_logprobs"] = 21;
  HttpResponse r = server.post("/v1/chat/completions", c);
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "top_logprobs");
  r = server.post("/v1/completions", {{"prompt", "a"}, {"logprobs", 21}});
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "logprobs");
  r = server.post("/v1/completions", {{"prompt", "a"}, {"n", 0}});
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "n");
}

}  // namespace
}  // namespace loom::test
