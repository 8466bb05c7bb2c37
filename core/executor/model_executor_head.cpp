// The classifier head: the final norm's rows through the output projection. A row sampled
// greedily or from its top_k (BuiltBatch::logits_top_k) needs only its best entries; with a
// 128k-262k vocabulary the head is most of a small model's decode arithmetic, and a plugin that
// offers linear_top_k (quantization interface 1.5) finds those entries without computing every
// output exactly (quantization none: a bf16 screen under an error bound, exact values for the
// candidates). The entries carry the bits the whole row would, so sampling does not change.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/common/error.hpp"
#include "core/executor/executor_scratch.hpp"
#include "core/executor/model_executor.hpp"
#include "loom/sdk_core.hpp"

namespace loom {
namespace {

// Copies rows `rows` of src [*, width] to dst [rows.size(), width].
void gather(const float* src, int64_t width, const std::vector<int32_t>& rows, float* dst) {
  for (size_t i = 0; i < rows.size(); ++i)
    std::copy_n(src + int64_t{rows[i]} * width, width, dst + static_cast<int64_t>(i) * width);
}

}  // namespace

bool ModelExecutor::head_selects() const {
  return sdk::present(*quant_.vt, &loom_quantization_vtable::linear_top_k) && !(hp_.final_logit_softcap > 0.0f);
}

void ModelExecutor::size_selection(const BuiltBatch& batch, HeadSelection& selection) const {
  int32_t widest = 0;
  if (head_selects())
    for (int32_t k : batch.logits_top_k) widest = std::max(widest, std::min(k, hp_.vocab_size));
  selection.stride = widest;
  selection.ids.resize(static_cast<size_t>(batch.num_logits()) * static_cast<size_t>(widest));
  selection.values.resize(selection.ids.size());
}

void ModelExecutor::head(const BuiltBatch& batch, float* fin, std::vector<float>& logits, HeadSelection* selection) {
  const int64_t dim = hp_.dim, vocab = hp_.vocab_size, n_logits = batch.num_logits();
  if (selection != nullptr) size_selection(batch, *selection);
  const int32_t widest = selection != nullptr ? selection->stride : 0;
  if (widest == 0) {
    linear(output_, fin, n_logits, dim, logits.data(), vocab);
    if (hp_.final_logit_softcap > 0.0f) {  // Gemma 2 style: cap * tanh(logit / cap)
      const float cap = hp_.final_logit_softcap;
      for (float& z : logits) z = cap * std::tanh(z / cap);
    }
    return;
  }
  whole_rows_.clear();
  picked_rows_.clear();
  for (int32_t i = 0; i < static_cast<int32_t>(n_logits); ++i)
    (batch.logits_top_k[static_cast<size_t>(i)] > 0 ? picked_rows_ : whole_rows_).push_back(i);
  if (!whole_rows_.empty()) {
    const auto rows = static_cast<int64_t>(whole_rows_.size());
    float* x = ensure(head_x_, rows * dim);
    float* y = ensure(head_y_, rows * vocab);
    gather(fin, dim, whole_rows_, x);
    linear(output_, x, rows, dim, y, vocab);
    for (size_t i = 0; i < whole_rows_.size(); ++i)
      std::copy_n(y + static_cast<int64_t>(i) * vocab, vocab, logits.data() + int64_t{whole_rows_[i]} * vocab);
  }
  // Every picked row asks the plugin for `widest`; a row's best k are the first k of those.
  const auto rows = static_cast<int64_t>(picked_rows_.size());
  float* x = ensure(head_x_, rows * dim);
  gather(fin, dim, picked_rows_, x);
  head_ids_.resize(static_cast<size_t>(rows * widest));
  head_values_.resize(head_ids_.size());
  const loom_tensor_view xv = f32_view(x, {rows, dim});
  ErrorBuffer err;
  loom_error_buf eb = err.buf();
  const loom_status s =
      quant_.vt->linear_top_k(quant_.self, output_, &xv, widest, head_ids_.data(), head_values_.data(), &eb);
  if (s != LOOM_OK) throw Error("quantization plugin linear_top_k failed: " + err.str(), s);
  for (size_t i = 0; i < picked_rows_.size(); ++i) {
    const size_t from = i * static_cast<size_t>(widest), into = static_cast<size_t>(picked_rows_[i]) * widest;
    std::copy_n(head_ids_.begin() + static_cast<std::ptrdiff_t>(from), widest, selection->ids.begin() + static_cast<std::ptrdiff_t>(into));
    std::copy_n(head_values_.begin() + static_cast<std::ptrdiff_t>(from), widest,
                selection->values.begin() + static_cast<std::ptrdiff_t>(into));
  }
}

}  // namespace loom
