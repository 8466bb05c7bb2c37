// A live loom-server inside the test process: Engine + HttpServer from a TOML config text, on an
// ephemeral port, with a client and a /metrics reader.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/common/logging.hpp"
#include "core/config/config.hpp"
#include "core/engine/engine.hpp"
#include "core/server/http_server.hpp"
#include "unit/http_test_client.hpp"

namespace loom::test {

// The demo config with the model path made absolute; `extra` is appended (later keys of a table
// given twice are an error in TOML, so pass whole tables that the base does not set).
inline std::string demo_config(const std::string& tables = R"(
[scheduler]
plugin = "fcfs"
[cache]
plugin = "contiguous"
kv_memory = "16MiB"
)",
                               const std::string& model = std::string(LOOM_TEST_DATA) + "/stories260K.gguf") {
  return "[model]\npath = \"" + model + "\"\nname = \"stories260K\"\n[server]\nport = 0\n" +
         "[runtime]\nthreads = 2\nseed = 7\n[logging]\nlevel = \"warn\"\n" + tables;
}

// Polls `pred` until it holds or `limit` passes. The engine publishes its counters after the step
// that answered a request, so a test reads them only once they have caught up.
template <class Pred>
bool wait_for(Pred pred, std::chrono::seconds limit = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

class LiveServer {
 public:
  explicit LiveServer(const std::string& toml) {
    Config config = parse_config(toml, std::string(LOOM_SOURCE_DIR) + "/configs/test.toml");
    set_log_level(config.log_level);
    engine_ = std::make_unique<Engine>(config);
    ServerOptions options = server_options(config.server);  // the [server] table of the text
    options.port = 0;
    options.chat_output.reasoning_parser = config.model.reasoning_parser;
    options.chat_output.reasoning_tags = ReasoningTags{config.model.reasoning_start, config.model.reasoning_end};
    options.chat_output.tool_parser = config.model.tool_parser;
    server_ = std::make_unique<HttpServer>(*engine_, options);
    server_->start();
  }
  ~LiveServer() {
    server_->stop(std::chrono::milliseconds(500));
    engine_->shutdown();
  }

  uint16_t port() const { return server_->port(); }
  Engine& engine() { return *engine_; }
  HttpServer& server() { return *server_; }
  HttpTestClient client() const { return HttpTestClient(port()); }

  HttpResponse post(const std::string& target, const nlohmann::json& body) const {
    return client().post(target, body.dump());
  }

  // Every sample of /metrics as name -> value (labels ignored).
  std::map<std::string, double> metrics() const {
    const HttpResponse r = client().get("/metrics");
    std::map<std::string, double> out;
    std::istringstream in(r.body);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const auto space = line.rfind(' ');
      std::string name = line.substr(0, space);
      if (const auto brace = name.find('{'); brace != std::string::npos) name.resize(brace);
      out[name] = std::stod(line.substr(space + 1));
    }
    return out;
  }

 private:
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<HttpServer> server_;
};

}  // namespace loom::test
