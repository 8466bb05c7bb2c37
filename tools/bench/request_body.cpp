#include "tools/bench/request_body.hpp"

#include <nlohmann/json.hpp>

namespace loom::bench {
namespace {

using Json = nlohmann::json;

Json chat_messages(const Conversation& c, size_t turn, std::span<const std::string> answers) {
  Json messages = Json::array();
  if (!c.system.empty()) messages.push_back({{"role", "system"}, {"content", c.system}});
  for (size_t k = 0; k < turn; ++k) {
    messages.push_back({{"role", "user"}, {"content", c.turns[k].text}});
    messages.push_back({{"role", "assistant"}, {"content", k < answers.size() ? answers[k] : ""}});
  }
  messages.push_back({{"role", "user"}, {"content", c.turns[turn].text}});
  return messages;
}

}  // namespace

std::string completion_prompt(const Conversation& c, size_t turn,
                              std::span<const std::string> answers) {
  std::string prompt;
  const auto line = [&prompt](const std::string& part) {
    if (!prompt.empty()) prompt += '\n';
    prompt += part;
  };
  if (!c.system.empty()) line(c.system);
  for (size_t k = 0; k < turn; ++k) {
    line(c.turns[k].text);
    line(k < answers.size() ? answers[k] : "");
  }
  line(c.turns[turn].text);
  return prompt;
}

std::string request_body(const BodyOptions& options, const Conversation& c, size_t turn,
                         std::span<const std::string> answers) {
  Json body = {{"model", options.model},
               {"max_tokens", c.turns[turn].max_tokens},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}},
               {"temperature", 0.0}};
  if (options.ignore_eos) body["ignore_eos"] = true;
  if (options.class_fields) {
    if (c.priority) body["priority"] = *c.priority;
    Json slo = Json::object();
    if (c.slo_ttft_ms) slo["ttft_ms"] = *c.slo_ttft_ms;
    if (c.slo_tpot_ms) slo["tpot_ms"] = *c.slo_tpot_ms;
    if (!slo.empty()) body["slo"] = slo;
  }
  if (options.chat) {
    body["messages"] = chat_messages(c, turn, answers);
  } else {
    body["prompt"] = completion_prompt(c, turn, answers);
  }
  // Answers are server text and may end in a cut character: replace rather than throw.
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

int64_t client_prompt_tokens(const BodyOptions& options, const Conversation& c, size_t turn,
                             std::span<const std::string> answers, const PromptText& text) {
  if (!options.chat) return text.count_tokens(completion_prompt(c, turn, answers));
  int64_t total = c.system.empty() ? 0 : text.count_tokens(c.system);
  for (size_t k = 0; k < turn; ++k) {
    total += text.count_tokens(c.turns[k].text);
    if (k < answers.size()) total += text.count_tokens(answers[k]);
  }
  return total + text.count_tokens(c.turns[turn].text);
}

}  // namespace loom::bench
