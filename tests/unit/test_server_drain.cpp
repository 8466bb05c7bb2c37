// SIGTERM with streams in flight (issue row 9): HttpServer::stop() waits [server] drain_timeout
// for them; those still running then end with an error event and [DONE], never a bare cut.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/server/http_server.hpp"
#include "tests/unit/fake_engine.hpp"
#include "tests/unit/http_test_client.hpp"

namespace loom {
namespace {

using test::FakeEngine;
using test::HttpTestClient;

constexpr int kStreams = 20;

// Runs kStreams streaming completions, stops the server once all have started, and returns each
// stream's SSE data events.
std::vector<std::vector<std::string>> stop_with_streams(HttpServer& server, FakeEngine& engine,
                                                        std::optional<std::chrono::milliseconds> drain) {
  std::vector<std::vector<std::string>> events(kStreams);
  std::vector<std::thread> clients;
  for (int i = 0; i < kStreams; ++i) {
    clients.emplace_back([&, i] {
      HttpTestClient client(server.port(), "127.0.0.1", std::chrono::seconds(30));
      const auto r = client.post("/v1/completions", R"({"prompt": "hi", "stream": true, "max_tokens": 40})");
      events[i] = test::sse_data_events(r.body);
    });
  }
  EXPECT_TRUE(FakeEngine::wait_until([&] { return engine.submitted() == kStreams; }));
  if (drain) server.stop(*drain);
  else server.stop();
  for (auto& t : clients) t.join();
  return events;
}

ServerOptions options(int32_t drain_s) {
  ServerOptions o{"127.0.0.1", 0, 2, 1 << 20, ""};
  o.limits.drain_timeout = drain_s;
  return o;
}

TEST(ServerDrain, LongEnoughDrainLetsEveryStreamComplete) {
  FakeEngine engine("twenty bytes of text", 64, std::chrono::milliseconds(20));  // ~0.4 s a stream
  HttpServer server(engine, options(10));
  server.start();
  const auto events = stop_with_streams(server, engine, std::nullopt);  // the configured 10 s
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_GE(events[i].size(), 2u) << i;
    EXPECT_EQ(events[i].back(), "[DONE]") << i;
    EXPECT_NE(events[i][events[i].size() - 2].find("\"finish_reason\":\"stop\""), std::string::npos) << i;
  }
}

TEST(ServerDrain, StreamsCutAfterTheDrainEndWithAnErrorEventAndDone) {
  FakeEngine engine("twenty bytes of text", 64, std::chrono::milliseconds(200));  // 4 s a stream
  HttpServer server(engine, options(10));
  server.start();
  const auto events = stop_with_streams(server, engine, std::chrono::milliseconds(100));
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_GE(events[i].size(), 2u) << i;
    EXPECT_EQ(events[i].back(), "[DONE]") << i;
    EXPECT_NE(events[i][events[i].size() - 2].find("server_shutting_down"), std::string::npos)
        << events[i][events[i].size() - 2];
  }
  EXPECT_TRUE(FakeEngine::wait_until([&] { return engine.aborted().size() == kStreams; }));
}

// [server] request_timeout (deliverable 5): past it a stream ends with a request_timeout error
// event and [DONE], a whole response is a 504, and the engine request is aborted.
TEST(ServerRequestTimeout, EndsTheRequestWithAClearError) {
  FakeEngine engine("twenty bytes of text", 64, std::chrono::milliseconds(200));  // 4 s a request
  ServerOptions o = options(10);
  o.limits.request_timeout = 1;
  HttpServer server(engine, o);
  server.start();
  HttpTestClient client(server.port(), "127.0.0.1", std::chrono::seconds(30));
  const auto t0 = std::chrono::steady_clock::now();
  const auto whole = client.post("/v1/completions", R"({"prompt": "hi", "max_tokens": 40})");
  EXPECT_EQ(whole.status, 504u);
  EXPECT_NE(whole.body.find("request_timeout"), std::string::npos) << whole.body;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  const auto stream = client.post("/v1/completions", R"({"prompt": "hi", "max_tokens": 40, "stream": true})");
  const auto events = test::sse_data_events(stream.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_NE(events[events.size() - 2].find("request_timeout"), std::string::npos) << events[events.size() - 2];
  EXPECT_TRUE(FakeEngine::wait_until([&] { return engine.aborted().size() == 2; }));
}

}  // namespace
}  // namespace loom
