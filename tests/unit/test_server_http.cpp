// The HTTP transport alone (HttpListener + HttpRouter) with test routes: routing, keep-alive,
// pipelining, 100-continue, HTTP/1.0, body limit, malformed requests, chunked streams fed from
// another thread, noticing a client that leaves, and stop().
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/common/error.hpp"
#include "core/server/http_listener.hpp"
#include "tests/unit/http_test_client.hpp"

namespace loom {
namespace {

namespace http = boost::beast::http;
using test::HttpTestClient;

class ServerHttp : public ::testing::Test {
 protected:
  void SetUp() override {
    auto router = std::make_shared<HttpRouter>([](unsigned status, const std::string& message) {
      return HttpReply{status, "application/json", "{\"error\":\"" + message + "\"}", {}};
    });
    router->add(http::verb::get, "/echo", [](const HttpRequest& r, auto ex) {
      ex->reply(HttpReply{200, "text/plain", "target=" + std::string(r.target()), {}});
    });
    router->add(http::verb::post, "/echo", [](const HttpRequest& r, auto ex) {
      ex->reply(HttpReply{200, "text/plain", r.body(), {}});
    });
    router->add(http::verb::get, "/throw",
                [](const HttpRequest&, auto) -> void { throw std::runtime_error("boom"); });
    // Never answers; records when its client goes away.
    router->add(http::verb::get, "/hang", [this](const HttpRequest&, auto ex) {
      ++hanging_;
      ex->on_client_gone([this] { ++gone_; });
    });
    // Streams three pieces written from another thread through the poster.
    router->add(http::verb::get, "/stream", [](const HttpRequest&, auto ex) {
      ex->begin_stream(200, "text/plain");
      std::thread([poster = ex->poster(), weak = std::weak_ptr<HttpExchange>(ex)] {
        for (int i = 0; i < 3; ++i) {
          poster->post([weak, i] {
            if (auto e = weak.lock()) e->write("piece" + std::to_string(i) + ";");
          });
        }
        poster->post([weak] {
          if (auto e = weak.lock()) e->end_stream();
        });
      }).detach();
    });
    HttpListenerOptions options{"127.0.0.1", 0, 2, 1024};
    listener_ = std::make_unique<HttpListener>(options, router);
    listener_->start();
  }

  std::unique_ptr<HttpListener> listener_;
  std::atomic<int> hanging_{0};
  std::atomic<int> gone_{0};
};

template <typename Pred>
bool eventually(Pred pred) {
  for (int i = 0; i < 2500 && !pred(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return pred();
}

TEST_F(ServerHttp, RoutesByMethodAndPath) {
  EXPECT_NE(listener_->port(), 0);
  HttpTestClient client(listener_->port());
  auto r = client.get("/echo?x=1");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, "target=/echo?x=1");
  r = client.post("/echo", "body!");
  EXPECT_EQ(r.body, "body!");
  r = client.get("/nope");
  EXPECT_EQ(r.status, 404u);
  EXPECT_EQ(r.body, "{\"error\":\"no route for /nope\"}");
  r = client.request(http::verb::delete_, "/echo");
  EXPECT_EQ(r.status, 405u);
  EXPECT_EQ(r.header(http::field::allow), "GET, POST");
  EXPECT_NE(r.body.find("method DELETE is not allowed on /echo"), std::string::npos);
  r = client.get("/throw");
  EXPECT_EQ(r.status, 500u);
  EXPECT_NE(r.body.find("boom"), std::string::npos);
  EXPECT_EQ(client.get("/echo").status, 200u);  // same connection, still serving
}

TEST_F(ServerHttp, PipelinedRequestsAreAnsweredInOrder) {
  HttpTestClient client(listener_->port());
  client.send_raw(
      "GET /echo?a HTTP/1.1\r\nHost: x\r\n\r\n"
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
      "GET /echo?c HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(client.read_response().body, "target=/echo?a");
  EXPECT_EQ(client.read_response().body, "abc");
  EXPECT_EQ(client.read_response().body, "target=/echo?c");
}

TEST_F(ServerHttp, BodyOverTheLimitIs413AndTheServerGoesOn) {
  HttpTestClient client(listener_->port());
  const auto r = client.post("/echo", std::string(1025, 'x'));
  EXPECT_EQ(r.status, 413u);
  EXPECT_NE(r.body.find("larger than the limit of 1024 bytes"), std::string::npos);
  EXPECT_EQ(r.header(http::field::connection), "close");
  HttpTestClient next(listener_->port());
  EXPECT_EQ(next.post("/echo", std::string(1024, 'y')).body, std::string(1024, 'y'));
}

TEST_F(ServerHttp, Expect100ContinueGetsAnInterimResponse) {
  HttpTestClient client(listener_->port());
  client.send_raw(
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  const std::string interim = client.read_raw_until("\r\n\r\n");
  EXPECT_EQ(interim, "HTTP/1.1 100 Continue\r\n\r\n");
  client.send_raw("hello");
  EXPECT_EQ(client.read_response().body, "hello");
}

TEST_F(ServerHttp, MalformedRequestIs400AndClose) {
  HttpTestClient client(listener_->port());
  client.send_raw("GET /echo HTTP/1.1\r\nHost: x\r\nContent-Length: zz\r\n\r\n");
  const auto r = client.read_response();
  EXPECT_EQ(r.status, 400u);
  EXPECT_NE(r.body.find("malformed HTTP request"), std::string::npos);
  EXPECT_TRUE(client.wait_closed());
}

TEST_F(ServerHttp, StreamIsChunkedAndTheConnectionIsReused) {
  HttpTestClient client(listener_->port());
  auto r = client.get("/stream");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.header(http::field::transfer_encoding), "chunked");
  EXPECT_EQ(r.body, "piece0;piece1;piece2;");
  EXPECT_EQ(client.get("/echo").status, 200u);
}

TEST_F(ServerHttp, Http10StreamEndsWithClose) {
  HttpTestClient client(listener_->port());
  client.send_raw("GET /stream HTTP/1.0\r\n\r\n");
  std::string all = client.read_raw_until("piece2;");
  EXPECT_EQ(all.rfind("HTTP/1.0 200 OK\r\n", 0), 0u);
  EXPECT_EQ(all.find("chunked"), std::string::npos);
  EXPECT_TRUE(client.wait_closed());
}

TEST_F(ServerHttp, ClientLeavingAPendingRequestIsNoticed) {
  HttpTestClient client(listener_->port());
  client.send_raw("GET /hang HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(eventually([&] { return hanging_ == 1; }));
  EXPECT_EQ(listener_->active_requests(), 1);
  EXPECT_EQ(gone_, 0);
  // A reset: a FIN alone is a half-close, answered (test_server_hardening), not a departure.
  client.reset();
  EXPECT_TRUE(eventually([&] { return gone_ == 1; }));
  EXPECT_TRUE(eventually([&] { return listener_->active_requests() == 0; }));
}

TEST_F(ServerHttp, StopEndsPendingRequestsAndRefusesNewConnections) {
  HttpTestClient client(listener_->port());
  client.send_raw("GET /hang HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(eventually([&] { return hanging_ == 1; }));
  const uint16_t port = listener_->port();
  listener_->stop(std::chrono::milliseconds(20));
  EXPECT_EQ(gone_, 1);
  EXPECT_TRUE(client.wait_closed());
  EXPECT_ANY_THROW(HttpTestClient late(port));
  listener_->stop();  // idempotent
}

TEST(ServerHttpBind, PortInUseNamesTheAddress) {
  auto router = std::make_shared<HttpRouter>([](unsigned s, const std::string& m) {
    return HttpReply{s, "text/plain", m, {}};
  });
  HttpListener first(HttpListenerOptions{"127.0.0.1", 0, 1, 1024}, router);
  first.start();
  HttpListener second(HttpListenerOptions{"127.0.0.1", first.port(), 1, 1024}, router);
  try {
    second.start();
    ADD_FAILURE() << "bound a port in use";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(first.port())),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom
