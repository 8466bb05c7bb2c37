#include "core/tokenizer/wordpiece_json.hpp"

#include "core/common/error.hpp"
#include "core/tokenizer/wordpiece_tokenizer.hpp"

namespace loom {
namespace {

using nlohmann::json;

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // U+2581, WordPieceVocab's word-start mark

void read_normalizer(const json& n, WordPieceVocab& vocab) {
  if (n.is_null()) {
    vocab.lowercase = false;
    return;
  }
  const std::string type = n.value("type", "");
  if (type != "BertNormalizer")
    throw Error("WordPiece normalizer '" + type + "' is not supported (supported: BertNormalizer)", LOOM_ERR_UNSUPPORTED);
  if (!n.value("clean_text", true) || !n.value("handle_chinese_chars", true))
    throw Error("BertNormalizer with clean_text or handle_chinese_chars off is not supported", LOOM_ERR_UNSUPPORTED);
  vocab.lowercase = n.value("lowercase", true);
  // strip_accents null follows lowercase (BERT's rule); WordPieceTokenizer ties the two.
  const json strip = n.value("strip_accents", json());
  if (!strip.is_null() && strip.get<bool>() != vocab.lowercase)
    throw Error("BertNormalizer with strip_accents different from lowercase is not supported", LOOM_ERR_UNSUPPORTED);
}

void read_post_processor(const json& p, WordPieceVocab& vocab) {
  vocab.add_cls = vocab.add_sep = false;
  if (p.is_null()) return;
  const std::string type = p.value("type", "");
  if (type == "BertProcessing") {
    vocab.add_cls = vocab.add_sep = true;
    return;
  }
  if (type != "TemplateProcessing")
    throw Error("WordPiece post_processor '" + type + "' is not supported (supported: TemplateProcessing, "
                "BertProcessing)", LOOM_ERR_UNSUPPORTED);
  bool seen_text = false;
  for (const json& piece : p.at("single")) {
    if (piece.contains("Sequence")) {
      seen_text = true;
      continue;
    }
    const std::string id = piece.at("SpecialToken").at("id").get<std::string>();
    const int32_t want = seen_text ? vocab.sep_id : vocab.cls_id;
    if (want < 0 || vocab.tokens[static_cast<size_t>(want)] != id)
      throw Error("post_processor template puts '" + id + "' " + (seen_text ? "after" : "before") +
                  " the text; only [CLS] text [SEP] is supported", LOOM_ERR_UNSUPPORTED);
    (seen_text ? vocab.add_sep : vocab.add_cls) = true;
  }
}

}  // namespace

std::unique_ptr<Tokenizer> wordpiece_from_tokenizer_json(const json& j, const json& config) {
  const json& model = j.at("model");
  const std::string prefix = model.value("continuing_subword_prefix", "##");
  if (prefix != "##")
    throw Error("WordPiece continuing_subword_prefix '" + prefix + "' is not supported (##)", LOOM_ERR_UNSUPPORTED);
  if (const json pre = j.value("pre_tokenizer", json()); !pre.is_null() && pre.value("type", "") != "BertPreTokenizer")
    throw Error("WordPiece pre_tokenizer '" + pre.value("type", "") + "' is not supported (BertPreTokenizer)",
                LOOM_ERR_UNSUPPORTED);
  WordPieceVocab vocab;
  int64_t max_id = -1;
  for (const auto& [text, id] : model.at("vocab").items()) max_id = std::max<int64_t>(max_id, id.get<int64_t>());
  const json added = j.value("added_tokens", json::array());
  for (const json& a : added) max_id = std::max<int64_t>(max_id, a.at("id").get<int64_t>());
  vocab.tokens.resize(static_cast<size_t>(max_id + 1));
  vocab.types.assign(vocab.tokens.size(), TokenType::kUnused);
  for (const auto& [text, id] : model.at("vocab").items()) {
    const auto i = id.get<size_t>();
    // WordPieceVocab spells a word start "\u2581piece" and a continuation "piece".
    const bool continuation = text.size() > prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
    vocab.tokens[i] = continuation ? text.substr(prefix.size()) : std::string(kWordStart) + text;
    vocab.types[i] = TokenType::kNormal;
  }
  for (const json& a : added) {
    const auto i = a.at("id").get<size_t>();
    vocab.tokens[i] = a.at("content").get<std::string>();
    vocab.types[i] = a.value("special", false) ? TokenType::kControl : TokenType::kUserDefined;
  }
  const auto find = [&](const char* key, const char* fallback) -> int32_t {
    std::string text = fallback;
    if (config.contains(key) && config[key].is_string()) text = config[key].get<std::string>();
    for (size_t i = 0; i < vocab.tokens.size(); ++i)
      if (vocab.tokens[i] == text && vocab.types[i] != TokenType::kNormal) return static_cast<int32_t>(i);
    const auto it = model.at("vocab").find(text);
    return it == model.at("vocab").end() ? -1 : it->get<int32_t>();
  };
  vocab.unk_id = find("unk_token", model.value("unk_token", "[UNK]").c_str());
  vocab.cls_id = find("cls_token", "[CLS]");
  vocab.sep_id = find("sep_token", "[SEP]");
  vocab.pad_id = find("pad_token", "[PAD]");
  vocab.mask_id = find("mask_token", "[MASK]");
  vocab.max_word_chars = model.value("max_input_chars_per_word", 100);
  read_normalizer(j.value("normalizer", json()), vocab);
  read_post_processor(j.value("post_processor", json()), vocab);
  return std::make_unique<WordPieceTokenizer>(std::move(vocab));
}

}  // namespace loom
