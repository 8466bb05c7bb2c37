#include "tools/convert/hf_tokenizer_gguf.hpp"

#include <nlohmann/json.hpp>

#include "core/common/error.hpp"
#include "core/executor/hf_model.hpp"
#include "core/tokenizer/pre_tokenizer.hpp"
#include "core/tokenizer/spm_tokenizer.hpp"

namespace loom::convert {
namespace {

using nlohmann::json;

// Families whose tokenizer.json a GGUF can name; Loom holds their expressions.
constexpr const char* kPreCandidates[] = {"gpt-2", "llama-bpe", "qwen2", "deepseek-coder"};

// HF spells the contractions case-insensitively; Loom (like llama.cpp) with case classes.
std::string normalize_regex(std::string r) {
  static const std::string kInsensitive = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
  static const std::string kClasses = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
  for (size_t at = r.find(kInsensitive); at != std::string::npos; at = r.find(kInsensitive, at + kClasses.size()))
    r.replace(at, kInsensitive.size(), kClasses);
  return r;
}

// The regexes a pre_tokenizer applies, in order; throws for a kind with no GGUF spelling.
void collect_patterns(const json& pre, std::vector<std::string>& out, const std::string& where) {
  if (pre.is_null()) return;
  const std::string type = pre.value("type", "");
  if (type == "Sequence") {
    for (const json& p : pre.at("pretokenizers")) collect_patterns(p, out, where);
  } else if (type == "Split" && pre.contains("pattern") && pre["pattern"].contains("Regex") &&
             pre.value("behavior", "") == "Isolated" && !pre.value("invert", false)) {
    out.push_back(normalize_regex(pre["pattern"]["Regex"].get<std::string>()));
  } else if (type == "ByteLevel") {
    if (pre.value("use_regex", true)) out.push_back(kGpt2Pattern);
  } else {
    throw Error(where + ": pre_tokenizer " + pre.dump() + " has no tokenizer.ggml.pre spelling", LOOM_ERR_UNSUPPORTED);
  }
}

std::string token_text(const json& v) {  // tokenizer_config.json: "<s>" or {"content": "<s>", ...}
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content")) return v["content"].get<std::string>();
  return "";
}

}  // namespace

std::string gguf_pre_tokenizer_name(const std::string& path) {
  return gguf_pre_tokenizer_name(read_json_file(path, false), path);
}

std::string gguf_pre_tokenizer_name(const nlohmann::json& tj, const std::string& path) {
  std::vector<std::string> patterns;
  collect_patterns(tj.contains("pre_tokenizer") ? tj["pre_tokenizer"] : json(), patterns, path);
  const bool ignore_merges = tj.at("model").value("ignore_merges", false);
  for (const char* name : kPreCandidates) {
    const PreTokenizerSpec spec = pre_tokenizer_for_gguf(name);
    if (spec.patterns == patterns && spec.ignore_merges == ignore_merges) return name;
  }
  std::string all;
  for (const std::string& p : patterns) all += (all.empty() ? "" : " then ") + p;
  throw Error(path + ": no supported tokenizer.ggml.pre splits with " + (all.empty() ? "no expression" : all) +
                  (ignore_merges ? " (ignore_merges)" : ""),
              LOOM_ERR_UNSUPPORTED);
}

GgufMetadata hf_tokenizer_metadata(const std::string& dir, int64_t n_vocab, const Tokenizer& tok,
                                   const std::vector<int32_t>& eog_ids) {
  const std::string path = dir + "/tokenizer.json";
  const json tj = read_json_file(path, false);
  const json& model = tj.at("model");
  if (model.value("type", "") != "BPE") throw Error(path + ": model.type must be BPE", LOOM_ERR_UNSUPPORTED);

  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  auto place = [&](int64_t id, const std::string& text, TokenType type) {
    if (id < 0 || id > INT32_MAX) throw Error(path + ": token id " + std::to_string(id) + " is out of range");
    if (static_cast<size_t>(id) >= tokens.size()) {
      tokens.resize(static_cast<size_t>(id) + 1);
      types.resize(static_cast<size_t>(id) + 1, -1);
    }
    tokens[static_cast<size_t>(id)] = text;
    types[static_cast<size_t>(id)] = static_cast<int32_t>(type);
  };
  for (const auto& [text, id] : model.at("vocab").items()) place(id.get<int64_t>(), text, TokenType::kNormal);
  for (const json& a : tj.value("added_tokens", json::array()))
    place(a.at("id").get<int64_t>(), a.at("content").get<std::string>(),
          a.value("special", false) ? TokenType::kControl : TokenType::kUserDefined);
  if (static_cast<int64_t>(tokens.size()) < n_vocab) {
    tokens.resize(static_cast<size_t>(n_vocab));
    types.resize(static_cast<size_t>(n_vocab), -1);
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (types[i] >= 0) continue;  // a hole: the embedding has rows the tokenizer never produces
    tokens[i] = "[PAD" + std::to_string(i) + "]";
    types[i] = static_cast<int32_t>(TokenType::kUnused);
  }

  // Merges: "left right" strings, or [left, right] pairs in newer files.
  std::vector<std::string> merges;
  for (const json& m : model.at("merges")) {
    if (m.is_string()) merges.push_back(m.get<std::string>());
    else if (m.is_array() && m.size() == 2) merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    else throw Error(path + ": merge " + m.dump() + " is neither \"a b\" nor [a, b]");
  }

  GgufMetadata md;
  md.emplace_back("tokenizer.ggml.model", GgufValue::of_string("gpt2"));
  md.emplace_back("tokenizer.ggml.pre", GgufValue::of_string(gguf_pre_tokenizer_name(tj, path)));
  md.emplace_back("tokenizer.ggml.tokens", GgufValue::of_strings(tokens));
  md.emplace_back("tokenizer.ggml.token_type", GgufValue::of_i32s(types));
  md.emplace_back("tokenizer.ggml.merges", GgufValue::of_strings(merges));
  if (tok.bos_id() >= 0) md.emplace_back("tokenizer.ggml.bos_token_id", GgufValue::of_u32(static_cast<uint32_t>(tok.bos_id())));
  if (tok.eos_id() >= 0) md.emplace_back("tokenizer.ggml.eos_token_id", GgufValue::of_u32(static_cast<uint32_t>(tok.eos_id())));
  for (int32_t id : eog_ids) {
    if (id == tok.eos_id()) continue;
    md.emplace_back("tokenizer.ggml.eot_token_id", GgufValue::of_u32(static_cast<uint32_t>(id)));
    break;
  }
  const json cfg = read_json_file(dir + "/tokenizer_config.json", true);
  if (cfg.is_object() && cfg.contains("pad_token")) {
    const std::string pad = token_text(cfg["pad_token"]);
    for (size_t i = 0; i < tokens.size() && !pad.empty(); ++i)
      if (tokens[i] == pad && types[i] == static_cast<int32_t>(TokenType::kControl)) {
        md.emplace_back("tokenizer.ggml.padding_token_id", GgufValue::of_u32(static_cast<uint32_t>(i)));
        break;
      }
  }
  // add_bos / add_eos as the loaded tokenizer behaves (tokenizer_config.json or post_processor).
  const std::vector<int32_t> with = tok.encode("a", true), without = tok.encode("a", false);
  const bool add_bos = with.size() > without.size() && tok.bos_id() >= 0 && with.front() == tok.bos_id();
  const bool add_eos = with.size() > without.size() && tok.eos_id() >= 0 && with.back() == tok.eos_id();
  md.emplace_back("tokenizer.ggml.add_bos_token", GgufValue::of_bool(add_bos));
  md.emplace_back("tokenizer.ggml.add_eos_token", GgufValue::of_bool(add_eos));
  return md;
}

}  // namespace loom::convert
