// A tiny random BERT sentence encoder written by tests into a directory, as sentence-transformers
// lays one out (config.json, model.safetensors, tokenizer.json with a 16-token WordPiece
// vocabulary, 1_Pooling/config.json, modules.json with Normalize, sentence_bert_config.json).
#pragma once

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace loom::test::tiny_bert {

namespace fs = std::filesystem;
using nlohmann::json;

inline constexpr int kDim = 8, kHeads = 2, kFfn = 12, kLayers = 2, kPositions = 16, kTypes = 2;

inline const std::vector<std::string> kVocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", ",",
                                         "!",     "un",    "##aff", "##able", "the",  "cafe",  "a",     "##s"};

// name -> (shape, values): the checkpoint, also read back by the reference forward.
using Tensors = std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>>;

inline Tensors random_bert(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  Tensors t;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float offset = 0.0f) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = offset + u(rng);
    t[name] = {std::move(shape), std::move(v)};
  };
  add("embeddings.word_embeddings.weight", {static_cast<int64_t>(kVocab.size()), kDim});
  add("embeddings.position_embeddings.weight", {kPositions, kDim});
  add("embeddings.token_type_embeddings.weight", {kTypes, kDim});
  add("embeddings.LayerNorm.weight", {kDim}, 1.0f);
  add("embeddings.LayerNorm.bias", {kDim});
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    for (const char* m : {"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"}) {
      add(p + m + ".weight", {kDim, kDim});
      add(p + m + ".bias", {kDim});
    }
    add(p + "attention.output.LayerNorm.weight", {kDim}, 1.0f);
    add(p + "attention.output.LayerNorm.bias", {kDim});
    add(p + "intermediate.dense.weight", {kFfn, kDim});
    add(p + "intermediate.dense.bias", {kFfn});
    add(p + "output.dense.weight", {kDim, kFfn});
    add(p + "output.dense.bias", {kDim});
    add(p + "output.LayerNorm.weight", {kDim}, 1.0f);
    add(p + "output.LayerNorm.bias", {kDim});
  }
  return t;
}

inline void write_safetensors(const fs::path& file, const Tensors& t) {
  json header = json::object();
  std::vector<uint8_t> data;
  for (const auto& [name, tensor] : t) {
    const size_t begin = data.size(), bytes = tensor.second.size() * sizeof(float);
    data.resize(begin + bytes);
    std::memcpy(data.data() + begin, tensor.second.data(), bytes);
    header[name] = {{"dtype", "F32"}, {"shape", tensor.first}, {"data_offsets", {begin, begin + bytes}}};
  }
  const std::string h = header.dump();
  const uint64_t n = h.size();
  std::ofstream out(file, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

// Writes the whole directory (created if needed) and returns its tensors.
inline Tensors write_dir(const fs::path& dir, uint32_t seed = 21) {
  fs::create_directories(dir / "1_Pooling");
  Tensors tensors = random_bert(seed);
  write_safetensors(dir / "model.safetensors", tensors);
  std::ofstream(dir / "config.json") << json{{"architectures", {"BertModel"}}, {"model_type", "bert"},
                                              {"hidden_size", kDim}, {"num_hidden_layers", kLayers},
                                              {"num_attention_heads", kHeads}, {"intermediate_size", kFfn},
                                              {"vocab_size", kVocab.size()}, {"max_position_embeddings", kPositions},
                                              {"type_vocab_size", kTypes}, {"layer_norm_eps", 1e-12},
                                              {"hidden_act", "gelu"}, {"position_embedding_type", "absolute"}}
                                              .dump();
  json vocab = json::object();
  for (size_t i = 0; i < kVocab.size(); ++i) vocab[kVocab[i]] = i;
  json added = json::array();
  for (int i = 0; i < 5; ++i) added.push_back({{"id", i}, {"content", kVocab[i]}, {"special", true}});
  std::ofstream(dir / "tokenizer.json") << json{
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true},
                      {"strip_accents", nullptr}, {"lowercase", true}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor", {{"type", "TemplateProcessing"},
                          {"single", {{{"SpecialToken", {{"id", "[CLS]"}, {"type_id", 0}}}},
                                      {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                      {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}}}}}},
      {"model", {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
                 {"max_input_chars_per_word", 100}, {"vocab", vocab}}}}.dump();
  std::ofstream(dir / "1_Pooling/config.json") << R"({"pooling_mode_mean_tokens": true})";
  std::ofstream(dir / "modules.json") << R"([{"type": "sentence_transformers.models.Transformer"},
    {"type": "sentence_transformers.models.Pooling"}, {"type": "sentence_transformers.models.Normalize"}])";
  std::ofstream(dir / "sentence_bert_config.json") << R"({"max_seq_length": 12})";
  return tensors;
}

}  // namespace loom::test::tiny_bert
