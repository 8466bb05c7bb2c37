#include "core/engine/logits_processors.hpp"

#include <limits>

namespace loom {
namespace {

bool in_row(int32_t t, std::span<float> row) { return t >= 0 && static_cast<size_t>(t) < row.size(); }

void ban(std::span<float> row, std::span<const int32_t> ids) {
  for (int32_t t : ids)
    if (in_row(t, row)) row[static_cast<size_t>(t)] = -std::numeric_limits<float>::infinity();
}

}  // namespace

void apply_logits_processors(std::span<float> row, const LogitsProcessing& p, std::span<const int32_t> prompt,
                             std::span<const int32_t> output, std::span<const int32_t> eog_ids,
                             std::vector<int32_t>& counts) {
  if (static_cast<int32_t>(output.size()) < p.min_tokens) {
    ban(row, eog_ids);
    ban(row, p.stop_token_ids);
  }
  for (const auto& [t, bias] : p.logit_bias)
    if (in_row(t, row)) row[static_cast<size_t>(t)] += bias;

  if (p.repetition_penalty != 1.0f) {
    // Each distinct token once: counts marks the ones already penalised.
    auto penalise = [&](int32_t t) {
      if (!in_row(t, row) || counts[static_cast<size_t>(t)] != 0) return;
      counts[static_cast<size_t>(t)] = 1;
      float& l = row[static_cast<size_t>(t)];
      l = l > 0.0f ? l / p.repetition_penalty : l * p.repetition_penalty;
    };
    for (int32_t t : prompt) penalise(t);
    for (int32_t t : output) penalise(t);
    for (int32_t t : prompt)
      if (in_row(t, row)) counts[static_cast<size_t>(t)] = 0;
    for (int32_t t : output)
      if (in_row(t, row)) counts[static_cast<size_t>(t)] = 0;
  }

  if (p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f) {
    for (int32_t t : output)
      if (in_row(t, row)) ++counts[static_cast<size_t>(t)];
    for (int32_t t : output) {
      if (!in_row(t, row)) continue;
      int32_t& c = counts[static_cast<size_t>(t)];
      if (c == 0) continue;  // this token was already done
      float& l = row[static_cast<size_t>(t)];
      l -= p.frequency_penalty * static_cast<float>(c);  // two subtractions, as vLLM's tensors do
      l -= p.presence_penalty;
      c = 0;
    }
  }
}

}  // namespace loom
