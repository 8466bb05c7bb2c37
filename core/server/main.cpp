// loom-server: load the config, build the engine (model + plugins), serve the OpenAI API until
// SIGINT/SIGTERM. Any start-up refusal is one clear line on stderr and exit status 1.
#include <csignal>
#include <cstdio>
#include <iostream>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "core/common/error.hpp"
#include "core/common/logging.hpp"
#include "core/config/cli.hpp"
#include "core/config/config.hpp"
#include "core/engine/engine.hpp"
#include "core/server/http_server.hpp"

int main(int argc, char** argv) {
  using namespace loom;
  CliOptions cli;
  try {
    cli = parse_cli(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "loom-server: " << e.what() << "\n" << cli_usage();
    return 2;
  }
  if (cli.help) {
    std::cout << cli_usage();
    return 0;
  }
  if (cli.version) {
    std::cout << "loom-server 0.1.0\n";
    return 0;
  }
  try {
    Config config = load_effective_config(cli);
    set_log_level(config.log_level);
    if (cli.print_config) {
      std::cout << to_toml(config);
      return 0;
    }
    Engine engine(config);
    ServerOptions options;
    options.host = config.server.host;
    options.port = config.server.port;
    options.threads = config.server.http_threads;
    options.max_body_bytes = config.server.max_body_bytes;
    options.api_key = config.server.api_key;
    HttpServer server(engine, options);
    server.start();
    LOOM_LOG_INFO("serving '{}' on http://{}:{}", engine.model_info().name, config.server.host,
                  server.port());

    boost::asio::io_context signals_io;
    boost::asio::signal_set signals(signals_io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code&, int sig) {
      LOOM_LOG_INFO("signal {}: shutting down", sig);
    });
    signals_io.run();
    server.stop();
    engine.shutdown();
    return 0;
  } catch (const std::exception& e) {
    LOOM_LOG_ERROR("{}", e.what());
    return 1;
  }
}
