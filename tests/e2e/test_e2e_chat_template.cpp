// A GGUF carrying tokenizer.chat_template (stories260K plus a small template written here) gets
// that template applied by /apply-template and /v1/chat/completions: roles, chat_template_kwargs,
// raise_exception as a 400, and BOS not added a second time after the template wrote it. A
// template that does not parse stops the engine at load.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <vector>

#include "core/formats/gguf_file.hpp"
#include "core/formats/gguf_writer.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "e2e/e2e_server.hpp"

namespace loom::test {
namespace {

namespace fs = std::filesystem;

const char* const kTemplate =
    "{{ bos_token }}{% for m in messages %}"
    "{% if m.role == 'system' and not loop.first %}{{ raise_exception('system must come first') }}{% endif %}"
    "{{ m.role | upper }}: {{ m.content | trim }}\n{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
    "{% if enable_thinking is defined and not enable_thinking %} (quick){% endif %}";

// stories260K.gguf with tokenizer.chat_template = source, written to a temporary file.
std::string model_with_template(const std::string& source, const std::string& file_name) {
  const GgufFile base = GgufFile::open(std::string(LOOM_TEST_DATA) + "/stories260K.gguf");
  GgufWriter w;
  for (const auto& [key, value] : base.metadata()) {
    if (key != "general.alignment") w.set(key, value);
  }
  w.set_string("tokenizer.chat_template", source);
  for (const GgufTensorInfo& t : base.tensors()) {
    const auto* p = static_cast<const uint8_t*>(t.data);
    w.add_tensor(t.name, t.dtype, t.dims, std::vector<uint8_t>(p, p + t.nbytes));
  }
  const fs::path path = fs::temp_directory_path() / (file_name + "-" + std::to_string(::getpid()) + ".gguf");
  w.write(path.string());
  return path.string();
}

class ChatTemplateE2e : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = model_with_template(kTemplate, "loom-chat-template");
    server_ = new LiveServer(demo_config(R"(
[scheduler]
plugin = "fcfs"
[cache]
plugin = "contiguous"
kv_memory = "16MiB"
)", path_));
  }
  static void TearDownTestSuite() {
    delete server_;
    fs::remove(path_);
  }
  static inline std::string path_;
  static inline LiveServer* server_ = nullptr;
};

TEST_F(ChatTemplateE2e, ApplyTemplateRendersTheModelsTemplate) {
  const HttpResponse r = server_->post("/apply-template", {{"messages", {{{"role", "system"}, {"content", " Be kind. "}},
                                                                        {{"role", "user"}, {"content", "Hello"}}}}});
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(nlohmann::json::parse(r.body)["prompt"], "<s>SYSTEM: Be kind.\nUSER: Hello\nASSISTANT:");
}

TEST_F(ChatTemplateE2e, KwargsAndAddGenerationPromptReachTheTemplate) {
  const HttpResponse r = server_->post(
      "/apply-template", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                          {"add_generation_prompt", false},
                          {"chat_template_kwargs", {{"enable_thinking", false}}}});
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(nlohmann::json::parse(r.body)["prompt"], "<s>USER: Hi\n (quick)");
}

TEST_F(ChatTemplateE2e, RaiseExceptionIsA400CarryingItsMessage) {
  const HttpResponse r = server_->post("/apply-template", {{"messages", {{{"role", "user"}, {"content", "Hi"}},
                                                                        {{"role", "system"}, {"content", "late"}}}}});
  EXPECT_EQ(r.status, 400u);
  EXPECT_NE(r.body.find("system must come first"), std::string::npos) << r.body;
  const HttpResponse c = server_->post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "Hi"}},
                                                                             {{"role", "system"}, {"content", "late"}}}},
                                                                {"max_tokens", 1}});
  EXPECT_EQ(c.status, 400u);
  EXPECT_NE(c.body.find("system must come first"), std::string::npos) << c.body;
}

TEST_F(ChatTemplateE2e, ChatCompletionsUsesTheTemplateWithOneBos) {
  const HttpResponse r = server_->post("/v1/chat/completions",
                                       {{"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}},
                                        {"max_tokens", 2}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200u) << r.body;
  const Tokenizer& tok = server_->engine().tokenizer();
  const std::vector<int32_t> ids = tok.encode("<s>USER: Once upon a time\nASSISTANT:", false, true);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids[0], tok.bos_id());  // the template's "<s>" text is the BOS token...
  EXPECT_NE(ids[1], tok.bos_id());  // ...and no second one was added
  EXPECT_EQ(nlohmann::json::parse(r.body)["usage"]["prompt_tokens"], ids.size());
}

TEST(ChatTemplateLoad, ATemplateThatDoesNotParseStopsTheEngineAtLoad) {
  const std::string path = model_with_template("{% for m in messages %}{{ m.content }", "loom-bad-template");
  try {
    LiveServer server(demo_config(R"(
[scheduler]
plugin = "fcfs"
[cache]
plugin = "contiguous"
kv_memory = "16MiB"
)", path));
    ADD_FAILURE() << "the engine loaded a template that does not parse";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.chat_template:1:"), std::string::npos) << e.what();
  }
  fs::remove(path);
}

}  // namespace
}  // namespace loom::test
