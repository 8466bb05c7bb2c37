#include "core/server/chat_prompt.hpp"

#include <fstream>
#include <sstream>

#include "core/common/error.hpp"
#include "core/template/chat_template.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "core/server/api_error.hpp"
#include "core/server/content_shield.hpp"
#include "core/server/json_fields.hpp"

namespace loom {

std::string render_chat_prompt(const std::vector<ChatMessage>& messages,
                               bool /*add_generation_prompt*/) {
  std::string out;
  // Two passes keep system messages first wherever the client put them.
  for (const ChatMessage& m : messages) {
    if (m.role == "system") out += m.content + "\n";
  }
  for (const ChatMessage& m : messages) {
    if (m.role != "system") out += m.content + "\n";
  }
  return out;
}

namespace {

// What the server itself gives the template: a client's kwargs must not replace these.
constexpr std::string_view kReservedVariables[] = {"messages", "add_generation_prompt", "bos_token",
                                                    "eos_token", "raise_exception", "strftime_now"};

// The content of user, system and tool messages. Assistant turns are the model's own earlier
// output, which templates take apart by its tags (Qwen3 splits reasoning at </think>).
void shield_content(nlohmann::ordered_json& message, ContentShield& shield) {
  if (!message.is_object() || message.value("role", "") == "assistant") return;
  const auto it = message.find("content");
  if (it == message.end()) return;
  if (it->is_string()) {
    *it = shield.shield(it->get<std::string>());
  } else if (it->is_array()) {
    for (auto& part : *it) {
      if (part.is_object() && part.contains("text") && part["text"].is_string()) {
        part["text"] = shield.shield(part["text"].get<std::string>());
      }
    }
  }
}

}  // namespace

std::string apply_chat_prompt(const ChatTemplate* chat_template, std::string_view body,
                              const std::vector<ChatMessage>& messages, ContentShield* shield) {
  // Ordered, so tool arguments keep the client's key order when a template prints them (tojson).
  const auto json = nlohmann::ordered_json::parse(body);
  bool add_generation_prompt = true;
  if (const auto it = json.find("add_generation_prompt"); it != json.end() && !it->is_null()) {
    if (!it->is_boolean()) throw bad_field("add_generation_prompt", "'add_generation_prompt' must be a boolean");
    add_generation_prompt = it->get<bool>();
  }
  if (!chat_template) return render_chat_prompt(messages, add_generation_prompt);
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
  if (const auto it = json.find("chat_template_kwargs"); it != json.end() && !it->is_null()) {
    if (!it->is_object()) throw bad_field("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    kwargs = *it;
    for (std::string_view name : kReservedVariables) {
      if (kwargs.contains(name)) {
        throw bad_field("chat_template_kwargs", "'chat_template_kwargs." + std::string(name) +
                                                    "' would replace a variable the server sets; it is not allowed");
      }
    }
  }
  if (const auto it = json.find("tools"); it != json.end() && !it->is_null() && !kwargs.contains("tools")) {
    kwargs["tools"] = *it;
  }
  // Templates print tool-call arguments as objects (tojson), as vLLM hands them: the JSON text
  // the client sent back (already validated) is parsed for them.
  nlohmann::ordered_json history = json.at("messages");
  if (!chat_template->takes_content_parts()) {
    // A template that adds content to strings gets a content array (text parts only: the request
    // reader refuses the rest) as the texts the reader joined with "\n", as vLLM joins them.
    // `messages` was read from this body, one per message.
    for (size_t i = 0; i < history.size() && i < messages.size(); ++i) {
      auto& m = history[i];
      if (m.is_object() && m.contains("content") && m["content"].is_array()) m["content"] = messages[i].content;
    }
  }
  if (shield) {
    for (auto& m : history) shield_content(m, *shield);
  }
  for (auto& m : history) {
    if (!m.is_object() || !m.contains("tool_calls") || !m["tool_calls"].is_array()) continue;
    for (auto& call : m["tool_calls"]) {
      auto& fn = call["function"];
      if (fn.is_object() && fn.contains("arguments") && fn["arguments"].is_string()) {
        // Validated as JSON text when the request was read (Json::accept); no exception here.
        fn["arguments"] = nlohmann::ordered_json::parse(fn["arguments"].get<std::string>(), nullptr, false);
      }
    }
  }
  return chat_template->render(history, add_generation_prompt, kwargs);
}

std::vector<int32_t> tokenize_chat_prompt(const Tokenizer& tokenizer, const ChatTemplate* chat_template,
                                          const std::string& text, const ContentShield* shield) {
  if (!chat_template) return tokenizer.encode(text, /*add_special=*/true);
  const std::string& bos = chat_template->bos_token();
  const bool wrote_bos = !bos.empty() && text.compare(0, bos.size(), bos) == 0;
  if (shield) return shield->encode(text, /*add_special=*/!wrote_bos);
  return tokenizer.encode(text, /*add_special=*/!wrote_bos, /*parse_special=*/true);
}

std::shared_ptr<const ChatTemplate> load_chat_template_file(const std::string& path,
                                                            const ChatTemplate* model_template,
                                                            const Tokenizer& tokenizer) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read chat template file " + path, LOOM_ERR_NOT_FOUND);
  std::ostringstream text;
  text << in.rdbuf();
  const auto piece = [&](int32_t id) { return id >= 0 ? tokenizer.token_to_piece(id, true) : std::string(); };
  std::string bos = model_template ? model_template->bos_token() : piece(tokenizer.bos_id());
  std::string eos = model_template ? model_template->eos_token() : piece(tokenizer.eos_id());
  return std::make_shared<const ChatTemplate>(text.str(), std::move(bos), std::move(eos), path);
}

}  // namespace loom
