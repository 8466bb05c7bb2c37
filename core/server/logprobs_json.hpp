// The `logprobs` objects of OpenAI responses, from the engine's per-token records:
//   completions: {"tokens": [str], "token_logprobs": [float], "top_logprobs": [{str: float}],
//                 "text_offset": [int]}
//   chat:        {"content": [{"token", "logprob", "bytes", "top_logprobs": [{token, logprob,
//                 bytes}]}]}
// A token's text is its piece as the tokenizer detokenizes it (control tokens rendered). A piece
// that is not whole UTF-8 (a byte-fallback token holding part of a character) is shown as
// "bytes:\xNN..." with its exact bytes in `bytes`, as vLLM does.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/engine/engine_api.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "core/server/json_fields.hpp"

namespace loom {

struct TokenText {
  std::string text;          // always valid UTF-8
  std::vector<int> bytes;    // the piece's raw bytes, 0..255
};

TokenText token_text(const Tokenizer& tokenizer, int32_t token);

// Completions. `text_offset` is where the first token's text starts in the choice's text; it is
// advanced past every token. Completions list the top alternatives plus the sampled token (when
// it is not among them), as vLLM does, so a position holds up to top_n + 1 entries.
Json completion_logprobs_json(const Tokenizer& tokenizer, std::span<const int32_t> tokens,
                              std::span<const RowLogprobs> records, int64_t& text_offset);

// Completions with echo: the prompt's tokens in the same form, the first with a null score and
// null alternatives (nothing precedes it); records[i] scores tokens[i + 1]. Concatenate with
// append_completion_logprobs.
Json prompt_completion_logprobs_json(const Tokenizer& tokenizer, std::span<const int32_t> tokens,
                                     std::span<const RowLogprobs> records, int64_t& text_offset);
// Appends the four arrays of `more` to those of `into`.
void append_completion_logprobs(Json& into, const Json& more);

// vLLM's prompt_logprobs: [null, {"<id>": {"logprob", "rank", "decoded_token"}}, ...], each
// position holding the actual prompt token (rank from records[i].sampled_rank) and its top
// alternatives (ranks 1..k).
Json vllm_prompt_logprobs_json(const Tokenizer& tokenizer, std::span<const int32_t> tokens,
                               std::span<const RowLogprobs> records);

// Chat: exactly the top_n alternatives per token.
Json chat_logprobs_json(const Tokenizer& tokenizer, std::span<const int32_t> tokens,
                        std::span<const RowLogprobs> records);

}  // namespace loom
