// A second model the host runs for a speculator plugin (speculator interface 1.1): its own file,
// attention and quantization plugin instances, KV pool and executor, on the engine's thread pool.
// Sequences are the plugin's (keyed by its ids), each a list of KV blocks taken from the pool's
// free list as it grows and given back on rollback or release; there is no prefix sharing, so a
// draft sequence's KV is exactly its own tokens. Engine-thread only, like the speculator.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "core/engine/runtime_stack.hpp"
#include "core/executor/batch_builder.hpp"
#include "core/executor/kv_pool.hpp"
#include "core/executor/model_executor.hpp"
#include "core/executor/model_source.hpp"
#include "core/plugin/plugin_host.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "loom/speculator.h"

namespace loom {

struct DraftModelOptions {
  PluginSpec quantization{LOOM_KIND_QUANTIZATION, "auto", "", "{}"};  // "auto": the plugin claiming its weights
  PluginSpec attention{LOOM_KIND_ATTENTION, "naive", "", "{}"};
  loom_dtype kv_dtype = LOOM_DTYPE_F16;
  int64_t kv_tokens = 16384;  // positions of every sequence together
};

class DraftModel {
 public:
  static constexpr int32_t kBlockSize = 16;

  // Loads `path` (ModelSource: GGUF or Hugging Face directory). Throws loom::Error naming what
  // is wrong (the file, a plugin refusing it, a pool too small for one block).
  DraftModel(const std::string& path, const DraftModelOptions& options, PluginHost& host, ThreadPool& threads);
  ~DraftModel();
  DraftModel(const DraftModel&) = delete;
  DraftModel& operator=(const DraftModel&) = delete;

  const ModelSource& source() const { return *model_; }
  int32_t vocab_size() const { return model_->hparams().vocab_size; }  // logits columns

  // One step over `seqs` (see loom_draft_model_api::forward): logits [seqs, width] of each last
  // token, the first `width` columns (width <= vocab_size()); ok[i] = 0 for a sequence that did
  // not fit, which is dropped. Throws loom::Error for a keep or token id out of range.
  void forward(std::span<const loom_draft_seq> seqs, int32_t width, float* logits, int32_t* ok);
  void release(uint64_t seq_id);

  int32_t free_blocks() const { return static_cast<int32_t>(free_.size()); }
  int32_t num_seqs() const { return static_cast<int32_t>(seqs_.size()); }
  // Positions held for seq_id (0 when unknown).
  int32_t length(uint64_t seq_id) const;

 private:
  struct Seq {
    std::vector<int32_t> blocks;  // position p lives in blocks[p / kBlockSize]
    int32_t length = 0;           // positions [0, length) hold KV
  };
  // Shrinks s to `positions` (blocks past them go back to the free list) or grows its blocks to
  // cover them; false when the free list runs out (s keeps what it had).
  bool resize(Seq& s, int32_t positions);

  std::unique_ptr<ModelSource> model_;
  ForwardPlugins plugins_;
  std::unique_ptr<KvPool> pool_;
  std::unique_ptr<ModelExecutor> executor_;
  BatchBuilder builder_{kBlockSize};
  BuiltBatch batch_;
  std::vector<float> logits_;            // [ran, vocab_size()]
  std::vector<SeqSchedule> schedule_;    // forward() scratch
  std::vector<int32_t> ran_;             // indices into seqs of the ones scheduled
  std::vector<int32_t> free_;            // free block ids
  std::unordered_map<uint64_t, Seq> seqs_;
};

}  // namespace loom
