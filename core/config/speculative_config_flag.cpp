#include "core/config/speculative_config_flag.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "core/common/error.hpp"
#include "core/config/speculator_config.hpp"

namespace loom {
namespace {

// vLLM's key -> the speculator plugin's key, per method.
const std::vector<std::pair<std::string, std::string>>& plugin_keys(const std::string& method) {
  static const std::vector<std::pair<std::string, std::string>> ngram = {{"prompt_lookup_min", "min_n"},
                                                                        {"prompt_lookup_max", "max_n"}};
  static const std::vector<std::pair<std::string, std::string>> suffix = {
      {"suffix_decoding_max_tree_depth", "max_depth"},
      {"suffix_decoding_min_token_prob", "min_token_prob"},
      {"suffix_decoding_max_cached_requests", "max_cached_requests"}};
  static const std::vector<std::pair<std::string, std::string>> draft = {{"model", "model"},
                                                                        {"quantization", "quantization"}};
  return method == "ngram" ? ngram : method == "suffix" ? suffix : draft;
}

}  // namespace

void apply_speculative_config(Config& config, std::string_view json) {
  const std::string what = "--speculative-config: ";
  const auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) throw Error(what + "expected a JSON object, got " + std::string(json));
  const auto m = j.find("method");
  // As vLLM: a "model" without a method is a draft model.
  if ((m == j.end() && !j.contains("model")) || (m != j.end() && !m->is_string()))
    throw Error(what + "\"method\" is required: \"ngram\", \"suffix\" or \"draft_model\" (or a \"model\")");
  std::string method = m == j.end() ? "draft_model" : m->get<std::string>();
  if (method == "draft") method = "draft_model";
  if (method != "ngram" && method != "suffix" && method != "draft_model")
    throw Error(what + "method \"" + method + "\" has no speculator here (valid: ngram, suffix, draft_model)");
  PluginTable table{method == "draft_model" ? "draft" : method};
  SpeculationConfig spec = config.speculation;
  std::vector<std::string> problems;
  for (const auto& [key, value] : j.items()) {
    if (key == "method") continue;
    if (key == "num_speculative_tokens") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > config_detail::kMaxSpeculativeTokens)
        problems.push_back("\"num_speculative_tokens\" must be an integer in [1, " +
                           std::to_string(config_detail::kMaxSpeculativeTokens) + "], got " + value.dump());
      else
        spec.num_speculative_tokens = value.get<int32_t>();
      continue;
    }
    if (key == "adaptive") {
      if (!value.is_boolean()) problems.push_back("\"adaptive\" must be true or false, got " + value.dump());
      else spec.adaptive = value.get<bool>();
      continue;
    }
    bool known = false;
    for (const auto& [vllm, ours] : plugin_keys(method)) {
      if (key != vllm) continue;
      set_plugin_key(table, ours, value.dump());  // the plugin checks the value at start-up
      known = true;
    }
    if (!known) {
      std::string valid = "method, num_speculative_tokens, adaptive";
      for (const auto& [vllm, ours] : plugin_keys(method)) valid += ", " + vllm;
      problems.push_back("unknown key \"" + key + "\" for method " + method + " (valid: " + valid + ")");
    }
  }
  if (!problems.empty()) {
    std::string message = what;
    for (size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
    throw Error(message);
  }
  config.speculator = table;
  config.speculation = spec;
}

}  // namespace loom
