#include "core/config/config_rules.hpp"

#include <array>
#include <limits>

namespace loom::config_rules {

std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

std::string range_problem(int64_t value, int64_t lo, int64_t hi) {
  if (hi == std::numeric_limits<int64_t>::max() || hi == std::numeric_limits<int32_t>::max()) {
    return "must be >= " + std::to_string(lo) + ", got " + std::to_string(value);
  }
  return "must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " +
         std::to_string(value);
}

std::optional<std::string> check_device(std::string_view device) {
  if (device == "cpu") return std::nullopt;
  bool cuda = device == "cuda";
  constexpr std::string_view kCudaPrefix = "cuda:";
  if (device.starts_with(kCudaPrefix)) {
    const std::string_view index = device.substr(kCudaPrefix.size());
    cuda = !index.empty() && index.size() <= 4;
    for (char c : index) cuda = cuda && c >= '0' && c <= '9';
  }
  if (cuda) {
    return quoted(device) +
           " cannot run: this build has no CUDA kernels and no plugin that runs on CUDA; only "
           "\"cpu\" runs today";
  }
  return "must be \"cpu\" (the only device that runs today), got " + quoted(device);
}

std::optional<std::string> check_metrics_prefix(std::string_view prefix) {
  if (prefix == "loom" || prefix == "vllm") return std::nullopt;
  return "must be \"loom\" or \"vllm\", got " + quoted(prefix);
}

std::optional<std::string> check_memory_utilization(double fraction) {
  if (fraction > 0.0 && fraction <= 1.0) return std::nullopt;
  return "must be a fraction in (0, 1], got " + std::to_string(fraction);
}

std::optional<std::string> check_kv_dtype(std::string_view kv_dtype) {
  static constexpr std::array<std::string_view, 5> kValid = {"f32", "f16", "bf16", "int8", "fp8_e4m3"};
  for (std::string_view v : kValid) {
    if (kv_dtype == v) return std::nullopt;
  }
  return "must be one of f32, f16, bf16, int8, fp8_e4m3; got " + quoted(kv_dtype);
}

std::optional<std::string> check_log_level(std::string_view level) {
  static constexpr std::array<std::string_view, 6> kValid = {"trace", "debug", "info",
                                                             "warn",  "error", "off"};
  for (std::string_view v : kValid) {
    if (level == v) return std::nullopt;
  }
  return "must be one of " + std::string(kLogLevels) + "; got " + quoted(level);
}

std::optional<std::string> check_plugin_name(std::string_view name) {
  // The name becomes part of a file name (libloom-<kind>-<name>.so), so no separators or dots.
  bool ok = !name.empty();
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '_' || c == '-');
  }
  if (ok) return std::nullopt;
  return "must be a plugin name of letters, digits, '_' or '-', got " + quoted(name);
}

}  // namespace loom::config_rules
