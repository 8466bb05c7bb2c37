// Shared by the executor tests: loads the in-tree plugins from the test executable's directory
// through the real plugin host, and runs a Llama model over hand-built batches with a simple
// block layout (each sequence owns a contiguous range of blocks).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/common/thread_pool.hpp"
#include "core/executor/batch_builder.hpp"
#include "core/executor/kv_pool.hpp"
#include "core/executor/model_executor.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/plugin/plugin_host.hpp"

namespace loom::test {

// Greedy choice as the engine's sampler makes it: the first largest logit, NaNs skipped.
inline int32_t argmax(std::span<const float> logits) {
  int32_t best = -1;
  for (int32_t i = 0; i < static_cast<int32_t>(logits.size()); ++i) {
    const float v = logits[static_cast<size_t>(i)];
    if (std::isnan(v)) continue;
    if (best < 0 || v > logits[static_cast<size_t>(best)]) best = i;
  }
  return best < 0 ? 0 : best;
}

inline std::string data_path(const std::string& name) { return std::string(LOOM_TEST_DATA) + "/" + name; }

inline std::vector<int32_t> read_ids(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot open " + path);
  std::vector<int32_t> ids;
  int32_t id;
  while (in >> id) ids.push_back(id);
  return ids;
}

// Attention + quantization plugin instances for a model.
struct ModelPlugins {
  ModelPlugins(ThreadPool& pool, const LlamaHparams& hp, int32_t block_size, const std::string& attention = "naive",
               const std::string& quantization = "none", loom_dtype kv_dtype = LOOM_DTYPE_F32,
               const std::string& quantization_config = "{}")
      : host(pool, {}) {
    loom_attention_create_args aa{};
    aa.struct_size = sizeof(aa);
    aa.n_heads = hp.n_heads;
    aa.n_kv_heads = hp.n_kv_heads;
    aa.head_dim = hp.head_dim;
    aa.scale = hp.softmax_scale();
    aa.kv_dtype = kv_dtype;
    aa.block_size = block_size;
    aa.device = loom_device{LOOM_DEVICE_CPU, 0};
    attn = host.create(PluginSpec{LOOM_KIND_ATTENTION, attention, "", "{}"}, &aa);
    loom_quantization_create_args qa{};
    qa.struct_size = sizeof(qa);
    qa.device = loom_device{LOOM_DEVICE_CPU, 0};
    quant = host.create(PluginSpec{LOOM_KIND_QUANTIZATION, quantization, "", quantization_config}, &qa);
  }
  AttentionOps attention_ops() const { return {attn->self(), &attn->vtable<loom_attention_vtable>()}; }
  QuantOps quant_ops() const { return {quant->self(), &quant->vtable<loom_quantization_vtable>()}; }

  PluginHost host;
  std::unique_ptr<LoadedPlugin> attn;
  std::unique_ptr<LoadedPlugin> quant;
};

// One model, one pool, one executor; sequences are given block ranges by the caller.
class ModelRunner {
 public:
  static constexpr int32_t kBlockSize = 16;
  static constexpr int32_t kNumBlocks = 256;

  // `attention` and `kv_dtype` choose the attention plugin and the KV pool's element type;
  // rope_in_plugin = false hides the plugin's forward_rope_k, so the executor rotates K itself.
  explicit ModelRunner(const GgufFile& file, int32_t threads = 2, const std::string& attention = "naive",
                       loom_dtype kv_dtype = LOOM_DTYPE_F32, bool rope_in_plugin = true)
      : weights_(load_llama_weights(file)),
        threads_(threads),
        plugins_(threads_, weights_.hparams, kBlockSize, attention, "none", kv_dtype),
        attention_vt_(without_rope_k(plugins_.attn->vtable<loom_attention_vtable>(), rope_in_plugin)),
        pool_(KvPoolShape{weights_.hparams.n_layers, kNumBlocks, kBlockSize, weights_.hparams.n_kv_heads,
                          weights_.hparams.head_dim, kv_dtype}),
        executor_(weights_, AttentionOps{plugins_.attn->self(), &attention_vt_}, plugins_.quant_ops(), pool_,
                  threads_),
        builder_(kBlockSize) {}

  const LlamaHparams& hparams() const { return weights_.hparams; }
  ModelExecutor& executor() { return executor_; }
  const KvPool& pool() const { return pool_; }
  int32_t vocab() const { return weights_.hparams.vocab_size; }

  // Runs one step; returns logits [n_logits, vocab].
  std::vector<float> step(std::span<const SeqSchedule> seqs) {
    builder_.build(seqs, batch_);
    std::vector<float> logits;
    executor_.execute(batch_, logits);
    return logits;
  }

  // A block table of n blocks starting at `first`.
  static std::vector<int32_t> blocks(int32_t first, int32_t n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = first + i;
    return t;
  }

  // Greedy generation of n tokens after `prompt`, as one sequence using blocks from first_block.
  std::vector<int32_t> greedy(const std::vector<int32_t>& prompt, int32_t n, int32_t first_block = 0) {
    std::vector<int32_t> tokens = prompt;
    const std::vector<int32_t> table = blocks(first_block, kNumBlocks - first_block);
    int32_t computed = 0;
    std::vector<int32_t> out;
    for (int32_t i = 0; i < n; ++i) {
      SeqSchedule s{std::span<const int32_t>(tokens).subspan(static_cast<size_t>(computed)), computed, table, true};
      const std::vector<float> logits = step(std::span<const SeqSchedule>(&s, 1));
      computed = static_cast<int32_t>(tokens.size());
      const int32_t next = argmax(logits);
      tokens.push_back(next);
      out.push_back(next);
    }
    return out;
  }

 private:
  static loom_attention_vtable without_rope_k(loom_attention_vtable vt, bool keep) {
    if (!keep) vt.forward_rope_k = nullptr;
    return vt;
  }

  LlamaWeights weights_;
  ThreadPool threads_;
  ModelPlugins plugins_;
  loom_attention_vtable attention_vt_;  // the plugin's table, or a copy without forward_rope_k
  KvPool pool_;
  ModelExecutor executor_;
  BatchBuilder builder_;
  BuiltBatch batch_;
};

// A prompt of n ids (BOS 1, then ids in [3, 512)) drawn from `seed`.
inline std::vector<int32_t> random_prompt(int32_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> p{1};
  while (static_cast<int32_t>(p.size()) < n) p.push_back(static_cast<int32_t>(3 + rng() % 509));
  return p;
}

inline bool bit_equal(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Per-step logits of one sequence run alone: prefill of `prompt`, then `decodes` greedy steps.
inline std::vector<std::vector<float>> run_alone(ModelRunner& r, const std::vector<int32_t>& prompt, int32_t decodes,
                                          std::vector<int32_t>& tokens_out) {
  std::vector<int32_t> tokens = prompt;
  const std::vector<int32_t> table = ModelRunner::blocks(0, 8);
  std::vector<std::vector<float>> out;
  int32_t computed = 0;
  for (int32_t i = 0; i <= decodes; ++i) {
    SeqSchedule s{std::span<const int32_t>(tokens).subspan(static_cast<size_t>(computed)), computed, table, true};
    out.push_back(r.step(std::span<const SeqSchedule>(&s, 1)));
    computed = static_cast<int32_t>(tokens.size());
    tokens.push_back(argmax(out.back()));
  }
  tokens_out = tokens;
  return out;
}

}  // namespace loom::test
