// loom-server: load the config, build the engine (model + plugins), serve the OpenAI API until
// SIGINT/SIGTERM. Any start-up refusal is one clear line on stderr and exit status 1; a bad
// command line is one line and exit status 2.
#include <csignal>
#include <cstdio>
#include <iostream>

#include "core/common/command_line.hpp"
#include "core/common/error.hpp"
#include "core/common/logging.hpp"
#include "core/config/cli.hpp"
#include "core/config/config.hpp"
#include "core/engine/engine.hpp"
#include "core/server/chat_prompt.hpp"
#include "core/server/http_server.hpp"
#include "core/server/kv_memory_budget.hpp"
#include "core/server/signal_watch.hpp"

int main(int argc, char** argv) {
  using namespace loom;
  CliOptions cli;
  try {
    cli = parse_cli(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "loom-server: " << e.what() << "\nRun with --help for more information.\n";
    return cli::kUsageExitStatus;
  }
  if (cli.help) {
    std::cout << cli_usage();
    return 0;
  }
  if (cli.version) {
    std::cout << "loom-server 0.1.0\n";
    return 0;
  }
  SignalWatch signals;  // before the engine starts any thread
  try {
    Config config = load_effective_config(cli);
    set_log_level(config.log_level);
    // Before --print-config, so that it shows the size the server would run with.
    if (auto why = apply_kv_memory_budget(config)) LOOM_LOG_INFO("{}", *why);
    if (cli.print_config) {
      std::cout << to_toml(config);
      return 0;
    }
    Engine engine(config);
    ServerOptions options = server_options(config.server);
    if (!config.model.chat_template.empty()) {
      options.chat_template =
          load_chat_template_file(config.model.chat_template, engine.chat_template(), engine.tokenizer());
      LOOM_LOG_INFO("chat template: {} (instead of the model's)", config.model.chat_template);
    }
    options.chat_output.reasoning_parser = config.model.reasoning_parser;
    options.chat_output.reasoning_tags = ReasoningTags{config.model.reasoning_start, config.model.reasoning_end};
    options.chat_output.tool_parser = config.model.tool_parser;
    HttpServer server(engine, options);
    server.start();
    LOOM_LOG_INFO("serving '{}' on http://{}:{}", engine.model_info().name, config.server.host,
                  server.port());
    signals.serving();
    signals.wait();
    server.stop();  // drains for [server] drain_timeout
    engine.shutdown();
    return 0;
  } catch (const std::exception& e) {
    LOOM_LOG_ERROR("{}", e.what());
    return 1;
  }
}
