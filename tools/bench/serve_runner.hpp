// Runs a benchmark against a server: conversations start at their arrival offsets, each request
// waits for one of max_concurrency slots, turns of a conversation go one after another. All on
// one thread (an io_context with coroutines), so the recorded times are not skewed by locking.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tools/bench/http_stream_client.hpp"
#include "tools/bench/prompt_text.hpp"
#include "tools/bench/request_body.hpp"
#include "tools/bench/request_record.hpp"
#include "tools/bench/workload.hpp"

namespace loom::bench {

struct RunPlan {
  ServerTarget target;
  std::string path = "/v1/completions";
  BodyOptions body;
  std::vector<Conversation> conversations;
  std::vector<double> arrivals;  // [conversations.size()] seconds after the start
  size_t max_concurrency = 0;    // 0: no limit
  bool progress = false;
};

struct RunResult {
  std::vector<RequestRecord> records;  // one per turn, conversation by conversation
  double duration_s = 0;               // from the start to the last request's end
};

RunResult run_benchmark(const RunPlan& plan, const PromptText& text);

}  // namespace loom::bench
