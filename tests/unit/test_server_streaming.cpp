// SSE streams of /v1/completions and /v1/chat/completions against a fake engine: framing, one
// chunk per non-empty delta, deltas adding up to the non-streamed text, usage, engine failures,
// and aborting the engine request when the client goes away.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/tokenizer/utf8.hpp"
#include "core/server/http_server.hpp"
#include "tests/unit/fake_engine.hpp"
#include "tests/unit/http_test_client.hpp"

namespace loom {
namespace {

namespace http = boost::beast::http;
using nlohmann::json;
using test::FakeEngine;
using test::HttpTestClient;
using test::sse_data_events;

const std::string kReply = "Hi, w\xC3\xB6rld \xE2\x9C\x93.";  // 15 bytes, 12 characters

class ServerStreaming : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<HttpServer>(engine_, ServerOptions{"127.0.0.1", 0, 2, 1 << 20, ""});
    server_->start();
    client_ = std::make_unique<HttpTestClient>(server_->port());
  }

  // The stream's JSON chunks (checked to be valid UTF-8 JSON), after checking the framing:
  // SSE content type, chunked, and [DONE] last.
  std::vector<json> stream(const std::string& path, const std::string& body) {
    const auto r = client_->post(path, body);
    EXPECT_EQ(r.status, 200u) << r.body;
    EXPECT_EQ(r.header(http::field::content_type), "text/event-stream");
    EXPECT_EQ(r.header(http::field::transfer_encoding), "chunked");
    std::vector<std::string> events = sse_data_events(r.body);
    EXPECT_GE(events.size(), 2u);
    EXPECT_EQ(events.back(), "[DONE]");
    std::vector<json> chunks;
    for (size_t i = 0; i + 1 < events.size(); ++i) {
      EXPECT_TRUE(utf8_is_valid(events[i])) << events[i];
      chunks.push_back(json::parse(events[i]));
    }
    return chunks;
  }

  // Sends a POST /v1/completions without waiting for the answer.
  void send_post(const std::string& body) {
    client_->send_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n" + body);
  }

  FakeEngine engine_{kReply, /*max_model_len=*/64};
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<HttpTestClient> client_;
};

TEST_F(ServerStreaming, CompletionDeltasAddUpToTheNonStreamedText) {
  const std::string plain =
      json::parse(client_->post("/v1/completions", R"({"prompt": "x", "max_tokens": 40})")
                      .body)["choices"][0]["text"];
  ASSERT_EQ(plain, kReply);
  const auto chunks =
      stream("/v1/completions", R"({"prompt": "x", "max_tokens": 40, "stream": true})");
  std::string text;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const json& c = chunks[i];
    SCOPED_TRACE(c.dump());
    EXPECT_EQ(c["object"], "text_completion");
    EXPECT_EQ(c["id"], chunks[0]["id"]);
    EXPECT_EQ(c["model"], "fake-model");
    EXPECT_FALSE(c.contains("usage"));
    const bool last = i + 1 == chunks.size();
    // one chunk per non-empty delta; only the last may be empty, and it carries the finish
    EXPECT_TRUE(last || !c["choices"][0]["text"].get<std::string>().empty());
    EXPECT_EQ(c["choices"][0]["finish_reason"], last ? json("stop") : json(nullptr));
    text += c["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, plain);
  // 12 characters, each completed by one step, then the EOS step with empty text
  EXPECT_EQ(chunks.size(), 13u);
  EXPECT_EQ(chunks.back()["choices"][0]["text"], "");
}

TEST_F(ServerStreaming, LengthFinishRidesOnTheLastDeltaAndUsageComesLast) {
  const auto chunks = stream("/v1/completions", R"({"prompt": "x", "max_tokens": 3,
      "stream": true, "stream_options": {"include_usage": true}})");
  ASSERT_EQ(chunks.size(), 4u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(chunks[i].contains("usage"));
    EXPECT_TRUE(chunks[i]["usage"].is_null());
    EXPECT_EQ(chunks[i]["choices"][0]["text"], kReply.substr(i, 1));
  }
  EXPECT_EQ(chunks[2]["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(chunks[3]["choices"], json::array());
  EXPECT_EQ(chunks[3]["usage"], json::parse(R"({"prompt_tokens": 2, "completion_tokens": 3,
                                                "total_tokens": 5})"));
  EXPECT_EQ(chunks[3]["id"], chunks[0]["id"]);
}

TEST_F(ServerStreaming, ChatStreamOpensWithTheRole) {
  const std::string body = R"({"messages": [{"role": "user", "content": "hey"}], "max_tokens": 40)";
  const json plain = json::parse(client_->post("/v1/chat/completions", body + "}").body);
  const auto chunks = stream("/v1/chat/completions", body + R"(, "stream": true})");
  ASSERT_GE(chunks.size(), 3u);
  EXPECT_EQ(chunks[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(chunks[0]["choices"][0]["delta"], json::parse(R"({"role": "assistant"})"));
  std::string content;
  for (size_t i = 1; i < chunks.size(); ++i) {
    const json& delta = chunks[i]["choices"][0]["delta"];
    if (i + 1 < chunks.size()) {
      EXPECT_FALSE(delta["content"].get<std::string>().empty());
    }
    if (delta.contains("content")) content += delta["content"].get<std::string>();
    EXPECT_FALSE(delta.contains("role"));
  }
  EXPECT_EQ(content, plain["choices"][0]["message"]["content"]);
  EXPECT_EQ(chunks.back()["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(chunks.back()["choices"][0]["delta"], json::object());
}

TEST_F(ServerStreaming, EngineFailureMidStreamSendsAnErrorEventThenDone) {
  engine_.set_step(std::chrono::milliseconds(10));
  send_post(R"({"prompt": "x", "max_tokens": 40, "stream": true})");
  ASSERT_TRUE(FakeEngine::wait_until([&] { return engine_.active() == 1; }));
  engine_.fail_all(FinishReason::kAbort);
  const auto r = client_->read_response();
  const auto events = sse_data_events(r.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  const json err = json::parse(events[events.size() - 2]);
  EXPECT_EQ(err["error"]["message"], "the request was aborted by the server");
  engine_.set_step(std::chrono::microseconds(200));
  EXPECT_EQ(client_->post("/v1/completions", R"({"prompt": "x"})").status, 200u);
}

TEST_F(ServerStreaming, ClientLeavingMidStreamAbortsTheRequest) {
  engine_.set_step(std::chrono::milliseconds(5));
  const std::string body =
      R"({"prompt": "x", "max_tokens": 60, "ignore_eos": true, "stream": true})";
  send_post(body);
  client_->read_raw_until("data: ");
  EXPECT_TRUE(engine_.aborted().empty());
  client_->close();
  ASSERT_TRUE(FakeEngine::wait_until([&] { return engine_.aborted().size() == 1; }));
  EXPECT_EQ(engine_.aborted()[0], 1u);
  EXPECT_TRUE(FakeEngine::wait_until([&] { return engine_.active() == 0; }));
  HttpTestClient next(server_->port());
  EXPECT_EQ(next.post("/v1/completions", R"({"prompt": "x"})").status, 200u);
}

TEST_F(ServerStreaming, ClientLeavingANonStreamedRequestAbortsIt) {
  engine_.set_step(std::chrono::milliseconds(5));
  const std::string body = R"({"prompt": "x", "max_tokens": 60, "ignore_eos": true})";
  send_post(body);
  ASSERT_TRUE(FakeEngine::wait_until([&] { return engine_.active() == 1; }));
  // A reset: with nothing written yet, a FIN alone is a half-close, which is answered.
  client_->reset();
  ASSERT_TRUE(FakeEngine::wait_until([&] { return engine_.aborted().size() == 1; }));
  EXPECT_TRUE(FakeEngine::wait_until([&] { return engine_.active() == 0; }));
}

TEST_F(ServerStreaming, StopAbortsWhatIsStillStreaming) {
  engine_.set_step(std::chrono::milliseconds(5));
  const std::string body =
      R"({"prompt": "x", "max_tokens": 60, "ignore_eos": true, "stream": true})";
  send_post(body);
  client_->read_raw_until("data: ");
  server_->stop(std::chrono::milliseconds(10));
  EXPECT_EQ(engine_.aborted(), std::vector<uint64_t>{1});
  EXPECT_TRUE(client_->wait_closed());
  // outputs the engine still sends after the server is gone are dropped, not delivered
  EXPECT_TRUE(FakeEngine::wait_until([&] { return engine_.active() == 0; }));
  server_.reset();
}

}  // namespace
}  // namespace loom
