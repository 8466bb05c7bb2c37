// One request's way back to its client. A route handler gets the request and an HttpExchange;
// it answers at once (reply) or later, possibly as a stream, from callbacks posted onto the
// connection's strand through poster(). Every HttpExchange method runs on that strand (the
// handler itself does).
//
// Ownership: the connection owns the exchange until the response is complete or the client is
// gone; the exchange owns the handler's state (hold()). Work that outlives the handler keeps only
// weak references to both, and the StrandPoster, which an engine thread may keep after the
// connection and even the server are gone.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace loom {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;

struct HttpReply {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra fields, e.g. Allow
};

class StrandPoster {
 public:
  virtual ~StrandPoster() = default;
  // Any thread: queues fn to run on the connection's strand. Never blocks on I/O; once the
  // connection is gone, fn is dropped unrun.
  virtual void post(std::function<void()> fn) = 0;
  // Any thread: fn runs on the strand once `delay` has passed (dropped if the connection is gone).
  // Dropping the returned handle, on the strand, cancels it (so a long timeout holds nothing
  // once the work it guards is over).
  virtual std::shared_ptr<void> post_after(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
};

class HttpExchange {
 public:
  virtual ~HttpExchange() = default;

  virtual std::shared_ptr<StrandPoster> poster() = 0;

  // Keeps `state` alive until the response is complete or the client is gone.
  virtual void hold(std::shared_ptr<void> state) = 0;

  // The whole response. Ignored once the client is gone or a response was started.
  virtual void reply(HttpReply reply) = 0;
  // A header field for the response not started yet (reply or begin_stream), whichever it is
  // (e.g. CORS, the semantic cache's verdict); ignored once one has.
  virtual void add_header(std::string name, std::string value) { (void)name, (void)value; }

  // A streamed response: headers now, then write() pieces as they come, then end_stream().
  // HTTP/1.1 uses chunked transfer; an HTTP/1.0 client gets raw bytes and a close.
  virtual void begin_stream(unsigned status, std::string content_type) = 0;
  virtual void write(std::string data) = 0;
  virtual void end_stream() = 0;

  // True once the client went away (EOF/error on the socket, a failed write, server stop)
  // before the response was complete.
  virtual bool client_gone() const = 0;
  // fn runs once, on the strand, when the client goes away before the response is complete; at
  // once if it already has.
  virtual void on_client_gone(std::function<void()> fn) = 0;
  // fn runs once, on the strand, when the server stops (its drain time over) while this response
  // is still pending. It should end the response at once, as a failure the client can read (a
  // stream: an error event, then its end); the connection is closed soon after either way.
  virtual void on_server_stop(std::function<void()> fn) = 0;
};

}  // namespace loom
