// One spdlog logger for the whole process; plugins log through the host API into the same sink.
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

namespace loom {

// Sets the level of the process logger from a name: trace, debug, info, warn, error, off.
// Throws loom::Error on an unknown name.
void set_log_level(std::string_view level);

// The process logger ("loom").
spdlog::logger& logger();

}  // namespace loom

#define LOOM_LOG_INFO(...) ::loom::logger().info(__VA_ARGS__)
#define LOOM_LOG_WARN(...) ::loom::logger().warn(__VA_ARGS__)
#define LOOM_LOG_ERROR(...) ::loom::logger().error(__VA_ARGS__)
#define LOOM_LOG_DEBUG(...) ::loom::logger().debug(__VA_ARGS__)
