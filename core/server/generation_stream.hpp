// One generation request between submit and the end of its response. It submits one engine
// request per prompt, receives the engine's outputs on the connection's strand (the sink only
// posts), and turns them into one JSON response or an SSE stream of chunks; when the client
// goes away it aborts every engine request. The choices arrive interleaved, each output naming
// its index; the response ends when every choice has finished, or at the first that fails (the
// others are then aborted).
//
// Region map of the candidates (choices_), prompts p = 0..P-1, best_of b, n returned:
//   [p * b, (p + 1) * b)  -> prompt p's candidates (engine choice index i at p * b + i)
// Returned choice index: p * n + rank, the candidates of each prompt ranked by cumulative logprob
// when b > n (vLLM's best_of), in engine order otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/engine/engine_api.hpp"
#include "core/server/http_exchange.hpp"
#include "core/server/openai_responses.hpp"

namespace loom {

// A prompt as the response repeats it (echo) or scores it (prompt logprobs).
struct EchoPrompt {
  std::string text;             // the prompt's text (a token prompt detokenized)
  std::vector<int32_t> tokens;  // its ids
};

struct StreamSettings {
  ResponseMeta meta;
  bool stream = false;
  bool include_usage = false;
  int32_t prompt_tokens = 0;  // over every prompt
  int32_t n = 1;              // choices returned per prompt
  int32_t best_of = 1;        // candidates per prompt, >= n; > n only without streaming
  bool logprobs = false;      // the client asked for logprobs
  bool echo = false;          // completions: the prompt before each choice's text (and logprobs)
  bool prompt_logprobs = false;      // vLLM's prompt_logprobs list in each choice
  std::vector<EchoPrompt> prompts;   // [num prompts] when echo or prompt_logprobs
  std::string user;                  // written in the request log line
  ChatOutputSettings chat_output;    // chat: reasoning and tool-call parsing
  std::chrono::milliseconds timeout{0};  // from submit to the end; 0 = none ([server] request_timeout)
};

class GenerationStream : public std::enable_shared_from_this<GenerationStream> {
 public:
  GenerationStream(StreamSettings settings, EngineInterface& engine, size_t num_prompts);

  // On the strand, inside the route handler. The exchange then owns this object. Throws what
  // EngineInterface::submit throws, before anything is sent, so the route can still reply 400
  // (requests already submitted are aborted). Each request has n = settings.best_of.
  static void start(const std::shared_ptr<HttpExchange>& exchange, EngineInterface& engine,
                    StreamSettings settings, std::vector<GenerateRequest> requests);

 private:
  struct Choice {
    std::string text;                   // non-streaming: everything so far
    std::vector<int32_t> tokens;        // with logprobs: every sampled token
    std::vector<RowLogprobs> logprobs;  // ... and its record
    std::vector<RowLogprobs> prompt_logprobs;  // from the engine's first output
    double cumulative_logprob = 0.0;    // sum of the sampled tokens' logprobs (best_of)
    int64_t text_offset = 0;            // completions logprobs: where the next token starts
    int32_t completion_tokens = 0;
    bool started = false;               // streaming: its first chunk is out (echo sent)
    std::unique_ptr<ChatOutput> chat;   // streaming chat with reasoning or tools: the parser
    std::optional<FinishReason> finish;
  };

  void on_output(size_t prompt, GenerationOutput&& out);
  void on_stream_output(HttpExchange& exchange, size_t prompt, Choice& choice, GenerationOutput& out);
  // Streaming chat through the reasoning / tool-call parsers: deltas, calls, then the finish.
  void stream_parsed_chat(HttpExchange& exchange, int32_t index, Choice& choice, GenerationOutput& out);
  bool parses_chat() const;
  void fail(HttpExchange& exchange, const GenerationOutput& out);
  // Ends the response now with `error` (a stream: an error event, then [DONE]) and aborts the
  // engine requests: the request timed out, or the server stops.
  void cut(const ApiError& error);
  void end_with_error(HttpExchange& exchange, const ApiError& error);
  void end_stream_if_done(HttpExchange& exchange);  // after every choice finished: usage, [DONE]
  void reply_whole(HttpExchange& exchange);
  // The logprobs object of some tokens of one choice (advancing its text offset), or null;
  // with echo, the prompt's scores first when `with_prompt`.
  Json logprobs_json(Choice& choice, size_t prompt, bool with_prompt, std::span<const int32_t> tokens,
                     std::span<const RowLogprobs> records);
  Json prompt_logprobs_json(const Choice& choice, size_t prompt) const;
  void write_chunk(HttpExchange& exchange, const ChunkChoice& chunk);
  void abort_all();
  void log_finished() const;
  Usage usage() const;

  StreamSettings settings_;
  EngineInterface& engine_;
  std::weak_ptr<HttpExchange> exchange_;
  std::vector<uint64_t> request_ids_;  // [num prompts]
  int32_t prompt_tokens_ = 0;
  std::vector<Choice> choices_;  // [num prompts * best_of], see the region map
  int32_t num_finished_ = 0;
  bool finished_ = false;  // the response is complete (or failed)
  std::shared_ptr<void> timeout_;  // the request_timeout wait; dropped (cancelled) with this object
};

}  // namespace loom
