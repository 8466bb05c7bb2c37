// The request log line: one info line per finished response, carrying the OpenAI `user` (or
// `safety_identifier`), so an operator can tie a request to the client's end user.
#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

#include "core/common/log_sinks.hpp"
#include "core/common/logging.hpp"
#include "core/server/http_server.hpp"
#include "tests/unit/fake_engine.hpp"
#include "tests/unit/http_test_client.hpp"

namespace loom {
namespace {

TEST(ServerRequestLog, UserIsWrittenInTheRequestLogLine) {
  test::FakeEngine engine("ok", 64);
  HttpServer server(engine, ServerOptions{"127.0.0.1", 0, 2, 1 << 20, ""});
  server.start();
  test::HttpTestClient client(server.port());

  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  add_log_sink(sink);
  const auto level = logger().level();
  logger().set_level(spdlog::level::info);
  EXPECT_EQ(client.post("/v1/completions", R"({"prompt": "a", "user": "alice-42"})").status, 200u);
  EXPECT_EQ(client.post("/v1/chat/completions",
                        R"({"messages": [{"role": "user", "content": "x"}], "safety_identifier": "sid-7"})")
                .status,
            200u);
  EXPECT_EQ(client.post("/v1/completions", R"({"prompt": "a"})").status, 200u);
  logger().flush();
  remove_log_sink(sink);
  logger().set_level(level);

  std::vector<std::string> lines;
  std::istringstream in(log.str());
  for (std::string line; std::getline(in, line);)
    if (line.find("prompt + ") != std::string::npos) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u) << log.str();
  EXPECT_NE(lines[0].find("cmpl-"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find(", user alice-42"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("chatcmpl-"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find(", user sid-7"), std::string::npos) << lines[1];
  EXPECT_EQ(lines[2].find("user"), std::string::npos) << lines[2];
}

}  // namespace
}  // namespace loom
