#include "core/server/logprobs_json.hpp"

#include <algorithm>
#include <cstdio>

#include "core/tokenizer/utf8.hpp"

namespace loom {
namespace {

Json logprob_value(float logprob) {
  // JSON has no -Infinity: a token the model gives no mass is reported at the float minimum,
  // as vLLM clamps it.
  return logprob < -3.4e38f ? Json(-9999.0) : Json(static_cast<double>(logprob));
}

Json chat_entry(const Tokenizer& tokenizer, int32_t token, float logprob) {
  TokenText t = token_text(tokenizer, token);
  return Json{{"token", std::move(t.text)}, {"logprob", logprob_value(logprob)}, {"bytes", std::move(t.bytes)}};
}

}  // namespace

TokenText token_text(const Tokenizer& tokenizer, int32_t token) {
  const std::string piece = tokenizer.token_to_piece(token, /*render_special=*/true);
  TokenText out;
  out.bytes.reserve(piece.size());
  for (unsigned char c : piece) out.bytes.push_back(c);
  if (utf8_is_valid(piece)) {
    out.text = piece;
    return out;
  }
  out.text = "bytes:";
  for (unsigned char c : piece) {
    char hex[5];
    std::snprintf(hex, sizeof(hex), "\\x%02x", c);
    out.text += hex;
  }
  return out;
}

Json completion_logprobs_json(const Tokenizer& tokenizer, std::span<const int32_t> tokens,
                              std::span<const RowLogprobs> records, int64_t& text_offset) {
  Json texts = Json::array(), values = Json::array(), tops = Json::array(), offsets = Json::array();
  for (size_t i = 0; i < records.size() && i < tokens.size(); ++i) {
    const RowLogprobs& r = records[i];
    TokenText t = token_text(tokenizer, tokens[i]);
    offsets.push_back(text_offset);
    text_offset += static_cast<int64_t>(t.text.size());
    values.push_back(logprob_value(r.sampled.logprob));
    Json top = Json::object();
    for (const TokenLogprob& alt : r.top) {
      std::string key = token_text(tokenizer, alt.token).text;
      if (!top.contains(key)) top[key] = logprob_value(alt.logprob);
    }
    if (!top.contains(t.text)) top[t.text] = logprob_value(r.sampled.logprob);
    tops.push_back(std::move(top));
    texts.push_back(std::move(t.text));
  }
  return Json{{"tokens", std::move(texts)},
              {"token_logprobs", std::move(values)},
              {"top_logprobs", std::move(tops)},
              {"text_offset", std::move(offsets)}};
}

Json prompt_completion_logprobs_json(const Tokenizer& tokenizer, std::span<const int32_t> tokens,
                                     std::span<const RowLogprobs> records, int64_t& text_offset) {
  Json out{{"tokens", Json::array()}, {"token_logprobs", Json::array()}, {"top_logprobs", Json::array()},
           {"text_offset", Json::array()}};
  if (tokens.empty()) return out;
  TokenText first = token_text(tokenizer, tokens[0]);
  out["text_offset"].push_back(text_offset);
  text_offset += static_cast<int64_t>(first.text.size());
  out["tokens"].push_back(std::move(first.text));
  out["token_logprobs"].push_back(nullptr);
  out["top_logprobs"].push_back(nullptr);
  const size_t scored = std::min(records.size(), tokens.size() - 1);
  append_completion_logprobs(out, completion_logprobs_json(tokenizer, tokens.subspan(1, scored),
                                                           records.first(scored), text_offset));
  return out;
}

void append_completion_logprobs(Json& into, const Json& more) {
  for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
    for (const Json& v : more.at(key)) into[key].push_back(v);
  }
}

Json vllm_prompt_logprobs_json(const Tokenizer& tokenizer, std::span<const int32_t> tokens,
                               std::span<const RowLogprobs> records) {
  Json out = Json::array();
  if (tokens.empty()) return out;
  out.push_back(nullptr);
  for (size_t i = 0; i < records.size() && i + 1 < tokens.size(); ++i) {
    const RowLogprobs& r = records[i];
    Json position = Json::object();
    auto entry = [&](int32_t token, float logprob, int32_t rank) {
      position[std::to_string(token)] = Json{{"logprob", logprob_value(logprob)},
                                             {"rank", rank},
                                             {"decoded_token", token_text(tokenizer, token).text}};
    };
    entry(r.sampled.token, r.sampled.logprob, r.sampled_rank);
    for (size_t k = 0; k < r.top.size(); ++k) {
      if (r.top[k].token != r.sampled.token) entry(r.top[k].token, r.top[k].logprob, static_cast<int32_t>(k + 1));
    }
    out.push_back(std::move(position));
  }
  return out;
}

Json chat_logprobs_json(const Tokenizer& tokenizer, std::span<const int32_t> tokens,
                        std::span<const RowLogprobs> records) {
  Json content = Json::array();
  for (size_t i = 0; i < records.size() && i < tokens.size(); ++i) {
    const RowLogprobs& r = records[i];
    Json entry = chat_entry(tokenizer, tokens[i], r.sampled.logprob);
    Json top = Json::array();
    for (const TokenLogprob& alt : r.top) top.push_back(chat_entry(tokenizer, alt.token, alt.logprob));
    entry["top_logprobs"] = std::move(top);
    content.push_back(std::move(entry));
  }
  return Json{{"content", std::move(content)}};
}

}  // namespace loom
