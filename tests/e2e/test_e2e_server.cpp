// The acceptance checks of the foundation, through HTTP against the real engine and demo model.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <thread>

#include "core/formats/gguf_file.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "e2e/e2e_server.hpp"

namespace loom::test {
namespace {

using nlohmann::json;

std::vector<int32_t> expected_greedy_ids() {
  std::ifstream in(std::string(LOOM_TEST_DATA) + "/greedy_from_bos_256.ids");
  std::vector<int32_t> ids{std::istream_iterator<int32_t>(in), std::istream_iterator<int32_t>()};
  return ids;
}

class E2eServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new LiveServer(demo_config()); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static LiveServer* server_;
};
LiveServer* E2eServer::server_ = nullptr;

TEST_F(E2eServer, GreedyFromBosMatchesLlama2cReference) {
  const std::vector<int32_t> ids = expected_greedy_ids();
  ASSERT_EQ(ids.size(), 256u);
  const std::string expected_text = server_->engine().tokenizer().decode(ids);
  ASSERT_EQ(expected_text.rfind("Once upon a time, there was a little girl named Lily.", 0), 0u);

  const HttpResponse r = server_->post(
      "/v1/completions", {{"model", "stories260K"}, {"prompt", ""}, {"temperature", 0}, {"max_tokens", 256}});
  ASSERT_EQ(r.status, 200u) << r.body;
  const json body = json::parse(r.body);
  EXPECT_EQ(body["choices"][0]["text"], expected_text);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["prompt_tokens"], 1);  // BOS alone
  EXPECT_EQ(body["usage"]["completion_tokens"], 256);
}

TEST_F(E2eServer, GreedyFromTokenIdsEqualsGreedyFromText) {
  const json by_ids = json::parse(server_->post("/v1/completions", {{"prompt", json::array({1})},
                                                                    {"temperature", 0}, {"max_tokens", 40}}).body);
  const json by_text = json::parse(server_->post("/v1/completions", {{"prompt", ""},
                                                                     {"temperature", 0}, {"max_tokens", 40}}).body);
  EXPECT_EQ(by_ids["choices"][0]["text"], by_text["choices"][0]["text"]);
}

std::string stream_text(const LiveServer& server, const std::string& route, json request, bool* saw_usage) {
  request["stream"] = true;
  request["stream_options"] = {{"include_usage", true}};
  const HttpResponse r = server.post(route, request);
  EXPECT_EQ(r.status, 200u) << r.body;
  std::string text;
  bool done = false;
  for (const std::string& data : sse_data_events(r.body)) {
    EXPECT_FALSE(done) << "event after [DONE]";
    if (data == "[DONE]") {
      done = true;
      continue;
    }
    const json chunk = json::parse(data);  // throws on invalid UTF-8 or a half character
    if (chunk.contains("usage") && !chunk["usage"].is_null() && chunk["choices"].empty()) {
      *saw_usage = true;
      continue;
    }
    const json& choice = chunk["choices"][0];
    if (choice.contains("text")) text += choice["text"].get<std::string>();
    if (choice.contains("delta") && choice["delta"].contains("content")) {
      text += choice["delta"]["content"].get<std::string>();
    }
  }
  EXPECT_TRUE(done);
  return text;
}

TEST_F(E2eServer, StreamedDeltasEqualNonStreamedText) {
  for (const char* route : {"/v1/completions", "/v1/chat/completions"}) {
    json request = {{"temperature", 0.9}, {"top_p", 0.95}, {"seed", 1234}, {"max_tokens", 120}};
    if (std::string(route) == "/v1/completions") {
      request["prompt"] = "Once upon a time, a little dog";
    } else {
      request["messages"] = json::array({{{"role", "user"}, {"content", "Tell me about Lily."}}});
    }
    const HttpResponse whole = server_->post(route, request);
    ASSERT_EQ(whole.status, 200u) << whole.body;
    const json body = json::parse(whole.body);
    const std::string expected = std::string(route) == "/v1/completions"
                                     ? body["choices"][0]["text"].get<std::string>()
                                     : body["choices"][0]["message"]["content"].get<std::string>();
    bool saw_usage = false;
    EXPECT_EQ(stream_text(*server_, route, request, &saw_usage), expected) << route;
    EXPECT_TRUE(saw_usage) << route;
  }
}

TEST_F(E2eServer, SameSeedSameTextAndStopStringsEndBeforeTheStop) {
  const json request = {{"prompt", "Lily"}, {"temperature", 1.0}, {"seed", 99}, {"max_tokens", 60}};
  const json a = json::parse(server_->post("/v1/completions", request).body);
  const json b = json::parse(server_->post("/v1/completions", request).body);
  EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]);

  const std::string greedy = json::parse(server_->post("/v1/completions", {{"prompt", ""}, {"temperature", 0},
                                                                           {"max_tokens", 64}}).body)["choices"][0]["text"];
  const size_t cut = greedy.find("Lily");
  ASSERT_NE(cut, std::string::npos);
  const json stopped = json::parse(server_->post("/v1/completions", {{"prompt", ""}, {"temperature", 0},
                                                                     {"max_tokens", 64}, {"stop", "Lily"}}).body);
  EXPECT_EQ(stopped["choices"][0]["text"], greedy.substr(0, cut));
  EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");
}

TEST_F(E2eServer, ConcurrentRequestsGiveTheSameTextAsAlone) {
  const std::vector<std::string> prompts = {"", "Once upon a time", "The cat", "Tom and Sue went to the park"};
  std::vector<std::string> alone;
  for (const auto& p : prompts) {
    alone.push_back(json::parse(server_->post("/v1/completions", {{"prompt", p}, {"temperature", 0},
                                                                  {"max_tokens", 50}}).body)["choices"][0]["text"]);
  }
  std::vector<std::string> together(prompts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < prompts.size(); ++i) {
    threads.emplace_back([&, i] {
      together[i] = json::parse(server_->post("/v1/completions", {{"prompt", prompts[i]}, {"temperature", 0},
                                                                  {"max_tokens", 50}}).body)["choices"][0]["text"];
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(together, alone);
}

TEST_F(E2eServer, BadRequestsGet400NamingTheFieldAndServingGoesOn) {
  struct Case {
    std::string body;
    std::string field;  // must appear in error.message
  };
  const std::vector<Case> cases = {
      {R"({"prompt": "hi", "max_tokens": 5)", "JSON"},
      {"{\"prompt\": \"bad \xff\xfe utf8\", \"max_tokens\": 5}", "UTF-8"},
      {R"({"prompt": 42, "max_tokens": 5})", "prompt"},
      {R"({"prompt": "hi", "max_tokens": 0})", "max_tokens"},
      {R"({"prompt": "hi", "max_tokens": "five"})", "max_tokens"},
      {R"({"prompt": "hi", "max_tokens": 5, "temperature": -1})", "temperature"},
      {R"({"prompt": "hi", "max_tokens": 5, "top_p": 0})", "top_p"},
      {R"({"prompt": "hi", "max_tokens": 5, "n": 0})", "n"},
      {R"({"prompt": "hi", "max_tokens": 5, "logprobs": 30})", "logprobs"},
      {R"({"prompt": "hi", "max_tokens": 5, "stop": 7})", "stop"},
      {R"({"model": "gpt-4", "prompt": "hi", "max_tokens": 5})", "model"},
      {R"({"prompt": "hi", "max_tokens": 100000})", "max_tokens"},
      {R"({"prompt": [1, 2, 99999], "max_tokens": 5})", "prompt"},
      {R"({"messages": "hi", "max_tokens": 5})", "messages"},
  };
  for (const Case& c : cases) {
    const std::string route = c.body.find("messages") != std::string::npos ? "/v1/chat/completions" : "/v1/completions";
    const HttpResponse r = server_->client().post(route, c.body);
    EXPECT_EQ(r.status, 400u) << c.body << " -> " << r.body;
    json err;
    ASSERT_NO_THROW(err = json::parse(r.body)) << r.body;
    ASSERT_TRUE(err.contains("error")) << r.body;
    EXPECT_NE(err["error"]["message"].get<std::string>().find(c.field), std::string::npos)
        << c.body << " -> " << r.body;
    const HttpResponse ok = server_->post("/v1/completions", {{"prompt", "hi"}, {"max_tokens", 3}});
    EXPECT_EQ(ok.status, 200u) << "after " << c.body << ": " << ok.body;
  }
}

TEST_F(E2eServer, ModelsAndHealthAndTokenize) {
  const json models = json::parse(server_->client().get("/v1/models").body);
  EXPECT_EQ(models["data"][0]["id"], "stories260K");
  EXPECT_EQ(server_->client().get("/health").status, 200u);
  const json tok = json::parse(server_->post("/tokenize", {{"prompt", "Once upon a time"}}).body);
  const json detok = json::parse(server_->post("/detokenize", {{"tokens", tok["tokens"]}}).body);
  EXPECT_EQ(detok["prompt"], "Once upon a time");
}

}  // namespace
}  // namespace loom::test
