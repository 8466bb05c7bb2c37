// Block-pool cache config parsing. Unknown keys are errors, and every problem is reported at once
// so a user fixes the table in one go.
#include "kv_pool_config.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

#include "loom/sdk_core.hpp"

namespace loom::kv_pool_config {

int64_t parse_byte_size(const std::string& text) {
  size_t pos = 0;
  while (pos < text.size() && (std::isdigit(static_cast<unsigned char>(text[pos])) || text[pos] == '.')) ++pos;
  const std::string number = text.substr(0, pos);
  // Digits with at most one dot, and at least one digit.
  if (number.empty() || number == "." || number.find('.') != number.rfind('.')) return -1;
  double value = 0;
  try {
    value = std::stod(number);
  } catch (const std::exception&) {
    return -1;
  }
  while (pos < text.size() && text[pos] == ' ') ++pos;
  std::string unit;
  for (; pos < text.size(); ++pos) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[pos])));
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1.0},          {"b", 1.0},
      {"kb", 1e3},        {"mb", 1e6},
      {"gb", 1e9},        {"tb", 1e12},
      {"kib", 0x1p10},    {"mib", 0x1p20},
      {"gib", 0x1p30},    {"tib", 0x1p40},
  };
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    const double bytes = std::floor(value * scale);
    if (!(bytes >= 0) || bytes > 0x1p62) return -1;
    return static_cast<int64_t>(bytes);
  }
  return -1;
}

Config parse_config(const char* config_json, const std::string& who) {
  const std::string text = config_json == nullptr ? "" : config_json;
  nlohmann::json j = nlohmann::json::object();
  if (!text.empty()) {
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      throw sdk::ConfigError(who + ": config is not valid JSON: " + e.what());
    }
  }
  if (!j.is_object()) throw sdk::ConfigError(who + ": config must be a JSON object");

  Config cfg;
  std::vector<std::string> problems;
  bool has_memory = false, has_blocks = false;
  for (const auto& [key, value] : j.items()) {
    if (key == "kv_memory") {
      has_memory = true;
      int64_t bytes = -1;
      if (value.is_number_integer()) bytes = value.get<int64_t>();
      else if (value.is_string()) bytes = parse_byte_size(value.get<std::string>());
      if (bytes <= 0)
        problems.push_back("kv_memory must be a positive byte count or a size like \"64MiB\" or \"1.5GB\", got " +
                           value.dump());
      else cfg.kv_memory = bytes;
    } else if (key == "num_blocks") {
      has_blocks = true;
      if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > INT32_MAX)
        problems.push_back("num_blocks must be a positive integer, got " + value.dump());
      else cfg.num_blocks = value.get<int64_t>();
    } else if (key == "block_size") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > 65536)
        problems.push_back("block_size must be an integer in [1, 65536], got " + value.dump());
      else cfg.block_size = value.get<int32_t>();
    } else if (key == "enable_prefix_caching") {
      if (!value.is_boolean()) problems.push_back("enable_prefix_caching must be true or false, got " + value.dump());
      else cfg.enable_prefix_caching = value.get<bool>();
    } else if (key == "check_invariants") {
      if (!value.is_boolean()) problems.push_back("check_invariants must be true or false, got " + value.dump());
      else cfg.check_invariants = value.get<bool>();
    } else {
      problems.push_back("unknown key \"" + key +
                         "\" (valid: kv_memory, num_blocks, block_size, enable_prefix_caching, check_invariants)");
    }
  }
  if (has_memory && has_blocks) problems.push_back("set kv_memory or num_blocks, not both");
  if (!problems.empty()) {
    std::string message;
    for (const auto& p : problems) message += (message.empty() ? who + ": " : std::string("; ")) + p;
    throw sdk::ConfigError(message);
  }
  return cfg;
}

void check_kv_dtype(const loom_cache_create_args& args, const std::string& who) {
  switch (args.kv_dtype) {
    case LOOM_DTYPE_F32:
    case LOOM_DTYPE_F16:
    case LOOM_DTYPE_BF16:
    case LOOM_DTYPE_I8:
    case LOOM_DTYPE_FP8_E4M3: return;
    default:
      throw sdk::Error(LOOM_ERR_UNSUPPORTED, who + ": kv_dtype " + std::to_string(args.kv_dtype) +
                                                 " is not supported (f32, f16, bf16, int8, fp8_e4m3)");
  }
}

int32_t pool_blocks(const loom_cache_create_args& args, const Config& cfg, const std::string& who) {
  int64_t blocks = cfg.num_blocks;
  if (blocks == 0) {
    if (args.bytes_per_token <= 0)
      throw sdk::Error(LOOM_ERR_INVALID_ARGUMENT, who + ": bytes_per_token must be positive");
    const bool has_extra = args.struct_size >= offsetof(loom_cache_create_args, bytes_per_block_extra) +
                                                   sizeof(args.bytes_per_block_extra);
    const int64_t extra = has_extra ? std::max<int64_t>(0, args.bytes_per_block_extra) : 0;
    blocks = cfg.kv_memory / (static_cast<int64_t>(cfg.block_size) * args.bytes_per_token + extra);
    if (blocks < 1)
      throw sdk::ConfigError(who + ": kv_memory " + std::to_string(cfg.kv_memory) + " bytes holds no block of " +
                             std::to_string(cfg.block_size) + " tokens x " + std::to_string(args.bytes_per_token) +
                             " bytes per token" + (extra > 0 ? " + " + std::to_string(extra) + " bytes of scales" : ""));
  }
  return static_cast<int32_t>(std::min<int64_t>(blocks, INT32_MAX));
}

}  // namespace loom::kv_pool_config
