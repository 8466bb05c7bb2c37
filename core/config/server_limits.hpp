// The [server] keys that bound what one client can make the server do: JSON shape, connection
// timeouts and counts, buffered output, drain, the security switches (metrics, CORS, Content-Type,
// special tokens in client text) and TGI-style request limits. Every key has a safe default and is
// documented in configs/default.toml and the README's "Limits and security" section.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom {

struct ServerLimits {
  // Request JSON, checked on the raw body before anything is parsed or templated (400).
  int32_t max_json_depth = 64;          // nesting of arrays/objects
  int64_t max_json_elements = 262144;   // array elements + object members, over the whole body
  // Connections (seconds; 0 = no limit).
  int32_t header_timeout = 10;   // to receive a request's header once its first byte came
  int32_t body_timeout = 60;     // to receive its body
  int32_t idle_timeout = 60;     // a keep-alive connection with no request in progress
  int32_t write_timeout = 60;    // a reply making no progress to the client (nginx's send_timeout)
  int32_t max_connections = 1024;  // more are answered 503 and closed
  int64_t max_unsent_bytes = 16LL << 20;    // output queued for a slow reader before it is cut
  int64_t max_response_bytes = 64LL << 20;  // one response's body; larger is a 400 / a cut stream
  // SIGTERM: seconds to let requests finish before cutting them; under the 30 s stop timeouts of
  // tools/deploy (docker stop -t 30, systemd TimeoutStopSec) so the cut itself is not killed.
  int32_t drain_timeout = 25;
  int32_t prepare_threads = 2;  // parse + template + tokenize, off the HTTP threads
  // Security switches.
  bool metrics_public = false;  // true: /metrics answers without the API key
  std::vector<std::string> cors_allow_origins;  // empty = no CORS headers; "*" = any origin
  bool require_json_content_type = true;        // POST bodies must say application/json (415)
  bool special_tokens_in_chat = false;   // special-token text in chat message content is text
  bool special_tokens_in_prompt = false;  // ... and in a /v1/completions prompt
  // Request limits (TGI's); 0 = derived from max_model_len.
  int32_t max_input_tokens = 0;   // prompt tokens; 0 = max_model_len - 1
  int32_t max_total_tokens = 0;   // prompt + max_tokens; 0 = max_model_len
  int32_t max_n = 16;             // choices
  int32_t max_best_of = 16;       // candidates
  int32_t max_stop_sequences = 16;
  int32_t max_stop_length = 256;  // bytes of one stop string
  int32_t max_logprobs = 20;      // logprobs / top_logprobs / prompt_logprobs
  int32_t request_timeout = 600;  // seconds from arrival to the last token (queue + compute)
  bool operator==(const ServerLimits&) const = default;
};

}  // namespace loom
