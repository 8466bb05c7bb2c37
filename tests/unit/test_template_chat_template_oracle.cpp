// Oracle: every chat template in tests/data/chat_templates/ rendered for every conversation in
// conversations.json equals, byte for byte, what Python jinja2 rendered under transformers'
// settings (tools/templates/render_expected.py wrote expected/). Where jinja2 raised, Loom must
// raise too, with the same raise_exception message. The conversations include a tool call, so
// tojson (transformers' flavour: insertion order, indent) is checked against Python as well.
#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/template/chat_template.hpp"

namespace loom {
namespace {

namespace fs = std::filesystem;
const fs::path kDir = fs::path(LOOM_TEST_DATA) / "chat_templates";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The moment render_expected.py gives strftime_now: 2024-07-26 12:00:00 local time.
std::time_t fixed_now() {
  std::tm tm{};
  tm.tm_year = 2024 - 1900;
  tm.tm_mon = 6;
  tm.tm_mday = 26;
  tm.tm_hour = 12;
  tm.tm_isdst = -1;
  return std::mktime(&tm);
}

TEST(ChatTemplateOracle, EveryTemplateAndConversationMatchesJinja2) {
  const auto conversations = nlohmann::ordered_json::parse(read_file(kDir / "conversations.json"));
  const auto tokens = nlohmann::json::parse(read_file(kDir / "tokens.json"));
  std::vector<fs::path> templates;
  for (const auto& entry : fs::directory_iterator(kDir)) {
    if (entry.path().extension() == ".jinja") templates.push_back(entry.path());
  }
  std::sort(templates.begin(), templates.end());
  ASSERT_GE(templates.size(), 9u);
  ASSERT_GE(conversations.size(), 6u);
  int renders = 0, errors = 0;
  for (const fs::path& path : templates) {
    const std::string name = path.stem().string();
    ASSERT_TRUE(tokens.contains(name)) << name;
    ChatTemplate tmpl(read_file(path), tokens[name]["bos_token"], tokens[name]["eos_token"], name);
    tmpl.set_clock(fixed_now);
    for (const auto& conv : conversations) {
      const std::string stem = name + "__" + conv["name"].get<std::string>();
      const auto kwargs = conv.contains("kwargs") ? conv["kwargs"] : nlohmann::ordered_json::object();
      const bool add_gen = conv["add_generation_prompt"].get<bool>();
      if (fs::exists(kDir / "expected" / (stem + ".error"))) {
        const std::string message = read_file(kDir / "expected" / (stem + ".error"));
        try {
          tmpl.render(conv["messages"], add_gen, kwargs);
          ADD_FAILURE() << stem << ": rendered, but jinja2 raised: " << message;
        } catch (const Error& e) {
          // "!": Python itself raised (not raise_exception); only the failure must match.
          if (message.rfind("!", 0) != 0) {
            EXPECT_EQ(std::string(e.what()), message) << stem;
          }
        }
        ++errors;
        continue;
      }
      const std::string expected = read_file(kDir / "expected" / (stem + ".txt"));
      ASSERT_TRUE(fs::exists(kDir / "expected" / (stem + ".txt"))) << stem;
      try {
        EXPECT_EQ(tmpl.render(conv["messages"], add_gen, kwargs), expected) << stem;
      } catch (const Error& e) {
        ADD_FAILURE() << stem << ": " << e.what();
      }
      ++renders;
    }
  }
  std::printf("chat template oracle: %zu templates, %zu conversations, %d renders (+%d expected errors)\n",
              templates.size(), conversations.size(), renders, errors);
  EXPECT_EQ(static_cast<size_t>(renders + errors), templates.size() * conversations.size());
}

}  // namespace
}  // namespace loom
