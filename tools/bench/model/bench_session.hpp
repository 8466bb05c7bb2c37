// One model loaded for benchmarking: the executor with its plugins and a KV pool big enough for
// every test of the run, plus the timed steps (prefill, decode, batched decode). Token ids are
// fixed pseudo-random ids, never sampled, so nothing but the forward pass is timed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "core/engine/runtime_stack.hpp"
#include "core/executor/batch_builder.hpp"
#include "core/executor/kv_pool.hpp"
#include "core/executor/llama_model.hpp"
#include "core/executor/model_executor.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/plugin/plugin_host.hpp"

namespace loom::bench {

// Wall seconds of the timed steps, and the process CPU seconds they used (all threads): their
// ratio over the thread count shows how much of the machine the run actually got.
struct Timing {
  double wall = 0.0;
  double cpu = 0.0;
  Timing& operator+=(const Timing& o) {
    wall += o.wall;
    cpu += o.cpu;
    return *this;
  }
};

struct SessionSpec {
  std::string model;
  int32_t threads = 1;
  std::string attention;
  std::string quantization;
  std::vector<std::string> plugin_dirs;
  int32_t max_seqs = 1;     // sequences that may hold KV at once
  int32_t max_tokens = 1;   // positions per sequence
  loom_dtype kv_dtype = LOOM_DTYPE_F32;  // KV pool element type
  std::string quantization_config = "{}";  // the quantization plugin's JSON config
};

class BenchSession {
 public:
  static constexpr int32_t kBlockSize = 16;

  explicit BenchSession(const SessionSpec& spec);
  ~BenchSession();

  const LlamaHparams& hparams() const { return weights_.hparams; }
  ThreadPool& threads() { return *threads_; }
  int64_t file_bytes() const;    // every tensor
  int64_t decode_bytes() const;  // tensors one decode step reads (all but the embedding table)
  int64_t params() const;

  // One prefill of n tokens (sequence 0, from position 0; last token's logits).
  Timing prefill(int32_t n);
  // n decode steps of sequence 0 from position 0, each with logits.
  Timing decode(int32_t n);
  // `steps` decode steps of `seqs` sequences together, after an untimed prefill of `prompt`
  // tokens each.
  Timing batched_decode(int32_t seqs, int32_t prompt, int32_t steps);
  // Real tokens, not the fixed ids: `ids` as sequence 0 from position 0 in one step, and the
  // logits of every one of them into `logits` [ids.size(), vocab] (perplexity).
  void score(std::span<const int32_t> ids, std::vector<float>& logits);
  const GgufFile& file() const { return file_; }

 private:
  Timing run_step(const std::vector<SeqSchedule>& seqs);
  std::span<const int32_t> table(int32_t seq) const;
  std::span<const int32_t> tokens(int32_t from, int32_t n) const;

  int32_t max_seqs_;
  int32_t blocks_per_seq_;
  GgufFile file_;
  LlamaWeights weights_;
  std::unique_ptr<ThreadPool> threads_;
  std::unique_ptr<PluginHost> host_;
  ForwardPlugins plugins_;  // the engine's attention + quantization, made the same way
  std::unique_ptr<KvPool> pool_;
  std::unique_ptr<ModelExecutor> executor_;
  BatchBuilder builder_;
  BuiltBatch batch_;
  std::vector<float> logits_;
  std::vector<int32_t> block_ids_;  // [max_seqs, blocks_per_seq]: sequence s owns one range
  std::vector<int32_t> token_ids_;  // [max_tokens + 1] fixed pseudo-random ids
};

}  // namespace loom::bench
