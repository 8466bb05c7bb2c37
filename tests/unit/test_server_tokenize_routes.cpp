// /tokenize, /detokenize and /tokenizer_info over HTTP against the fake engine's byte tokenizer (each byte one id,
// BOS = 256): both peers' request shapes, pieces, chat bodies and bad requests.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/server/http_server.hpp"
#include "tests/unit/fake_engine.hpp"
#include "tests/unit/http_test_client.hpp"

namespace loom {
namespace {

using nlohmann::json;
using test::FakeEngine;
using test::HttpTestClient;

class ServerTokenize : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<HttpServer>(engine_, ServerOptions{"127.0.0.1", 0, 2, 4096, ""});
    server_->start();
    client_ = std::make_unique<HttpTestClient>(server_->port());
  }
  json post(const std::string& path, const std::string& body, unsigned want = 200) {
    const auto r = client_->post(path, body);
    EXPECT_EQ(r.status, want) << r.body;
    return json::parse(r.body);
  }

  FakeEngine engine_{"x", /*max_model_len=*/64};
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<HttpTestClient> client_;
};

TEST_F(ServerTokenize, LlamaCppShape) {
  EXPECT_EQ(post("/tokenize", R"({"content": "ab"})")["tokens"], json::parse("[256, 97, 98]"));
  EXPECT_EQ(post("/tokenize", R"({"content": "ab", "add_special": false})")["tokens"], json::parse("[97, 98]"));
  const json pieces = post("/tokenize", R"({"content": "a", "with_pieces": true})")["tokens"];
  EXPECT_EQ(pieces, json::parse(R"([{"id": 256, "piece": "<s>"}, {"id": 97, "piece": "a"}])"));
  EXPECT_EQ(post("/detokenize", R"({"tokens": [104, 105]})")["content"], "hi");
}

TEST_F(ServerTokenize, VllmShape) {
  const json r = post("/tokenize", R"({"prompt": "abc", "add_special_tokens": false, "model": "fake-model"})");
  EXPECT_EQ(r["tokens"], json::parse("[97, 98, 99]"));
  EXPECT_EQ(r["count"], 3);
  EXPECT_EQ(r["max_model_len"], 64);
  EXPECT_EQ(post("/detokenize", R"({"tokens": [104, 105]})")["prompt"], "hi");
}

TEST_F(ServerTokenize, PieceThatIsNotUtf8IsGivenAsBytes) {
  // "é" is two bytes, so each of its byte tokens alone is not valid UTF-8.
  const json pieces = post("/tokenize", R"({"content": "\u00e9", "add_special": false, "with_pieces": true})")["tokens"];
  EXPECT_EQ(pieces, json::parse(R"([{"id": 195, "piece": [195]}, {"id": 169, "piece": [169]}])"));
  // Half a character decodes to U+FFFD rather than breaking the JSON reply.
  EXPECT_EQ(post("/detokenize", R"({"tokens": [104, 195]})")["content"], "h\xEF\xBF\xBD");
}

TEST_F(ServerTokenize, ChatBodyIsRenderedLikeChatCompletions) {
  // The fake engine has no template: the fallback format is "content\n" per message, plus BOS.
  const json r = post("/tokenize", R"({"messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_EQ(r["tokens"], json::parse("[256, 104, 105, 10]"));
}

// vLLM's GET /tokenizer_info: the special tokens as text, what encoding adds, the context length;
// no template on the fake engine, so null.
TEST_F(ServerTokenize, TokenizerInfoDescribesTheServedTokenizer) {
  const auto r = client_->get("/tokenizer_info");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(json::parse(r.body), json::parse(R"({"tokenizer_class": "LoomGgufTokenizer", "bos_token": "<s>",
      "eos_token": "</s>", "pad_token": null, "unk_token": null, "add_bos_token": true, "add_eos_token": false,
      "model_max_length": 64, "vocab_size": 258, "chat_template": null})"));
}

TEST_F(ServerTokenize, BadRequestsNameTheField) {
  EXPECT_EQ(post("/tokenize", R"({})", 400)["error"]["param"], "prompt");
  EXPECT_EQ(post("/tokenize", R"({"content": "a", "prompt": "b"})", 400)["error"]["param"], "content");
  EXPECT_EQ(post("/tokenize", R"({"content": 5})", 400)["error"]["param"], "content");
  EXPECT_EQ(post("/tokenize", R"({"content": "a", "model": "other"})", 400)["error"]["code"], "model_not_found");
  EXPECT_EQ(post("/detokenize", R"({"tokens": "ab"})", 400)["error"]["param"], "tokens");
  EXPECT_EQ(post("/detokenize", R"({"tokens": [999]})", 400)["error"]["param"], "tokens[0]");
  EXPECT_EQ(post("/detokenize", R"({"tokens": [-1]})", 400)["error"]["param"], "tokens[0]");
}

}  // namespace
}  // namespace loom
