// The value rules of the core config, shared by the TOML parser (which adds positions), by
// check_config and by the command line, so a value means the same wherever it comes from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace loom::config_rules {

inline constexpr int64_t kMaxPort = 65535;
inline constexpr int64_t kMinHttpThreads = 1;
inline constexpr int64_t kMaxHttpThreads = 256;
inline constexpr int64_t kMinBodyBytes = 1024;
inline constexpr int64_t kMaxRuntimeThreads = 1024;  // runtime.threads; start-up also caps it at the cores
inline constexpr int64_t kMaxHeadTopK = 1024;        // runtime.head_top_k
inline constexpr std::string_view kLogLevels = "trace, debug, info, warn, error, off";

// "must be in lo..hi, got v" (or "must be >= lo, got v" when hi is the type's maximum).
std::string range_problem(int64_t value, int64_t lo, int64_t hi);

// Each returns the problem with the value, or nothing when it is valid.
// Only "cpu" runs today: "cuda"/"cuda:N" are refused saying what is missing (DESIGN.md §5: a
// device with no plugin that runs on it is refused, never silently replaced by the CPU).
std::optional<std::string> check_device(std::string_view device);
std::optional<std::string> check_metrics_prefix(std::string_view prefix);
// A fraction in (0, 1].
std::optional<std::string> check_memory_utilization(double fraction);
std::optional<std::string> check_log_level(std::string_view level);
std::optional<std::string> check_plugin_name(std::string_view name);
std::optional<std::string> check_kv_dtype(std::string_view kv_dtype);

// A quoted value for messages: "abc" with quotes and backslashes escaped.
std::string quoted(std::string_view text);

}  // namespace loom::config_rules
