#include "core/server/generation_params.hpp"

#include <algorithm>
#include <exception>
#include <limits>
#include <string>

#include "core/server/api_error.hpp"

namespace loom {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// A value checked > 0 as a double stays > 0 as a float: 1e-300 becomes the smallest normal float
// instead of 0.0f, which the sampler and the penalties would refuse (or divide by).
float positive_float(double v) { return std::max(static_cast<float>(v), std::numeric_limits<float>::min()); }

void read_stream_options(const Json& body, GenerationParams& out) {
  const auto it = body.find("stream_options");
  if (it == body.end() || it->is_null()) return;
  if (!it->is_object()) {
    throw bad_field("stream_options",
                    "'stream_options' must be an object, got " + json_type_text(*it));
  }
  out.include_usage =
      read_bool(*it, "include_usage", "stream_options.include_usage").value_or(false);
}

void read_logprobs(const Json& body, bool chat, SamplingParams& s) {
  if (!chat) {
    if (auto v = read_int(body, "logprobs", "logprobs", 0, kMaxLogprobs)) s.logprobs = static_cast<int32_t>(*v);
    return;
  }
  const bool on = read_bool(body, "logprobs", "logprobs").value_or(false);
  const auto top = read_int(body, "top_logprobs", "top_logprobs", 0, kMaxLogprobs);
  if (top && !on) {
    throw bad_field("top_logprobs", "'top_logprobs' needs 'logprobs' set to true");
  }
  if (on) s.logprobs = static_cast<int32_t>(top.value_or(0));
}

void read_logit_bias(const Json& body, LogitsProcessing& p) {
  const auto it = body.find("logit_bias");
  if (it == body.end() || it->is_null()) return;
  if (!it->is_object()) {
    throw bad_field("logit_bias", "'logit_bias' must be an object mapping token ids to biases, got " +
                                      json_type_text(*it));
  }
  if (it->size() > kMaxLogitBias) {
    throw bad_field("logit_bias", "'logit_bias' has " + std::to_string(it->size()) + " entries; at most " +
                                      std::to_string(kMaxLogitBias) + " are allowed");
  }
  for (const auto& [key, value] : it->items()) {
    const std::string field = "logit_bias." + key;
    // Keys are decimal token ids, as OpenAI's tokenizer numbers them.
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(key, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (key.empty() || used != key.size() || id < 0 || id > kInt32Max) {
      throw bad_field("logit_bias", "'logit_bias' key '" + key + "' is not a token id (a non-negative integer)");
    }
    if (!value.is_number()) {
      throw bad_field("logit_bias", "'" + field + "' must be a number, got " + json_type_text(value));
    }
    const double bias = value.get<double>();
    if (!(bias >= -100.0 && bias <= 100.0)) {
      throw bad_field("logit_bias", "'" + field + "' is " + std::to_string(bias) + "; biases must be in [-100, 100]");
    }
    p.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(bias));
  }
}

void read_processing(const Json& body, LogitsProcessing& p) {
  if (auto v = read_number(body, "presence_penalty", "presence_penalty", -2.0, 2.0)) {
    p.presence_penalty = static_cast<float>(*v);
  }
  if (auto v = read_number(body, "frequency_penalty", "frequency_penalty", -2.0, 2.0)) {
    p.frequency_penalty = static_cast<float>(*v);
  }
  if (auto v = read_number(body, "repetition_penalty", "repetition_penalty", 0.0, 2.0, /*min_exclusive=*/true)) {
    p.repetition_penalty = positive_float(*v);
  }
  read_logit_bias(body, p);
  if (auto v = read_int(body, "min_tokens", "min_tokens", 0, kInt32Max)) p.min_tokens = static_cast<int32_t>(*v);
  const auto ids = body.find("stop_token_ids");
  if (ids != body.end() && !ids->is_null()) {
    if (!ids->is_array()) {
      throw bad_field("stop_token_ids", "'stop_token_ids' must be an array of token ids, got " + json_type_text(*ids));
    }
    if (ids->size() > kMaxStopTokenIds) {
      throw bad_field("stop_token_ids", "'stop_token_ids' holds " + std::to_string(ids->size()) +
                                            " ids; at most " + std::to_string(kMaxStopTokenIds) + " are allowed");
    }
    for (size_t i = 0; i < ids->size(); ++i) {
      p.stop_token_ids.push_back(
          static_cast<int32_t>(as_int((*ids)[i], "stop_token_ids[" + std::to_string(i) + "]", 0, kInt32Max)));
    }
  }
}

}  // namespace

uint64_t hash_cache_salt(const std::string& salt) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : salt) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h == 0 ? 1 : h;
}

GenerationParams parse_generation_params(const Json& body, bool chat) {
  GenerationParams out;
  SamplingParams& s = out.sampling;
  out.model = read_string(body, "model", "model");

  if (auto v = read_int(body, "max_tokens", "max_tokens", 1, kInt32Max)) {
    out.max_tokens = static_cast<int32_t>(*v);
  }
  if (chat) {
    if (auto v = read_int(body, "max_completion_tokens", "max_completion_tokens", 1, kInt32Max)) {
      out.max_tokens = static_cast<int32_t>(*v);
    }
  }
  if (auto v = read_number(body, "temperature", "temperature", 0.0, 2.0)) {
    s.temperature = static_cast<float>(*v);
  }
  if (auto v = read_number(body, "top_p", "top_p", 0.0, 1.0, /*min_exclusive=*/true)) {
    s.top_p = positive_float(*v);  // 1e-300: only the most likely token, never a 0 the sampler refuses
  }
  if (auto v = read_int(body, "top_k", "top_k", -1, kInt32Max)) {
    s.top_k = *v <= 0 ? 0 : static_cast<int32_t>(*v);  // -1 (vLLM) and 0 both mean off
  }
  if (auto v = read_number(body, "min_p", "min_p", 0.0, 1.0)) s.min_p = static_cast<float>(*v);
  // Negative seeds are accepted (Python clients send them) and keep their bits.
  if (auto v = read_int(body, "seed", "seed", kInt64Min, kInt64Max)) {
    s.seed = static_cast<uint64_t>(*v);
  }
  if (auto v = read_string_list(body, "stop", "stop", kMaxStopStrings)) {
    for (size_t i = 0; i < v->size(); ++i) {
      if ((*v)[i].empty()) {
        throw bad_field("stop",
                        "'stop' strings must not be empty (entry " + std::to_string(i) + " is)");
      }
    }
    s.stop = std::move(*v);
  }
  if (auto n = read_int(body, "n", "n", 1, kMaxChoices)) out.n = static_cast<int32_t>(*n);
  out.best_of = out.n;
  if (auto b = read_int(body, "best_of", "best_of", 1, kMaxChoices)) {
    if (*b < out.n) {
      throw bad_field("best_of", "'best_of' (" + std::to_string(*b) + ") must be at least 'n' (" +
                                     std::to_string(out.n) + ")");
    }
    out.best_of = static_cast<int32_t>(*b);
  }
  read_processing(body, s.processing);
  if (auto v = read_int(body, "prompt_logprobs", "prompt_logprobs", 0, kMaxLogprobs)) {
    s.prompt_logprobs = static_cast<int32_t>(*v);
  }
  out.user = read_string(body, "user", "user");
  if (chat && !out.user) out.user = read_string(body, "safety_identifier", "safety_identifier");
  read_logprobs(body, chat, s);
  if (auto salt = read_string(body, "cache_salt", "cache_salt")) {
    if (salt->empty()) throw bad_field("cache_salt", "'cache_salt' must not be an empty string");
    out.cache_salt = hash_cache_salt(*salt);
  }
  s.ignore_eos = read_bool(body, "ignore_eos", "ignore_eos").value_or(false);
  s.include_stop_str_in_output =
      read_bool(body, "include_stop_str_in_output", "include_stop_str_in_output").value_or(false);
  s.skip_special_tokens = read_bool(body, "skip_special_tokens", "skip_special_tokens").value_or(true);
  s.speculative_decoding = read_bool(body, "speculative_decoding", "speculative_decoding").value_or(true);
  out.stream = read_bool(body, "stream", "stream").value_or(false);
  read_stream_options(body, out);
  if (out.stream && out.best_of > out.n) {
    throw bad_field("best_of", "'best_of' greater than 'n' cannot be streamed (the best choices are known only at the end)");
  }
  out.slo = parse_slo_fields(body);
  return out;
}

}  // namespace loom
