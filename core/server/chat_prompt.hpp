// Chat messages -> one prompt string. This is the single place a chat template is applied; the
// Jinja renderer of the model's own template plugs in here later. Until then every model gets the
// fallback format below.
#pragma once

#include <string>
#include <vector>

namespace loom {

struct ChatMessage {
  std::string role;     // "system", "user" or "assistant"
  std::string content;  // the text parts joined
};

// Fallback format, for models without a chat template (e.g. plain story models): the system
// messages first, then the others in order; each message is its content followed by "\n". Roles
// are not written, so a plain-text model continues the conversation as prose.
// add_generation_prompt adds nothing in this format (there is no assistant header to open);
// it is kept for the template renderer that will share this signature.
std::string render_chat_prompt(const std::vector<ChatMessage>& messages,
                               bool add_generation_prompt);

}  // namespace loom
