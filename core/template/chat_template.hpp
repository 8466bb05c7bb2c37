// A model's chat template (the Jinja text in tokenizer_config.json or GGUF
// tokenizer.chat_template), parsed once at load and rendered per request the way Hugging Face
// transformers' apply_chat_template renders it.
#pragma once

#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/template/jinja/template.hpp"

namespace loom {

class GgufFile;

class ChatTemplate {
 public:
  // Throws loom::Error naming the line and the problem when the source does not parse.
  ChatTemplate(const std::string& source, std::string bos_token, std::string eos_token,
               std::string name = "chat_template");

  // The template's variables: messages (as given: role, content as a string or a list of parts,
  // tool_calls, ...), add_generation_prompt, bos_token, eos_token, tools (none unless given) and
  // every key of extra_kwargs (e.g. enable_thinking), plus raise_exception and strftime_now.
  // Throws loom::Error carrying raise_exception's message, or naming the line that failed.
  std::string render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                     const nlohmann::ordered_json& extra_kwargs = nlohmann::ordered_json::object()) const;

  // Whether the template walks a message's content as a list of parts (a for loop over some
  // variable's ['content'] or .content, as multimodal templates do). Most templates instead add
  // content to strings, and a list there either fails or prints wrongly (SmolLM3's becomes "",
  // Llama 3.1 prints a tool message's list as JSON); the server gives those templates the text
  // parts joined by "\n", as vLLM does for its "string" content format.
  bool takes_content_parts() const { return takes_content_parts_; }

  const std::string& bos_token() const { return bos_token_; }
  // The Jinja text: what the server reads a model's reasoning and tool-call formats from.
  const std::string& source() const { return source_; }
  const std::string& eos_token() const { return eos_token_; }
  // The time strftime_now formats (local time); the wall clock unless set (tests fix it).
  void set_clock(std::function<std::time_t()> clock) { clock_ = std::move(clock); }

 private:
  jinja::Template template_;
  std::string source_;
  std::string bos_token_;
  std::string eos_token_;
  std::function<std::time_t()> clock_;
  bool takes_content_parts_ = false;
};

// Whether a template source has a loop over some variable's content, `for part in
// message['content']` (or ["content"], or .content; one or two loop variables): what
// ChatTemplate::takes_content_parts() reports, as vLLM tells its "openai" content format from
// "string". A linear scan of the text (std::regex recursed once per character of a long name and
// overflowed the stack on a 100k-character one).
bool loops_over_content(std::string_view source);

// What a model's files say about its chat template.
struct ChatTemplateSource {
  std::string source;
  std::string bos_token;  // "" when the model has none
  std::string eos_token;
};

// From GGUF metadata: tokenizer.chat_template, with the BOS/EOS token texts from
// tokenizer.ggml.tokens. nullopt when the file has no template.
std::optional<ChatTemplateSource> find_chat_template(const GgufFile& file);
// From the text of a tokenizer_config.json: "chat_template" as a string, or a list of
// {"name", "template"} (the one named "default"); bos_token/eos_token as strings or
// {"content": ...}. nullopt when there is no template; throws on malformed JSON.
std::optional<ChatTemplateSource> find_chat_template_in_tokenizer_config(const std::string& json_text);

}  // namespace loom

namespace loom {

// The GGUF's chat template parsed, or nullptr when the file has none; throws loom::Error (naming
// the file, line and problem) when it has one that does not parse, so a model never serves with
// a template it would render wrong.
std::unique_ptr<ChatTemplate> load_chat_template(const GgufFile& file);

}  // namespace loom
