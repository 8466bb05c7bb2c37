// The timeline of one benchmark request as the client saw it. Times are seconds since the start
// of the measured run (one steady clock), so every metric is a pure function of these records.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loom::bench {

struct RequestRecord {
  int32_t conversation = 0;  // index of the conversation (= the prompt for single-turn workloads)
  int32_t turn = 0;          // turn within the conversation
  int32_t request_class = -1;  // index into --class, or -1
  double start = 0;          // when the request was started (before connecting)
  double end = 0;            // when its response stream ended
  std::vector<double> token_times;  // arrival of each chunk carrying a non-empty token delta
  int64_t client_prompt_tokens = 0;          // the prompt length the workload built
  std::optional<int64_t> usage_prompt_tokens;      // from the server's usage chunk
  std::optional<int64_t> usage_completion_tokens;  // from the server's usage chunk
  bool success = false;
  std::string error;           // why it failed; empty on success
  std::string generated_text;  // the answer (multi-turn feeds it back); not reported
};

}  // namespace loom::bench
