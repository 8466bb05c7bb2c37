// The requests a run sends, as conversations: single-turn workloads (random, shared-prefix,
// sharegpt) give one turn each; multi-turn gives several, sent one after another with the
// earlier turns and their actual answers in the context. Every workload is deterministic in
// its seed.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tools/bench/prompt_text.hpp"

namespace loom::bench {

struct PromptTurn {
  std::string text;        // the user's message
  int64_t max_tokens = 0;  // output length asked for
};

struct Conversation {
  std::string system;  // a system prompt (shared-prefix); empty: none
  std::vector<PromptTurn> turns;
  // A request class's (request_class.hpp): sent as `priority` and `slo` when set.
  int32_t request_class = -1;
  std::optional<int64_t> priority;
  std::optional<double> slo_ttft_ms, slo_tpot_ms;
};

// Lengths drawn uniformly from [len * (1 - ratio), len * (1 + ratio)], as vLLM's random dataset.
struct RandomOptions {
  int64_t input_len = 1024;
  int64_t output_len = 128;
  double range_ratio = 0.0;  // in [0, 1)
  int64_t prefix_len = 0;    // a random prefix shared by every prompt, before its own text
};

struct SharedPrefixOptions {
  int64_t num_groups = 4;
  int64_t prefix_len = 512;  // the system prompt each group's prompts share
  int64_t suffix_len = 64;   // each prompt's own question
  int64_t output_len = 64;
};

struct MultiTurnOptions {
  int64_t num_turns = 4;
  int64_t input_len = 128;  // each user turn
  int64_t output_len = 64;  // each answer
};

// ShareGPT's filter (as vLLM): prompt and answer of at least 4 tokens, prompt at most 1024 and
// prompt + answer at most 2048.
struct ShareGptOptions {
  std::string path;
};

std::vector<Conversation> random_workload(size_t n, const RandomOptions& options,
                                          const PromptText& text, uint64_t seed);
// Prompt i belongs to group i % num_groups.
std::vector<Conversation> shared_prefix_workload(size_t n, const SharedPrefixOptions& options,
                                                 const PromptText& text, uint64_t seed);
// n conversations of num_turns turns each.
std::vector<Conversation> multi_turn_workload(size_t n, const MultiTurnOptions& options,
                                              const PromptText& text, uint64_t seed);
// n conversations sampled (seeded shuffle, repeated when the file has fewer) from the file.
// Throws loom::Error naming the file and what is wrong with it.
std::vector<Conversation> sharegpt_workload(size_t n, const ShareGptOptions& options,
                                            const PromptText& text, uint64_t seed);

// Throws loom::Error naming `what` unless 0 <= ratio < 1 and len > 0.
int64_t draw_length(int64_t len, double ratio, std::mt19937_64& rng, const char* what);

}  // namespace loom::bench
