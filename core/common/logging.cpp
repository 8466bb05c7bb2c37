#include "core/common/logging.hpp"

#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include "core/common/error.hpp"
#include "core/common/log_sinks.hpp"

namespace loom {

namespace {

// The logger's only sink: it fans out to stderr and to whatever add_log_sink added, under its
// own mutex, so the set of destinations can change while other threads log.
std::shared_ptr<spdlog::sinks::dist_sink_mt>& destinations() {
  static auto dist = [] {
    auto d = std::make_shared<spdlog::sinks::dist_sink_mt>();
    // Logs go to stderr so stdout stays clean for tools that print results (--print-config, ...).
    d->add_sink(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    return d;
  }();
  return dist;
}

}  // namespace

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto l = std::make_shared<spdlog::logger>("loom", destinations());
    // The pattern goes to stderr's sink only; a sink added later keeps the pattern it was given.
    l->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
    spdlog::register_logger(l);
    return l;
  }();
  return *instance;
}

void add_log_sink(std::shared_ptr<spdlog::sinks::sink> sink) {
  logger();  // the stderr sink gets the pattern first
  destinations()->add_sink(std::move(sink));
}

void remove_log_sink(const std::shared_ptr<spdlog::sinks::sink>& sink) {
  destinations()->remove_sink(sink);
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
