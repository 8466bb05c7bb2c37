#include "core/server/chat_prompt.hpp"

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

}  // namespace loom
