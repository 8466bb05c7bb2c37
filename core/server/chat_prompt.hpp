// Chat messages -> one prompt string and its token ids. This is the single place a chat template
// is applied: the model's own Jinja template when it has one (core/template/chat_template.hpp), else
// the fallback format below.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

class ChatTemplate;
class ContentShield;
class Tokenizer;

struct ChatMessage {
  std::string role;     // "system", "user" or "assistant"
  std::string content;  // the text parts joined
};

// Fallback format, for models without a chat template (e.g. plain story models): the system
// messages first, then the others in order; each message is its content followed by "\n". Roles
// are not written, so a plain-text model continues the conversation as prose.
// add_generation_prompt adds nothing in this format (there is no assistant header to open).
std::string render_chat_prompt(const std::vector<ChatMessage>& messages,
                               bool add_generation_prompt);

// The prompt text for a chat request body (already validated into `messages`). With a template:
// the body's own "messages" (every field passed through), "tools" when set,
// "chat_template_kwargs" (e.g. enable_thinking) as top-level template variables (a 400 for one
// that would replace a variable the server sets: messages, add_generation_prompt, bos_token,
// eos_token, raise_exception, strftime_now), and "add_generation_prompt" (default true). With a
// shield, special-token text in message content is marked as text first (content_shield.hpp).
// Throws loom::Error when the template raises.
std::string apply_chat_prompt(const ChatTemplate* chat_template, std::string_view body,
                              const std::vector<ChatMessage>& messages, ContentShield* shield = nullptr);

// Token ids of a rendered prompt. A template's text is tokenized with its special-token text
// ("<|im_start|>") read as special tokens, and BOS is not added again when the text already
// starts with the template's bos_token; fallback text gets the tokenizer's usual BOS.
std::vector<int32_t> tokenize_chat_prompt(const Tokenizer& tokenizer, const ChatTemplate* chat_template,
                                          const std::string& text, const ContentShield* shield = nullptr);

// --chat-template FILE: the Jinja file parsed, with the BOS/EOS texts of the model's own template
// when it has one, else of its tokenizer. Throws loom::Error naming the file when it cannot be
// read or does not parse.
std::shared_ptr<const ChatTemplate> load_chat_template_file(const std::string& path,
                                                            const ChatTemplate* model_template,
                                                            const Tokenizer& tokenizer);

}  // namespace loom
