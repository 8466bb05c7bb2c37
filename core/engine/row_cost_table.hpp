// What a step with no prompt tokens (decodes and verifications only) costs, by its number of
// rows, as measured: how adaptive speculation prices the steps it chooses between.
//
// Such a step reads every weight once whatever its row count until the rows make the GEMMs
// compute-bound (a kernel's own count: 8 rows for the none plugin's AVX-512 decode), after which
// each row costs about what a prompt token does. The linear step-time model (step_time_model.hpp)
// is fitted over every step, prompt chunks included, and cannot be right on both sides of that
// bend: at 4 clients it priced 4 decodes at about 3x their measured time, drafting looked cheap,
// and output fell to 0.72x of speculation off (tools/bench/speculative.sh, SmolLM2 f16 + Q4_1).
//
// The table keeps, per row count, a running mean of the measured times (the first sample, then
// each new one weighted kWeight), and predicts a count from them:
//   * between measured counts, by interpolation;
//   * outside them, at a per-row price: the caller's (the step model's prompt-token cost) or
//     the slope between the two measured counts at that end, whichever is steeper (a fitted
//     coefficient can be low; past the bend the slope is the compute-bound cost). Above the
//     largest count a row more adds it; below the smallest a row fewer takes it off, down to
//     that count's time scaled in proportion;
//   * never below the time of a smaller measured count: neighbouring means are noisy (at 16
//     clients 11 rows measured 43.6 ms and 10 rows 45.6), and extra rows that looked free made
//     probes pay.
// Each errs on the safe side for speculation: a larger step is not priced below its cost, nor a
// smaller one (drafting off) above it. choose_k also runs a batch once without drafts before
// drafting for it (measured()): once drafting is on for every request the step without drafts is
// never measured, and from the linear model it was priced at 35 ms for 3 decodes that take 12.
// Context length is not a key: a row count's mean follows the contexts as they grow.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace loom {

class RowCostTable {
 public:
  static constexpr int32_t kMaxRows = 4096;  // larger steps are not recorded
  static constexpr double kWeight = 0.125;

  // One measured step of `rows` rows with no prompt tokens.
  void observe(int32_t rows, int64_t wall_us);
  // Predicted microseconds of such a step (see above); nullopt before the first sample.
  std::optional<double> predict_us(int32_t rows, double per_extra_row_us) const;
  // Whether a step of exactly `rows` rows was measured.
  bool measured(int32_t rows) const;
  int64_t samples() const { return samples_; }

 private:
  std::vector<double> mean_us_;   // [kMaxRows + 1] by row count; valid where measured
  std::vector<int32_t> measured_; // row counts with a mean, ascending
  int64_t samples_ = 0;
};

}  // namespace loom
