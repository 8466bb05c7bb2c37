#include "core/engine/draft_model.hpp"

#include <algorithm>
#include <cstring>

#include "core/common/error.hpp"
#include "core/common/logging.hpp"
#include "core/engine/quantization_choice.hpp"

namespace loom {

DraftModel::DraftModel(const std::string& path, const DraftModelOptions& options, PluginHost& host,
                       ThreadPool& threads)
    : model_(ModelSource::open(path)) {
  const LlamaHparams& hp = model_->hparams();
  const int64_t blocks = (options.kv_tokens + kBlockSize - 1) / kBlockSize;
  LOOM_CHECK(blocks >= 1 && blocks <= INT32_MAX, "draft model " + path + ": kv_tokens " +
                                                      std::to_string(options.kv_tokens) + " is out of range");
  std::string why;
  const PluginSpec quantization = resolve_quantization(host, options.quantization, model_->weights(), "", &why);
  plugins_ = create_forward_plugins(host, options.attention, quantization, hp, options.kv_dtype, kBlockSize);
  pool_ = std::make_unique<KvPool>(
      KvPoolShape{hp.n_layers, static_cast<int32_t>(blocks), kBlockSize, hp.n_kv_heads, hp.head_dim, options.kv_dtype});
  executor_ = std::make_unique<ModelExecutor>(model_->weights(), plugins_.attention_ops(), plugins_.quant_ops(), *pool_,
                                              threads);
  free_.resize(static_cast<size_t>(blocks));
  // Handed out from the back: lowest ids first.
  for (size_t i = 0; i < free_.size(); ++i) free_[i] = static_cast<int32_t>(free_.size() - 1 - i);
  LOOM_LOG_INFO("draft model {}: {} layers, dim {}, vocab {}; quantization: {}; KV pool {} blocks x {} tokens", path,
                hp.n_layers, hp.dim, hp.vocab_size, why, blocks, kBlockSize);
}

DraftModel::~DraftModel() {
  executor_.reset();  // releases the weights through the quantization plugin before it goes
}

int32_t DraftModel::length(uint64_t seq_id) const {
  const auto it = seqs_.find(seq_id);
  return it == seqs_.end() ? 0 : it->second.length;
}

bool DraftModel::resize(Seq& s, int32_t positions) {
  const auto need = static_cast<size_t>((positions + kBlockSize - 1) / kBlockSize);
  while (s.blocks.size() > need) {
    free_.push_back(s.blocks.back());
    s.blocks.pop_back();
  }
  if (need - s.blocks.size() > free_.size()) return false;
  while (s.blocks.size() < need) {
    s.blocks.push_back(free_.back());
    free_.pop_back();
  }
  return true;
}

void DraftModel::release(uint64_t seq_id) {
  const auto it = seqs_.find(seq_id);
  if (it == seqs_.end()) return;
  resize(it->second, 0);
  seqs_.erase(it);
}

void DraftModel::forward(std::span<const loom_draft_seq> seqs, int32_t width, float* logits, int32_t* ok) {
  LOOM_CHECK(width >= 1 && width <= vocab_size(), "draft model: logits width " + std::to_string(width) +
                                                      " is outside its vocabulary of " + std::to_string(vocab_size()));
  const int32_t max_len = model_->hparams().context_length > 0 ? model_->hparams().context_length : INT32_MAX;
  // Check everything before touching any sequence: a bad call changes nothing.
  for (size_t i = 0; i < seqs.size(); ++i) {
    const loom_draft_seq& q = seqs[i];
    const std::string which = "draft model: sequence " + std::to_string(q.seq_id);
    LOOM_CHECK(q.num_tokens >= 1 && q.token_ids != nullptr, which + " has no tokens to compute");
    LOOM_CHECK(q.keep >= 0 && q.keep <= length(q.seq_id),
               which + ": keep " + std::to_string(q.keep) + " is beyond the " + std::to_string(length(q.seq_id)) +
                   " positions it holds");
    for (size_t j = 0; j < i; ++j)
      LOOM_CHECK(seqs[j].seq_id != q.seq_id, which + " appears twice in one step");
    for (int32_t t = 0; t < q.num_tokens; ++t)
      LOOM_CHECK(q.token_ids[t] >= 0 && q.token_ids[t] < vocab_size(),
                 which + ": token id " + std::to_string(q.token_ids[t]) + " is outside the vocabulary");
  }
  schedule_.clear();
  ran_.clear();
  for (size_t i = 0; i < seqs.size(); ++i) {
    const loom_draft_seq& q = seqs[i];
    Seq& s = seqs_[q.seq_id];
    resize(s, q.keep);  // rollback first: its blocks are free for the others too
    s.length = q.keep;
    const int64_t end = static_cast<int64_t>(q.keep) + q.num_tokens;
    if (end > max_len || !resize(s, static_cast<int32_t>(end))) {
      ok[i] = 0;
      release(q.seq_id);
      continue;
    }
    ok[i] = 1;
    ran_.push_back(static_cast<int32_t>(i));
  }
  // Block tables are spans into seqs_' vectors: built only once no sequence is added or erased.
  for (const int32_t i : ran_) {
    const loom_draft_seq& q = seqs[static_cast<size_t>(i)];
    Seq& s = seqs_.at(q.seq_id);
    schedule_.push_back(SeqSchedule{std::span<const int32_t>(q.token_ids, static_cast<size_t>(q.num_tokens)), q.keep,
                                    s.blocks, true});
    s.length = q.keep + q.num_tokens;
  }
  if (schedule_.empty()) return;
  builder_.build(schedule_, batch_);
  executor_->execute(batch_, logits_);
  const auto vocab = static_cast<size_t>(vocab_size());
  for (size_t r = 0; r < ran_.size(); ++r)
    std::memcpy(logits + static_cast<size_t>(ran_[r]) * static_cast<size_t>(width), logits_.data() + r * vocab,
                static_cast<size_t>(width) * sizeof(float));
}

}  // namespace loom
