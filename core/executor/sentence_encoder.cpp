#include "core/executor/sentence_encoder.hpp"

#include <algorithm>
#include <filesystem>

#include "core/common/error.hpp"
#include "core/executor/hf_model.hpp"
#include "core/tokenizer/tokenizer_json.hpp"

namespace loom {

std::unique_ptr<SentenceEncoder> SentenceEncoder::open(const std::string& dir, ThreadPool& threads) {
  if (!std::filesystem::is_directory(dir))
    throw Error(dir + ": an embedding model is a Hugging Face directory (config.json, model.safetensors, "
                "tokenizer.json)", LOOM_ERR_NOT_FOUND);
  std::unique_ptr<SentenceEncoder> e(new SentenceEncoder());
  e->path_ = dir;
  const nlohmann::json config = read_json_file(dir + "/config.json", false);
  const BertHparams hp = read_bert_hparams(dir, config);

  Pooling pooling = Pooling::kMean;
  const nlohmann::json pool = read_json_file(dir + "/1_Pooling/config.json", true);
  if (pool.is_object()) {
    const bool mean = pool.value("pooling_mode_mean_tokens", false), cls = pool.value("pooling_mode_cls_token", false);
    const bool other = pool.value("pooling_mode_max_tokens", false) || pool.value("pooling_mode_mean_sqrt_len_tokens", false);
    if (mean == cls || other)
      throw Error(dir + "/1_Pooling/config.json: exactly one of pooling_mode_mean_tokens and pooling_mode_cls_token "
                  "must be set (max and sqrt-len pooling are not supported)", LOOM_ERR_UNSUPPORTED);
    pooling = cls ? Pooling::kCls : Pooling::kMean;
  }
  // Without modules.json there is no sentence-transformers pipeline to follow: normalise, as
  // embedding servers do by default.
  const nlohmann::json modules = read_json_file(dir + "/modules.json", true);
  if (modules.is_array()) {
    e->normalize_ = std::any_of(modules.begin(), modules.end(), [](const nlohmann::json& m) {
      return m.is_object() && m.value("type", "").find("Normalize") != std::string::npos;
    });
  }
  e->max_tokens_ = hp.max_positions;
  const nlohmann::json st = read_json_file(dir + "/sentence_bert_config.json", true);
  if (st.is_object() && st.contains("max_seq_length") && st["max_seq_length"].is_number_integer())
    e->max_tokens_ = std::clamp(st["max_seq_length"].get<int32_t>(), 1, hp.max_positions);

  const SafetensorsCheckpoint ckpt = SafetensorsCheckpoint::open_dir(dir);
  e->encoder_ = std::make_unique<BertEncoder>(load_bert_weights(ckpt, hp), pooling, e->normalize_, threads);
  e->tokenizer_ = load_tokenizer_json(dir);
  if (e->tokenizer_->vocab_size() > hp.vocab_size)
    throw Error(dir + "/tokenizer.json: " + std::to_string(e->tokenizer_->vocab_size()) +
                " tokens, more than config.json's vocab_size " + std::to_string(hp.vocab_size));
  return e;
}

std::vector<int32_t> SentenceEncoder::tokenize(std::string_view text) const {
  return tokenizer_->encode(text, /*add_special=*/true, /*parse_special=*/true);
}

}  // namespace loom
