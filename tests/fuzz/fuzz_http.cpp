// The HTTP/1.x request side of the transport: any bytes written on one connection (pipelined
// requests, bad framing, chunked bodies, 100-continue, HTTP/1.0, huge or broken headers), then a
// half-close. The listener is the server's own (HttpListener, HttpSession, HttpRouter) with
// routes that echo, stream from another thread and throw, so the fuzzer reaches the parser, the
// pipelining queue, chunked writes and the error paths. Findings besides the sanitizers': the
// server not closing the connection within 10 s of the half-close (a hang), a reply that does
// not start with a status line, or a session still alive 5 s after its client left (a leak).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/server/http_listener.hpp"

namespace {

namespace http = boost::beast::http;
using namespace std::chrono_literals;

loom::HttpListener* g_listener = nullptr;

void start_listener() {
  auto router = std::make_shared<loom::HttpRouter>([](unsigned status, const std::string& message) {
    return loom::HttpReply{status, "application/json", "{\"error\":\"" + message + "\"}", {}};
  });
  router->add(http::verb::get, "/echo", [](const loom::HttpRequest& r, auto ex) {
    ex->reply(loom::HttpReply{200, "text/plain", std::string(r.target()), {}});
  });
  router->add(http::verb::post, "/echo", [](const loom::HttpRequest& r, auto ex) {
    ex->reply(loom::HttpReply{200, "text/plain", r.body(), {}});
  });
  router->add(http::verb::get, "/throw",
              [](const loom::HttpRequest&, auto) -> void { throw std::runtime_error("boom"); });
  router->add(http::verb::post, "/stream", [](const loom::HttpRequest& r, auto ex) {
    ex->begin_stream(200, "text/event-stream");
    std::thread([poster = ex->poster(), weak = std::weak_ptr<loom::HttpExchange>(ex),
                 body = r.body()] {
      for (size_t i = 0; i < 3; ++i) {
        poster->post([weak, piece = body.substr(0, i * 7)] {
          if (auto e = weak.lock()) e->write("data: " + piece + "\n\n");
        });
      }
      poster->post([weak] {
        if (auto e = weak.lock()) e->end_stream();
      });
    }).detach();
  });
  loom::HttpListenerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.threads = 2;
  options.max_body_bytes = 4096;  // inputs are at most -max_len bytes; small enough to hit 413
  options.header_timeout = 5s;
  options.body_timeout = 5s;
  options.idle_timeout = 5s;
  options.max_connections = 64;
  g_listener = new loom::HttpListener(options, router);  // lives for the process
  g_listener->start();
}

// connect() that survives signals: libFuzzer's own timers (SIGALRM for -timeout) interrupt
// blocking calls, and an interrupted connect goes on in the background, so its outcome is read
// from SO_ERROR once the socket is writable. Returns 0 or the errno of the failure.
int connect_once(int fd, const sockaddr_in& addr) {
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return 0;
  if (errno != EINTR) return errno;
  pollfd pending{fd, POLLOUT, 0};
  while (::poll(&pending, 1, -1) < 0) {
    if (errno != EINTR) return errno;
  }
  int error = 0;
  socklen_t length = sizeof error;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) return errno;
  return error;
}

int connect_to_server() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) std::abort();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(g_listener->port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // Over a thousand connections a second can still run the loopback out of ephemeral ports (the
  // abortive close below leaves no TIME_WAIT, but the server may be the one that closed first):
  // then wait for ports to come back rather than report the harness's limit as a finding.
  for (int attempt = 0;; ++attempt) {
    const int error = connect_once(fd, addr);
    if (error == 0) break;
    if (error != EADDRNOTAVAIL || attempt == 600) {
      std::fprintf(stderr, "fuzz_http: connect to the listener failed: %s\n", std::strerror(error));
      std::abort();
    }
    std::this_thread::sleep_for(100ms);
  }
  timeval tv{1, 0};  // each recv waits at most 1 s; the deadline below counts them
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

void finding(const char* what) {
  std::fprintf(stderr, "fuzz_http: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  start_listener();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = connect_to_server();
  // The server may answer and close before everything is written (a fatal parse error); a
  // short write then is its right, not a finding.
  size_t sent = 0;
  while (sent < size) {
    const ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;  // a fuzzer timer's signal, not the server
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string reply;
  char buffer[4096];
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n > 0) {
      reply.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) break;  // EOF or reset
    if (std::chrono::steady_clock::now() > deadline) finding("no EOF 10 s after the client's half-close");
  }
  // Everything was read: an abortive close (RST) frees both ends at once, no TIME_WAIT.
  const linger abort_close{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort_close, sizeof abort_close);
  ::close(fd);
  if (!reply.empty() && reply.rfind("HTTP/1.", 0) != 0) finding("a reply that is not an HTTP status line");
  // Sessions end on their strands after the socket closes; give them a moment, then a leak.
  const auto leak_deadline = std::chrono::steady_clock::now() + 5s;
  while (g_listener->connections() != 0 || g_listener->active_requests() != 0) {
    if (std::chrono::steady_clock::now() > leak_deadline) finding("a session or request outlived its connection");
    std::this_thread::sleep_for(100us);
  }
  return 0;
}
