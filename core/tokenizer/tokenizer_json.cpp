// load_tokenizer_json(): tokenizer.json + tokenizer_config.json -> BpeTokenizer.
#include "core/tokenizer/tokenizer_json.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/common/error.hpp"
#include "core/tokenizer/bpe_tokenizer.hpp"
#include "core/tokenizer/wordpiece_json.hpp"

namespace loom {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json read_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open '" + path.string() + "'", LOOM_ERR_NOT_FOUND);
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw Error(path.string() + ": not valid JSON: " + e.what());
  }
}

std::string type_of(const json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    throw Error(where + " has no \"type\"");
  }
  return j["type"].get<std::string>();
}

NormalForm read_normalizer(const json& n) {
  if (n.is_null()) return NormalForm::kNone;
  const std::string type = type_of(n, "normalizer");
  if (type == "Sequence") {
    const json& list = n.at("normalizers");
    if (list.empty()) return NormalForm::kNone;
    if (list.size() == 1) return read_normalizer(list[0]);
    throw Error("normalizer Sequence of " + std::to_string(list.size()) +
                    " normalizers is not supported (supported: one of NFC, NFD, NFKC, NFKD)",
                LOOM_ERR_UNSUPPORTED);
  }
  return normal_form_from_name(type);
}

// Appends the expressions a pre-tokenizer stands for; sets byte_level when it has ByteLevel.
void read_pre_tokenizer(const json& p, BpeVocab& vocab, bool& byte_level) {
  if (p.is_null()) return;
  const std::string type = type_of(p, "pre_tokenizer");
  if (type == "Sequence") {
    for (const json& child : p.at("pretokenizers")) read_pre_tokenizer(child, vocab, byte_level);
  } else if (type == "ByteLevel") {
    byte_level = true;
    if (p.value("add_prefix_space", false)) vocab.add_prefix_space = true;
    if (p.value("use_regex", true)) vocab.pre_patterns.push_back(kGpt2Pattern);
  } else if (type == "Split") {
    const std::string behavior = p.value("behavior", "Isolated");
    if (behavior != "Isolated" || p.value("invert", false)) {
      throw Error("pre_tokenizer Split with behavior '" + behavior + "'" +
                      (p.value("invert", false) ? " and invert" : "") +
                      " is not supported (supported: Isolated, not inverted)",
                  LOOM_ERR_UNSUPPORTED);
    }
    const json& pattern = p.at("pattern");
    if (pattern.contains("Regex")) {
      vocab.pre_patterns.push_back(pattern["Regex"].get<std::string>());
    } else if (pattern.contains("String")) {
      vocab.pre_patterns.push_back(regex_escape(pattern["String"].get<std::string>()));
    } else {
      throw Error("pre_tokenizer Split has neither a Regex nor a String pattern");
    }
  } else if (type == "Digits") {
    vocab.pre_patterns.push_back(p.value("individual_digits", false) ? "\\p{N}" : "\\p{N}+");
  } else {
    throw Error("pre_tokenizer '" + type +
                    "' is not supported (supported: ByteLevel, Split, Digits, Sequence)",
                LOOM_ERR_UNSUPPORTED);
  }
}

// TemplateProcessing's "single" template: special tokens before / after the text ($A).
void read_post_processor(const json& p, bool& add_bos, bool& add_eos) {
  if (p.is_null()) return;
  const std::string type = type_of(p, "post_processor");
  if (type == "Sequence") {
    for (const json& child : p.at("processors")) read_post_processor(child, add_bos, add_eos);
    return;
  }
  if (type != "TemplateProcessing") return;  // ByteLevel post-processing adds no tokens
  bool seen_text = false;
  for (const json& piece : p.at("single")) {
    if (piece.contains("Sequence")) {
      seen_text = true;
    } else if (piece.contains("SpecialToken")) {
      (seen_text ? add_eos : add_bos) = true;
    }
  }
}

// A token named in tokenizer_config.json: a string or {"content": ...}; -1 when null/absent.
template <typename Find>
int32_t config_token(const json& config, const char* key, const Find& find) {
  if (!config.contains(key) || config[key].is_null()) return -1;
  const json& v = config[key];
  const std::string text = v.is_string() ? v.get<std::string>() : v.value("content", "");
  const int32_t id = find(text);
  if (id < 0)
    throw Error(std::string("tokenizer_config.json ") + key + " '" + text + "' is not a token");
  return id;
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& path) {
  fs::path file = path;
  if (fs::is_directory(file)) file /= "tokenizer.json";
  const std::string where = file.string();
  const json j = read_json(file);
  json config = json::object();
  const fs::path config_path = file.parent_path() / "tokenizer_config.json";
  if (fs::exists(config_path)) config = read_json(config_path);

  try {
    const json& model = j.at("model");
    const std::string model_type = model.value("type", "BPE");
    if (model_type == "WordPiece") return wordpiece_from_tokenizer_json(j, config);
    if (model_type != "BPE") {
      throw Error("model type '" + model_type + "' is not supported (supported: BPE, WordPiece)",
                  LOOM_ERR_UNSUPPORTED);
    }
    if (model.value("byte_fallback", false)) {
      throw Error(
          "BPE with byte_fallback (SentencePiece style) is not supported; convert the "
          "model to GGUF",
          LOOM_ERR_UNSUPPORTED);
    }
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      if (model.contains(key) && model[key].is_string() && !model[key].get<std::string>().empty()) {
        throw Error(std::string("BPE ") + key + " is not supported", LOOM_ERR_UNSUPPORTED);
      }
    }

    BpeVocab vocab;
    int64_t max_id = -1;
    for (const auto& [text, id] : model.at("vocab").items()) max_id = std::max<int64_t>(max_id, id);
    const json added = j.value("added_tokens", json::array());
    for (const json& a : added) max_id = std::max<int64_t>(max_id, a.at("id").get<int64_t>());
    vocab.tokens.resize(static_cast<size_t>(max_id + 1));
    vocab.types.assign(vocab.tokens.size(), TokenType::kUnused);
    for (const auto& [text, id] : model.at("vocab").items()) {
      vocab.tokens[id.get<size_t>()] = text;
      vocab.types[id.get<size_t>()] = TokenType::kNormal;
    }
    for (const json& a : added) {
      AddedToken t;
      t.id = a.at("id").get<int32_t>();
      t.content = a.at("content").get<std::string>();
      t.special = a.value("special", false);
      t.lstrip = a.value("lstrip", false);
      t.rstrip = a.value("rstrip", false);
      t.normalized = a.value("normalized", false);
      vocab.tokens[t.id] = t.content;
      vocab.types[t.id] = t.special ? TokenType::kControl : TokenType::kUserDefined;
      vocab.added.push_back(std::move(t));
    }
    for (const json& m : model.at("merges")) {
      if (m.is_array() && m.size() == 2) {
        vocab.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
        continue;
      }
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ', 1);
      if (space == std::string::npos) throw Error("merge '" + s + "' is not two tokens");
      vocab.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    }
    vocab.ignore_merges = model.value("ignore_merges", false);
    vocab.normalizer = read_normalizer(j.value("normalizer", json()));
    bool byte_level = false;
    read_pre_tokenizer(j.value("pre_tokenizer", json()), vocab, byte_level);
    if (!byte_level) {
      throw Error("pre_tokenizer has no ByteLevel step; only byte-level BPE is supported",
                  LOOM_ERR_UNSUPPORTED);
    }
    read_post_processor(j.value("post_processor", json()), vocab.add_bos, vocab.add_eos);
    if (config.contains("add_bos_token") && config["add_bos_token"].is_boolean()) {
      vocab.add_bos = config["add_bos_token"].get<bool>();
    }
    if (config.contains("add_eos_token") && config["add_eos_token"].is_boolean()) {
      vocab.add_eos = config["add_eos_token"].get<bool>();
    }

    // Special tokens are named by their text in the config.
    const auto find = [&](const std::string& text) -> int32_t {
      for (const AddedToken& t : vocab.added) {
        if (t.content == text) return t.id;
      }
      const json& v = model.at("vocab");
      const auto it = v.find(text);
      return it == v.end() ? -1 : it->get<int32_t>();
    };
    vocab.bos_id = config_token(config, "bos_token", find);
    vocab.eos_id = config_token(config, "eos_token", find);
    vocab.unk_id = config_token(config, "unk_token", find);
    vocab.pad_id = config_token(config, "pad_token", find);
    if (vocab.unk_id < 0 && model.contains("unk_token") && model["unk_token"].is_string()) {
      vocab.unk_id = find(model["unk_token"].get<std::string>());
    }
    return std::make_unique<BpeTokenizer>(std::move(vocab));
  } catch (const json::exception& e) {
    throw Error(where + ": " + e.what());
  } catch (const Error& e) {
    throw Error(where + ": " + e.what(), e.code());
  }
}

}  // namespace loom
