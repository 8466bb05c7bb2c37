#include "core/executor/model_source.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "core/common/error.hpp"
#include "core/common/logging.hpp"
#include "core/executor/hf_model.hpp"
#include "core/tokenizer/tokenizer_json.hpp"

namespace loom {
namespace {

// eos_token_id as a number or a list of numbers; appends what it finds.
void add_ids(const nlohmann::json& j, std::vector<int32_t>& out) {
  if (j.is_number_integer()) {
    out.push_back(j.get<int32_t>());
  } else if (j.is_array()) {
    for (const auto& v : j)
      if (v.is_number_integer()) out.push_back(v.get<int32_t>());
  }
}

}  // namespace

std::unique_ptr<ModelSource> ModelSource::open(const std::string& path) {
  std::unique_ptr<ModelSource> src(new ModelSource());
  src->path_ = path;
  if (!std::filesystem::is_directory(path)) {
    src->gguf_.emplace(GgufFile::open(path));
    src->weights_ = load_llama_weights(*src->gguf_);
    src->chat_template_ = src->gguf_->get_string("tokenizer.chat_template", "");
    return src;
  }
  const nlohmann::json config = read_json_file(path + "/config.json", false);
  const LlamaHparams hp = read_hf_hparams(path, config);
  src->ckpt_ = std::make_unique<SafetensorsCheckpoint>(SafetensorsCheckpoint::open_dir(path));
  src->weights_ = load_hf_weights(*src->ckpt_, hp);
  const nlohmann::json gen = read_json_file(path + "/generation_config.json", true);
  if (gen.is_object() && gen.contains("eos_token_id")) add_ids(gen["eos_token_id"], src->eos_ids_);
  if (src->eos_ids_.empty() && config.contains("eos_token_id")) add_ids(config["eos_token_id"], src->eos_ids_);
  const nlohmann::json tok_config = read_json_file(path + "/tokenizer_config.json", true);
  if (tok_config.is_object() && tok_config.contains("chat_template")) {
    const nlohmann::json& t = tok_config["chat_template"];
    if (t.is_string()) {
      src->chat_template_ = t.get<std::string>();
    } else if (t.is_array()) {  // named templates: use "default"
      for (const auto& e : t)
        if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string())
          src->chat_template_ = e["template"].get<std::string>();
    }
  }
  if (src->chat_template_.empty()) {  // newer checkpoints ship it beside the config
    std::ifstream in(path + "/chat_template.jinja");
    if (in) src->chat_template_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return src;
}

std::unique_ptr<Tokenizer> ModelSource::load_tokenizer() const {
  if (gguf_) return loom::load_tokenizer(*gguf_);
  return load_tokenizer_json(path_);
}

std::unique_ptr<ChatTemplate> ModelSource::load_chat_template() const {
  if (gguf_) return loom::load_chat_template(*gguf_);
  std::ifstream in(path_ + "/tokenizer_config.json");
  if (!in) return nullptr;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::optional<ChatTemplateSource> found = find_chat_template_in_tokenizer_config(text);
  if (!found && !chat_template_.empty()) found = ChatTemplateSource{chat_template_, "", ""};  // chat_template.jinja
  if (!found) return nullptr;
  return std::make_unique<ChatTemplate>(found->source, found->bos_token, found->eos_token,
                                        path_ + "/tokenizer_config.json chat_template");
}

}  // namespace loom
