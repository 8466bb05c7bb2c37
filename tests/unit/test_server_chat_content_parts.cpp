// Chat messages whose content is an array of text parts (the OpenAI form LangChain and the
// multimodal clients send): a template that walks content as parts gets the list; every other
// template gets the texts joined by "\n", as vLLM gives its "string" content format.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/server/chat_prompt.hpp"
#include "core/server/chat_request.hpp"
#include "core/template/chat_template.hpp"

namespace loom {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char* kPartsBody = R"({"messages": [
    {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
    {"role": "user", "content": [{"type": "text", "text": "Hi "}, {"type": "text", "text": "there"}]},
    {"role": "assistant", "content": "Hello"},
    {"role": "user", "content": [{"type": "text", "text": "Bye"}]}]})";

std::string apply(const ChatTemplate& t, const char* body) {
  return apply_chat_prompt(&t, body, parse_chat_request(body).messages);
}

TEST(ChatContentParts, TemplatesThatLoopOverContentAreToldApart) {
  const auto takes = [](const std::string& source) { return ChatTemplate(source, "", "").takes_content_parts(); };
  EXPECT_TRUE(takes("{% for m in messages %}{% for item in m['content'] %}{{ item['text'] }}{% endfor %}{% endfor %}"));
  EXPECT_TRUE(takes("{% for m in messages %}{%- for part in m[\"content\"] -%}{{ part.text }}{% endfor %}{% endfor %}"));
  EXPECT_TRUE(takes("{% for message in messages %}{% for c in message.content %}{{ c.text }}{% endfor %}{% endfor %}"));
  EXPECT_FALSE(takes("{% for message in messages %}{{ message['content'] }}{% endfor %}"));
  EXPECT_FALSE(takes("{% for message in messages %}{{ message.content | trim }}{% endfor %}"));
  EXPECT_FALSE(takes("{% for message in messages %}{% for c in message.contents %}{{ c }}{% endfor %}{% endfor %}"));
  // The shipped templates add content to strings (SmolLM3 turns a non-string into "", Llama 3.1
  // prints an iterable tool message as JSON): none loops over parts.
  EXPECT_TRUE(loops_over_content("{%- for key, value in message['content'] | items %}{% endfor %}"));
  EXPECT_TRUE(loops_over_content("{% for x in m [ \"content\" ] %}"));
  EXPECT_TRUE(loops_over_content("{% for x in m.content %}"));
  EXPECT_FALSE(loops_over_content("{% for x in m.content_type %}"));
  EXPECT_FALSE(loops_over_content("{% for x in m['contents'] %}"));
  EXPECT_FALSE(loops_over_content("{% for x in m['content\"] %}"));  // quotes must match
  EXPECT_FALSE(loops_over_content("{% fork x in m.content %}"));
  EXPECT_TRUE(loops_over_content("{% for x in m.content"));  // at the end of the text
  // A very long name or run of spaces is scanned in one pass (std::regex overflowed the stack
  // on a 100k-character name).
  EXPECT_FALSE(loops_over_content("{% for " + std::string(1 << 20, 'a') + " in x %}"));
  EXPECT_TRUE(loops_over_content("{% for x in" + std::string(1 << 20, ' ') + "m['content'] %}"));
  for (const auto& entry : fs::directory_iterator(fs::path(LOOM_TEST_DATA) / "chat_templates")) {
    if (entry.path().extension() != ".jinja") continue;
    EXPECT_FALSE(takes(read_file(entry.path()))) << entry.path().filename();
  }
}

TEST(ChatContentParts, StringTemplatesGetTheTextsJoinedByNewline) {
  const ChatTemplate t("{% for m in messages %}[{{ m['role'] }}:{{ m['content'] }}]{% endfor %}", "", "");
  EXPECT_EQ(apply(t, kPartsBody), "[system:Be brief.][user:Hi \nthere][assistant:Hello][user:Bye]");
}

TEST(ChatContentParts, PartTemplatesGetTheParts) {
  const ChatTemplate t(
      "{% for m in messages %}{% if m['content'] is string %}({{ m['content'] }}){% else %}"
      "{% for part in m['content'] %}<{{ part['type'] }}:{{ part['text'] }}>{% endfor %}{% endif %}{% endfor %}",
      "", "");
  EXPECT_EQ(apply(t, kPartsBody), "<text:Be brief.><text:Hi ><text:there>(Hello)<text:Bye>");
}

TEST(ChatContentParts, SmolLm3SeesTheUserText) {
  // SmolLM3's template keeps a user message's content only when it is a string.
  const ChatTemplate t(read_file(fs::path(LOOM_TEST_DATA) / "chat_templates" / "HuggingFaceTB-SmolLM3-3B.jinja"),
                       "", "<|im_end|>");
  const std::string prompt = apply(t, kPartsBody);
  EXPECT_NE(prompt.find("<|im_start|>user\nHi \nthere<|im_end|>\n"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("<|im_start|>user\nBye<|im_end|>\n"), std::string::npos) << prompt;
}

}  // namespace
}  // namespace loom
