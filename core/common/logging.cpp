#include "core/common/logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include "core/common/error.hpp"

namespace loom {

spdlog::logger& logger() {
  // Logs go to stderr so stdout stays clean for tools that print results (--print-config, ...).
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto l = spdlog::stderr_color_mt("loom");
    l->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
    return l;
  }();
  return *instance;
}

void set_log_level(std::string_view level) {
  const auto parsed = spdlog::level::from_str(std::string(level));
  // from_str maps unknown names to "off"; only accept "off" when it was asked for.
  if (parsed == spdlog::level::off && level != "off") {
    throw Error("unknown log level '" + std::string(level) +
                "' (valid: trace, debug, info, warn, error, off)");
  }
  logger().set_level(parsed);
}

}  // namespace loom
