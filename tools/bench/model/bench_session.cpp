#include "tools/bench/model/bench_session.hpp"

#include <chrono>
#include <algorithm>
#include <ctime>

#include "core/common/error.hpp"

namespace loom::bench {

BenchSession::BenchSession(const SessionSpec& spec)
    : max_seqs_(spec.max_seqs),
      blocks_per_seq_((spec.max_tokens + kBlockSize - 1) / kBlockSize),
      file_(GgufFile::open(spec.model)),
      weights_(load_llama_weights(file_)),
      builder_(kBlockSize) {
  const LlamaHparams& hp = weights_.hparams;
  threads_ = std::make_unique<ThreadPool>(spec.threads);
  host_ = std::make_unique<PluginHost>(*threads_, spec.plugin_dirs);
  plugins_ = create_forward_plugins(*host_, PluginSpec{LOOM_KIND_ATTENTION, spec.attention, "", "{}"},
                                    PluginSpec{LOOM_KIND_QUANTIZATION, spec.quantization, "", spec.quantization_config},
                                    hp, spec.kv_dtype, kBlockSize);
  pool_ = std::make_unique<KvPool>(KvPoolShape{hp.n_layers, max_seqs_ * blocks_per_seq_, kBlockSize, hp.n_kv_heads,
                                               hp.head_dim, spec.kv_dtype});
  executor_ = std::make_unique<ModelExecutor>(weights_, plugins_.attention_ops(), plugins_.quant_ops(), *pool_,
                                              *threads_);
  block_ids_.resize(static_cast<size_t>(max_seqs_ * blocks_per_seq_));
  for (size_t i = 0; i < block_ids_.size(); ++i) block_ids_[i] = static_cast<int32_t>(i);
  // A fixed linear congruential sequence over the vocabulary, avoiding the first special ids.
  uint64_t state = 12345;
  token_ids_.resize(static_cast<size_t>(spec.max_tokens) + 1);
  for (int32_t& id : token_ids_) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    id = static_cast<int32_t>(3 + (state >> 33) % static_cast<uint64_t>(std::max(1, hp.vocab_size - 3)));
  }
}

BenchSession::~BenchSession() {
  executor_.reset();  // releases weights through the quantization plugin before it goes
}

int64_t BenchSession::file_bytes() const {
  int64_t total = 0;
  for (const GgufTensorInfo& t : file_.tensors()) total += static_cast<int64_t>(t.nbytes);
  return total;
}

int64_t BenchSession::decode_bytes() const {
  if (weights_.tied_output) return file_bytes();  // the embedding table is the classifier too
  const GgufTensorInfo* embd = file_.find_tensor("token_embd.weight");
  return file_bytes() - (embd == nullptr ? 0 : static_cast<int64_t>(embd->nbytes));
}

int64_t BenchSession::params() const {
  int64_t total = 0;
  for (const GgufTensorInfo& t : file_.tensors()) {
    int64_t n = 1;
    for (int64_t d : t.dims) n *= d;
    total += n;
  }
  return total;
}

std::span<const int32_t> BenchSession::table(int32_t seq) const {
  if (seq >= max_seqs_)
    throw Error("bench: sequence " + std::to_string(seq) + " beyond the pool's " + std::to_string(max_seqs_));
  return std::span<const int32_t>(block_ids_).subspan(static_cast<size_t>(seq * blocks_per_seq_),
                                                       static_cast<size_t>(blocks_per_seq_));
}

std::span<const int32_t> BenchSession::tokens(int32_t from, int32_t n) const {
  if (from + n > static_cast<int32_t>(token_ids_.size()))
    throw Error("bench: position " + std::to_string(from + n) + " beyond the session's " +
                std::to_string(token_ids_.size() - 1) + " tokens");
  return std::span<const int32_t>(token_ids_).subspan(static_cast<size_t>(from), static_cast<size_t>(n));
}

namespace {
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
}  // namespace

Timing BenchSession::run_step(const std::vector<SeqSchedule>& seqs) {
  builder_.build(seqs, batch_);
  const double c0 = process_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  executor_->execute(batch_, logits_);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Timing{wall, process_cpu_seconds() - c0};
}

Timing BenchSession::prefill(int32_t n) { return run_step({SeqSchedule{tokens(0, n), 0, table(0), true}}); }

Timing BenchSession::decode(int32_t n) {
  Timing total;
  for (int32_t pos = 0; pos < n; ++pos) total += run_step({SeqSchedule{tokens(pos, 1), pos, table(0), true}});
  return total;
}

Timing BenchSession::batched_decode(int32_t seqs, int32_t prompt, int32_t steps) {
  std::vector<SeqSchedule> step;
  for (int32_t s = 0; s < seqs; ++s) step.push_back(SeqSchedule{tokens(0, prompt), 0, table(s), false});
  run_step(step);
  Timing total;
  for (int32_t i = 0; i < steps; ++i) {
    const int32_t pos = prompt + i;
    for (int32_t s = 0; s < seqs; ++s) step[static_cast<size_t>(s)] = SeqSchedule{tokens(pos, 1), pos, table(s), true};
    total += run_step(step);
  }
  return total;
}

void BenchSession::score(std::span<const int32_t> ids, std::vector<float>& logits) {
  if (static_cast<int64_t>(ids.size()) > static_cast<int64_t>(blocks_per_seq_) * kBlockSize)
    throw Error("bench: " + std::to_string(ids.size()) + " tokens beyond the session's " +
                std::to_string(blocks_per_seq_ * kBlockSize) + " positions");
  const SeqSchedule seq{ids, 0, table(0), true};
  builder_.build(std::span<const SeqSchedule>(&seq, 1), batch_);
  batch_.logits_indices.resize(ids.size());  // every token's logits, not only the last one's
  for (size_t i = 0; i < ids.size(); ++i) batch_.logits_indices[i] = static_cast<int32_t>(i);
  executor_->execute(batch_, logits);
}

}  // namespace loom::bench
