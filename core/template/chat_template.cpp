#include "core/template/chat_template.hpp"

#include <array>
#include <cctype>

#include "core/common/error.hpp"
#include "core/formats/gguf_file.hpp"

namespace loom {

ChatTemplate::ChatTemplate(const std::string& source, std::string bos_token, std::string eos_token,
                           std::string name)
    : template_(source, std::move(name)),
      source_(source),
      bos_token_(std::move(bos_token)),
      eos_token_(std::move(eos_token)) {
  takes_content_parts_ = loops_over_content(source_);
}

bool loops_over_content(std::string_view s) {
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
  const auto spaces = [&](size_t& p) {
    const size_t b = p;
    while (p < s.size() && std::isspace(static_cast<unsigned char>(s[p])) != 0) ++p;
    return p > b;
  };
  const auto name = [&](size_t& p) {
    const size_t b = p;
    while (p < s.size() && word(s[p])) ++p;
    return p > b;
  };
  for (size_t at = s.find("for"); at != std::string_view::npos; at = s.find("for", at + 1)) {
    if (at > 0 && word(s[at - 1])) continue;
    size_t p = at + 3;
    if (!spaces(p) || !name(p)) continue;
    size_t q = p;  // a second loop variable: `for key, value in ...`
    spaces(q);
    if (q < s.size() && s[q] == ',') {
      ++q;
      spaces(q);
      if (!name(q)) continue;
      p = q;
    }
    if (!spaces(p) || s.compare(p, 2, "in") != 0) continue;
    p += 2;
    if (!spaces(p) || !name(p)) continue;
    spaces(p);
    if (s.compare(p, 8, ".content") == 0) {
      if (p + 8 == s.size() || !word(s[p + 8])) return true;
      continue;
    }
    if (p >= s.size() || s[p] != '[') continue;
    ++p;
    spaces(p);
    if (p >= s.size() || (s[p] != '\'' && s[p] != '"')) continue;
    const char quote = s[p++];
    if (s.compare(p, 7, "content") != 0 || p + 7 >= s.size() || s[p + 7] != quote) continue;
    p += 8;
    spaces(p);
    if (p < s.size() && s[p] == ']') return true;
  }
  return false;
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                 const nlohmann::ordered_json& extra_kwargs) const {
  using jinja::Value;
  LOOM_CHECK(messages.is_array(), "chat template: messages must be an array");
  LOOM_CHECK(extra_kwargs.is_object() || extra_kwargs.is_null(), "chat template: chat_template_kwargs must be an object");
  jinja::ValueDict globals;
  globals.set("messages", Value::from_json(messages));
  // transformers passes tools=None and documents=None when the request has none.
  globals.set("tools", Value::none());
  globals.set("documents", Value::none());
  globals.set("add_generation_prompt", Value::boolean(add_generation_prompt));
  globals.set("bos_token", Value::string(bos_token_));
  globals.set("eos_token", Value::string(eos_token_));
  globals.set("raise_exception", Value::function("raise_exception", [](const jinja::CallArgs& args) -> Value {
    throw jinja::TemplateException(args.positional.empty() ? std::string("raise_exception") : args.positional[0].str());
  }));
  const std::function<std::time_t()> clock = clock_;
  globals.set("strftime_now", Value::function("strftime_now", [clock](const jinja::CallArgs& args) {
    LOOM_CHECK(!args.positional.empty() && args.positional[0].is_string(), "strftime_now needs a format string");
    const std::time_t now = clock ? clock() : std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    std::array<char, 256> buf{};
    const size_t n = std::strftime(buf.data(), buf.size(), args.positional[0].as_string().c_str(), &tm);
    return Value::string(std::string(buf.data(), n));
  }));
  if (extra_kwargs.is_object()) {
    for (const auto& [k, v] : extra_kwargs.items()) globals.set(k, Value::from_json(v));
  }
  return template_.render(globals);
}

namespace {

std::string token_text(const GgufFile& file, const char* id_key) {
  const GgufValue* id = file.find(id_key);
  const GgufValue* tokens = file.find("tokenizer.ggml.tokens");
  if (!id || !tokens) return "";
  const int64_t i = id->as_int();
  const GgufArray& arr = tokens->as_array();
  if (i < 0 || static_cast<size_t>(i) >= arr.items.size()) return "";
  return arr.items[static_cast<size_t>(i)].as_string();
}

std::string config_token(const nlohmann::json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
  return "";
}

}  // namespace

std::optional<ChatTemplateSource> find_chat_template(const GgufFile& file) {
  const GgufValue* tmpl = file.find("tokenizer.chat_template");
  if (!tmpl) return std::nullopt;
  return ChatTemplateSource{tmpl->as_string(), token_text(file, "tokenizer.ggml.bos_token_id"),
                            token_text(file, "tokenizer.ggml.eos_token_id")};
}

std::optional<ChatTemplateSource> find_chat_template_in_tokenizer_config(const std::string& json_text) {
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("tokenizer_config.json: ") + e.what());
  }
  const auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return std::nullopt;
  std::string source;
  if (it->is_string()) {
    source = it->get<std::string>();
  } else if (it->is_array()) {
    bool found = false;
    for (const auto& entry : *it) {
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template")) {
        source = entry["template"].get<std::string>();
        found = true;
      }
    }
    if (!found) throw Error("tokenizer_config.json: chat_template lists no template named 'default'");
  } else {
    throw Error("tokenizer_config.json: chat_template must be a string or a list of named templates");
  }
  return ChatTemplateSource{source, config_token(config, "bos_token"), config_token(config, "eos_token")};
}

}  // namespace loom

namespace loom {

std::unique_ptr<ChatTemplate> load_chat_template(const GgufFile& file) {
  const std::optional<ChatTemplateSource> source = find_chat_template(file);
  if (!source) return nullptr;
  return std::make_unique<ChatTemplate>(source->source, source->bos_token, source->eos_token,
                                        file.path() + ": tokenizer.chat_template");
}

}  // namespace loom
