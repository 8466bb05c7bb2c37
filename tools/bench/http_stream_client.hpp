// The HTTP side of the benchmark (Boost.Beast over plain TCP, one connection per request): one
// streaming POST whose body pieces are handed, stamped with their arrival time, to a
// StreamRecorder; and a plain GET for discovery (/v1/models).
#pragma once

#include <utility>  // before awaitable.hpp: Asio 1.74 uses std::exchange without including it

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <string>

#include "tools/bench/request_record.hpp"

namespace loom::bench {

using BenchClock = std::chrono::steady_clock;

struct ServerTarget {
  std::string host = "127.0.0.1";
  std::string port = "8080";
  std::string base_path;  // prefix of every path, from the base URL ("" or "/something")
  std::string api_key;    // sent as "Authorization: Bearer"; empty: none
  std::chrono::seconds timeout{600};  // longest wait for any one read, write or connect
};

// "http://host[:port][/path]" -> target (port 80 when absent). Throws loom::Error naming the URL.
ServerTarget parse_base_url(const std::string& url);

// Sends `body` to base_path + path and records the response into `record` (start, token times,
// usage, end, success or error). Times are seconds since `origin`. Never throws for network or
// HTTP problems: they become the record's error.
boost::asio::awaitable<void> stream_request(const ServerTarget& target, std::string path,
                                            std::string body, RequestRecord& record,
                                            BenchClock::time_point origin);

// A blocking GET; returns the body of a 200 response. Throws loom::Error with the URL and the
// status or network error otherwise.
std::string http_get(const ServerTarget& target, const std::string& path);

}  // namespace loom::bench
