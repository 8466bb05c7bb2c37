// The OpenAI routes over HTTP against a fake engine: every endpoint's answer, what reaches the
// engine, and every bad request answered 400 (naming the field) with the server serving on.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/server/http_server.hpp"
#include "tests/unit/fake_engine.hpp"
#include "tests/unit/http_test_client.hpp"

namespace loom {
namespace {

namespace http = boost::beast::http;
using nlohmann::json;
using test::FakeEngine;
using test::HttpTestClient;

const std::string kReply = "Hi, w\xC3\xB6rld \xE2\x9C\x93.";  // 15 bytes, 12 characters

class ServerOpenAi : public ::testing::Test {
 protected:
  void SetUp() override { start(ServerOptions{"127.0.0.1", 0, 2, 4096, ""}); }
  void start(ServerOptions options) {
    server_.reset();
    server_ = std::make_unique<HttpServer>(engine_, options);
    server_->start();
    client_ = std::make_unique<HttpTestClient>(server_->port());
  }
  json post_ok(const std::string& path, const std::string& body) {
    const auto r = client_->post(path, body);
    EXPECT_EQ(r.status, 200u) << r.body;
    EXPECT_EQ(r.header(http::field::content_type), "application/json");
    return json::parse(r.body);
  }

  FakeEngine engine_{kReply, /*max_model_len=*/64};
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<HttpTestClient> client_;
};

TEST_F(ServerOpenAi, HealthModelsMetrics) {
  auto r = client_->get("/health");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(json::parse(r.body), json::parse(R"({"status": "ok"})"));
  r = client_->get("/v1/models");
  EXPECT_EQ(json::parse(r.body)["data"][0]["id"], "fake-model");
  EXPECT_EQ(json::parse(r.body)["data"][0]["max_model_len"], 64);
  post_ok("/v1/completions", R"({"prompt": "ab", "max_tokens": 3})");
  r = client_->get("/metrics");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.header(http::field::content_type), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(r.body.find("loom:prompt_tokens_total{model_name=\"fake-model\"} 3\n"),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("loom:generation_tokens_total{model_name=\"fake-model\"} 3\n"),
            std::string::npos);
  EXPECT_NE(r.body.find("loom:num_requests_waiting{model_name=\"fake-model\"} 3\n"),
            std::string::npos);
}

TEST_F(ServerOpenAi, CompletionRunsToTheStopAndReportsUsage) {
  const json j = post_ok("/v1/completions",
                         R"({"model": "fake-model", "prompt": "Say hi", "max_tokens": 40})");
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "fake-model");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(j["choices"][0]["text"], kReply);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  // BOS + 6 bytes; 15 reply bytes + EOS
  EXPECT_EQ(j["usage"], json::parse(R"({"prompt_tokens": 7, "completion_tokens": 16,
                                        "total_tokens": 23})"));
}

TEST_F(ServerOpenAi, CompletionPassesSamplingToTheEngine) {
  const json j = post_ok("/v1/completions", R"({"prompt": "ab", "max_tokens": 5,
      "temperature": 0.5, "top_p": 0.9, "top_k": 7, "min_p": 0.05, "seed": 42,
      "stop": ["zz", "y"], "ignore_eos": true, "echo": false, "best_of": 1})");
  EXPECT_EQ(j["choices"][0]["text"], "Hi, w");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  const auto req = engine_.last_request();
  ASSERT_TRUE(req.has_value());
  EXPECT_EQ(req->prompt, (std::vector<int32_t>{256, 'a', 'b'}));
  EXPECT_EQ(req->sampling.max_tokens, 5);
  EXPECT_FLOAT_EQ(req->sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(req->sampling.top_p, 0.9f);
  EXPECT_EQ(req->sampling.top_k, 7);
  EXPECT_FLOAT_EQ(req->sampling.min_p, 0.05f);
  EXPECT_EQ(req->sampling.seed, std::optional<uint64_t>(42));
  EXPECT_EQ(req->sampling.stop, (std::vector<std::string>{"zz", "y"}));
  EXPECT_TRUE(req->sampling.ignore_eos);
}

TEST_F(ServerOpenAi, TokenPromptsAndDefaultMaxTokens) {
  post_ok("/v1/completions", R"({"prompt": [72, 105]})");
  EXPECT_EQ(engine_.last_request()->prompt, (std::vector<int32_t>{72, 105}));  // no BOS added
  EXPECT_EQ(engine_.last_request()->sampling.max_tokens, 16);
  post_ok("/v1/completions", R"({"prompt": [[1, 2, 3]]})");
  EXPECT_EQ(engine_.last_request()->prompt, (std::vector<int32_t>{1, 2, 3}));
  // 56 prompt tokens leave room for 8: the default of 16 shrinks to fit
  post_ok("/v1/completions", json{{"prompt", std::string(55, 'a')}}.dump());
  EXPECT_EQ(engine_.last_request()->sampling.max_tokens, 8);
}

TEST_F(ServerOpenAi, ChatCompletion) {
  const json j = post_ok("/v1/chat/completions", R"({"model": "fake-model", "messages": [
      {"role": "user", "content": "Hi"}, {"role": "system", "content": "S"}]})");
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(j["choices"][0]["message"], json({{"role", "assistant"}, {"content", kReply}}));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  const auto req = engine_.last_request();
  EXPECT_EQ(req->prompt, (std::vector<int32_t>{256, 'S', '\n', 'H', 'i', '\n'}));
  EXPECT_EQ(req->sampling.max_tokens, 64 - 6);  // chat default: all the room left
  EXPECT_EQ(j["usage"]["prompt_tokens"], 6);
}

TEST_F(ServerOpenAi, TokenizeAndDetokenize) {
  json j = post_ok("/tokenize", R"({"prompt": "h\u00e9"})");
  EXPECT_EQ(j, json::parse(R"({"tokens": [256, 104, 195, 169], "count": 4, "max_model_len": 64})"));
  j = post_ok("/tokenize", R"({"text": "h", "add_special": false})");
  EXPECT_EQ(j["tokens"], json::parse("[104]"));
  j = post_ok("/detokenize", R"({"tokens": [104, 195, 169, 257]})");
  EXPECT_EQ(j["prompt"], "h\xC3\xA9");
  // half a character comes back as U+FFFD, not as invalid JSON
  j = post_ok("/detokenize", R"({"tokens": [104, 195]})");
  EXPECT_EQ(j["prompt"], "h\xEF\xBF\xBD");
}

struct BadRequest {
  const char* path;
  std::string body;
  const char* param;    // "" = null
  const char* snippet;  // in error.message
};

TEST_F(ServerOpenAi, BadRequestsAre400NamingTheFieldAndTheServerGoesOn) {
  const BadRequest cases[] = {
      {"/v1/completions", "{\"prompt\": ", "", "not valid JSON"},
      {"/v1/completions", "{\"prompt\": \"\xFF\"}", "", "not valid UTF-8"},
      {"/v1/completions", R"({"prompt": "a", "temperature": "hot"})", "temperature",
       "'temperature' must be a number"},
      {"/v1/completions", R"({"prompt": "a", "top_p": 2})", "top_p", "'top_p' must be in (0, 1]"},
      {"/v1/completions", R"({"prompt": "a", "model": "gpt-4"})", "model",
       "The model 'gpt-4' does not exist"},
      {"/v1/completions", R"({"prompt": "a", "max_tokens": 63})", "max_tokens",
       "maximum context length (max_model_len) is 64 tokens. However, you requested 65 tokens"},
      {"/v1/completions", json{{"prompt", std::string(63, 'a')}}.dump(), "prompt",
       "the prompt ('prompt') has 64 tokens"},
      {"/v1/completions", R"({"prompt": [1, 258]})", "prompt",
       "token id 258 at 'prompt[1]' is outside the vocabulary [0, 258)"},
      {"/v1/completions", R"({"prompt": "a", "n": 0})", "n", "'n' must be in [1, 128], got 0"},
      {"/v1/completions", R"({"prompt": "a", "logprobs": 21})", "logprobs",
       "'logprobs' must be in [0, 20], got 21"},
      {"/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "top_logprobs",
       "'top_logprobs' needs 'logprobs' set to true"},
      {"/v1/completions", R"({"prompt": "a", "frobnicate": 1})", "frobnicate", "unknown field 'frobnicate'"},
      {"/v1/completions", R"({"prompt": ["a", 5]})", "prompt[1]", "must be a string or an array of token ids"},
      {"/v1/chat/completions", R"({"messages": [{"role": "bot", "content": "x"}]})",
       "messages[0].role", "expected one of system, user, assistant"},
      {"/v1/chat/completions", R"({"messages": "hi"})", "messages", "must be an array"},
      {"/v1/chat/completions",
       json{{"messages", {{{"role", "user"}, {"content", std::string(70, 'a')}}}}}.dump(),
       "messages", "the prompt ('messages') has 72 tokens"},
      {"/tokenize", R"({"add_special": true})", "prompt", "'prompt' (or 'text') is required"},
      {"/detokenize", R"({"tokens": [1, 999]})", "tokens[1]", "'tokens[1]' must be in [0, 257]"},
      {"/detokenize", R"({"tokens": "abc"})", "tokens", "must be an array of token ids"},
  };
  for (const BadRequest& c : cases) {
    SCOPED_TRACE(c.body);
    const auto r = client_->post(c.path, c.body);
    ASSERT_EQ(r.status, 400u) << r.body;
    const json err = json::parse(r.body)["error"];
    EXPECT_EQ(err["type"], "invalid_request_error");
    EXPECT_EQ(err["param"].is_null() ? "" : err["param"].get<std::string>(), c.param);
    EXPECT_NE(err["message"].get<std::string>().find(c.snippet), std::string::npos)
        << err["message"];
    // the same connection serves a good request next
    EXPECT_EQ(client_->post("/v1/completions", R"({"prompt": "a", "max_tokens": 1})").status, 200u);
  }
  EXPECT_EQ(json::parse(client_->post("/v1/completions", R"({"prompt": "a", "model": "x"})")
                            .body)["error"]["code"],
            "model_not_found");
}

TEST_F(ServerOpenAi, EngineRefusalIsForwardedAs400) {
  engine_.set_submit_error("prompt needs 999 KV blocks but the pool has 40");
  const auto r = client_->post("/v1/completions", R"({"prompt": "a"})");
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(json::parse(r.body)["error"]["message"],
            "prompt needs 999 KV blocks but the pool has 40");
  engine_.set_submit_error("");
  EXPECT_EQ(client_->post("/v1/completions", R"({"prompt": "a"})").status, 200u);
}

TEST_F(ServerOpenAi, EngineErrorAfterSubmitIs500) {
  engine_.set_step(std::chrono::milliseconds(20));
  client_->send_raw(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n"
      "{\"prompt\": \"a\"}");
  ASSERT_TRUE(FakeEngine::wait_until([&] { return engine_.active() == 1; }));
  engine_.fail_all(FinishReason::kError, "device lost");
  const auto r = client_->read_response();
  EXPECT_EQ(r.status, 500u);
  EXPECT_EQ(json::parse(r.body)["error"]["message"], "generation failed: device lost");
  EXPECT_EQ(json::parse(r.body)["error"]["type"], "server_error");
}

TEST_F(ServerOpenAi, UnknownPathWrongMethodAndLargeBody) {
  auto r = client_->get("/v1/nothing");
  EXPECT_EQ(r.status, 404u);
  EXPECT_EQ(json::parse(r.body)["error"]["message"], "no route for /v1/nothing");
  r = client_->get("/v1/completions");
  EXPECT_EQ(r.status, 405u);
  EXPECT_EQ(r.header(http::field::allow), "POST");
  EXPECT_EQ(json::parse(r.body)["error"]["type"], "invalid_request_error");
  r = client_->post("/v1/completions", std::string(5000, ' '));
  EXPECT_EQ(r.status, 413u);
  EXPECT_NE(json::parse(r.body)["error"]["message"].get<std::string>().find("4096 bytes"),
            std::string::npos);
}

TEST_F(ServerOpenAi, ApiKeyGuardsTheV1Routes) {
  start(ServerOptions{"127.0.0.1", 0, 1, 4096, "s3cret"});
  auto r = client_->get("/v1/models");
  EXPECT_EQ(r.status, 401u);
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "invalid_api_key");
  EXPECT_EQ(
      client_->post("/v1/completions", R"({"prompt": "a"})", {{"Authorization", "Bearer wrong!"}})
          .status,
      401u);
  EXPECT_EQ(client_->get("/v1/models", {{"Authorization", "Bearer s3cret"}}).status, 200u);
  EXPECT_EQ(
      client_->post("/v1/completions", R"({"prompt": "a"})", {{"Authorization", "Bearer s3cret"}})
          .status,
      200u);
  EXPECT_EQ(client_->get("/health").status, 200u);  // probes need no key
}

TEST_F(ServerOpenAi, HealthIs503WhileStopping) {
  // stop() first flips /health; a request pending at that moment finishes within the drain.
  engine_.set_step(std::chrono::milliseconds(5));
  HttpTestClient probe(server_->port());
  client_->send_raw(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n"
      "{\"prompt\": \"a\"}");
  ASSERT_TRUE(FakeEngine::wait_until([&] { return engine_.active() == 1; }));
  std::thread stopper([&] { server_->stop(std::chrono::seconds(5)); });
  EXPECT_TRUE(FakeEngine::wait_until([&] { return probe.get("/health").status == 503u; }));
  const auto r = client_->read_response();
  stopper.join();
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(json::parse(r.body)["choices"][0]["text"], kReply);
  EXPECT_TRUE(engine_.aborted().empty());
}

}  // namespace
}  // namespace loom
