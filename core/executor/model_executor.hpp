// The decoder forward pass over one flat batch on the CPU, for every family of model_arch.hpp:
// every GEMM through the quantization plugin over all tokens of the step at once, attention
// through the attention plugin on the paged KV pool (sliding-window layers through its
// forward_window), logits only for the rows that are sampled.
//
// Every output element is reduced in an order that does not depend on how many tokens or
// sequences share the batch (row-wise kernels, per-element GEMM order fixed by the plugin,
// per-(token, head) attention), so a sequence's logits are bit-identical whether it runs alone
// or batched, whole or chunked (f32, CPU).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "core/executor/batch_builder.hpp"
#include "core/executor/expert_routing.hpp"
#include "core/executor/kernels/cpu/rope.hpp"
#include "core/executor/kv_groups.hpp"
#include "core/executor/kv_pool.hpp"
#include "core/executor/micro_batch.hpp"
#include "core/executor/llama_model.hpp"
#include "core/formats/gguf_file.hpp"
#include "loom/attention.h"
#include "loom/quantization.h"

namespace loom {

// Plugin instances as the executor uses them: call vt->fn(self, ...).
struct AttentionOps {
  void* self = nullptr;
  const loom_attention_vtable* vt = nullptr;
};
struct QuantOps {
  void* self = nullptr;
  const loom_quantization_vtable* vt = nullptr;
};

// The head's selection for the logits rows that want only their best entries
// (BuiltBatch::logits_top_k[i] = k > 0): row i's k best logits, best first (larger value, lower id
// on ties, NaN last: loom/sdk_top_k.hpp), with the bits its whole row would hold, at
// [i * stride, i * stride + k). Such a row's logits are not written.
struct HeadSelection {
  int32_t stride = 0;          // entries per logits row: the step's largest top_k (0: none selected)
  std::vector<int32_t> ids;    // [n_logits, stride]
  std::vector<float> values;   // [n_logits, stride]
};

class ModelExecutor {
 public:
  // Reads the model from `file` (which must outlive the executor: f32 weights are used in place)
  // and prepares every weight through the quantization plugin. `pool` must have the model's
  // KV heads and head size, and `groups`' slots (the model's layers without groups: nullptr);
  // layer l reads the batch's tables of groups->group_of[l] and pool slot groups->slot_of[l].
  // Throws loom::Error naming the tensor or setting at fault.
  ModelExecutor(const GgufFile& file, AttentionOps attention, QuantOps quant, KvPool& pool, ThreadPool& threads,
                const KvGroups* groups = nullptr);
  ModelExecutor(const LlamaWeights& weights, AttentionOps attention, QuantOps quant, KvPool& pool,
                ThreadPool& threads, const KvGroups* groups = nullptr);
  ~ModelExecutor();
  ModelExecutor(const ModelExecutor&) = delete;
  ModelExecutor& operator=(const ModelExecutor&) = delete;

  const LlamaHparams& hparams() const { return hp_; }
  int32_t vocab_size() const { return hp_.vocab_size; }

  // Runs one step. Writes K/V of every token into the pool at the batch's slots and sets
  // logits to [batch.num_logits(), vocab] (row i for token batch.logits_indices[i]).
  // A step of more than max_micro_batch() tokens runs as consecutive micro-batches of at most
  // that many (micro_batch.hpp), with the same logits bit for bit.
  // With `selection` and head_selects(), the rows with a logits_top_k get their best entries there
  // and no logits row (HeadSelection); without, every row is written whole.
  void execute(const BuiltBatch& batch, std::vector<float>& logits, HeadSelection* selection = nullptr);

  // Whether execute() can select a head row's best entries itself: the quantization plugin offers
  // linear_top_k (interface 1.5), and no final soft-cap reshapes the logits after it.
  bool head_selects() const;

  // Tokens per micro-batch (default kDefaultMicroBatch, as llama.cpp's n_ubatch): bounds the
  // activation buffers. Throws loom::Error unless n >= 1.
  static constexpr int32_t kDefaultMicroBatch = 512;
  void set_max_micro_batch(int32_t n);
  int32_t max_micro_batch() const { return max_micro_batch_; }

 private:
  struct Layer {
    std::vector<float> attn_norm;  // [dim]
    std::vector<float> ffn_norm;   // [dim]
    std::vector<float> bq, bk, bv;       // [q_dim], [kv_dim], [kv_dim]; empty without qkv_bias
    std::vector<float> q_norm, k_norm;   // [head_dim]; empty without qk_norm
    std::vector<float> post_attn_norm, post_ffn_norm;  // [dim]; empty unless NormPlacement::kSandwich
    int32_t window = 0;                  // sliding window of this layer; 0: full causal
    void* wq = nullptr;            // quantization handles
    void* wk = nullptr;
    void* wv = nullptr;
    void* wo = nullptr;
    void* w_gate = nullptr;
    void* w_up = nullptr;
    void* w_down = nullptr;
    // Mixture of experts (hp_.is_moe(); then w_gate, w_up and w_down stay null).
    void* router = nullptr;                          // [n_experts, dim]
    std::vector<void*> exp_gate, exp_up, exp_down;   // one handle per expert
    void* sh_gate = nullptr;                         // the shared expert, when the family has one
    void* sh_up = nullptr;
    void* sh_down = nullptr;
    void* sh_router = nullptr;                       // [1, dim]
  };

  // Hands one weight to the quantization plugin, with its name, role and logical [out, in] shape
  // (and companion lookups into `source` when there is one).
  // One micro-batch through every layer.
  void execute_tokens(const BuiltBatch& batch, std::vector<float>& logits, HeadSelection* selection);
  // Final norm's output fin [n_logits, dim] through the classifier (model_executor_head.cpp): whole
  // rows into logits, the rows with a top_k into `selection` when it is given.
  void head(const BuiltBatch& batch, float* fin, std::vector<float>& logits, HeadSelection* selection);
  // Sizes `selection` for batch: the stride is the largest top_k (within the vocabulary) of its
  // rows, 0 when the head cannot select.
  void size_selection(const BuiltBatch& batch, HeadSelection& selection) const;
  void* prepare(const loom_tensor_view& w, const char* name, int32_t layer, loom_weight_role role, int64_t out,
                int64_t in, const GgufFile* source, int32_t expert = -1);
  void linear(void* handle, const float* x, int64_t n, int64_t in, float* y, int64_t out);
  // One output of linears on one x: y [n, out] = x W^T, W = handle.
  struct LinearOut {
    void* handle;
    float* y;
    int64_t out;
  };
  // Linears on one x (Q/K/V, gate/up): one plugin call where it offers linear_group
  // (quantization interface 1.2), else linear for each.
  void linear_group(std::span<const LinearOut> outs, const float* x, int64_t n, int64_t in);
  // The mixture-of-experts MLP of layer L (model_executor_moe.cpp): out [rows, dim] from the
  // normed xn [rows, dim]; each token's result depends on its own row alone.
  void moe_mlp(const Layer& L, const float* xn, int64_t rows, float* out);
  // Prepares layer l's router, experts and shared expert.
  void prepare_experts(const LlamaLayerWeights& lw, int32_t l, Layer& L, const GgufFile* source);
  // Expert GEMMs over rows grouped by expert: one plugin call where it offers linear_experts
  // (quantization interface 1.4), else linear per expert with rows.
  void linear_experts(const std::vector<void*>& handles, const std::vector<int32_t>& offsets, const float* x,
                      int64_t in, float* y, int64_t out);
  void release_all() noexcept;

  LlamaHparams hp_;
  AttentionOps attn_;
  QuantOps quant_;
  KvPool& pool_;
  KvGroups groups_;
  std::vector<loom_attention_batch> group_batches_;  // [num_groups] the step's batch per group
  ThreadPool& threads_;
  cpu::RotaryEmbedding rope_;
  cpu::RotaryEmbedding rope_local_;  // windowed layers' RoPE (their own base); rope_ when none
  loom_tensor_view token_embd_;
  std::vector<Layer> layers_;
  int32_t max_micro_batch_ = kDefaultMicroBatch;
  BuiltBatch micro_;                  // the current micro-batch of a large step
  std::vector<int32_t> micro_rows_;   // its logits rows in the step's logits
  std::vector<float> micro_logits_;   // [micro_.num_logits(), vocab]
  HeadSelection micro_selection_;     // its head selection
  // The head's rows split by kind: indices into the step's logits rows, gathered inputs, outputs.
  std::vector<int32_t> whole_rows_, picked_rows_;
  std::vector<float> head_x_;         // [rows, dim]
  std::vector<float> head_y_;         // [whole rows, vocab]
  std::vector<int32_t> head_ids_;     // [picked rows, k]
  std::vector<float> head_values_;    // [picked rows, k]
  std::vector<float> output_norm_;  // [dim]
  void* output_ = nullptr;          // classifier handle

  // Scratch, grown to the largest batch seen and then reused: no allocation per step.
  std::vector<float> x_;       // [n_tokens, dim] residual stream
  std::vector<float> xn_;      // [n_tokens, dim] normed input of a sublayer
  std::vector<float> q_;       // [n_tokens, n_heads, head_dim]
  std::vector<float> k_;       // [n_tokens, n_kv_heads, head_dim]
  std::vector<float> v_;       // [n_tokens, n_kv_heads, head_dim]
  std::vector<float> att_;     // [n_tokens, n_heads, head_dim]
  std::vector<float> proj_;    // [n_tokens, dim] sublayer output before the residual add
  std::vector<float> gate_;    // [n_tokens, ffn_dim]
  std::vector<float> up_;      // [n_tokens, ffn_dim]
  std::vector<float> final_;   // [n_logits, dim] last hidden states of the sampled rows
  // Mixture-of-experts scratch (k = n_experts_used, ef = expert_ffn_dim, sf = shared_ffn_dim).
  ExpertRoutes routes_;
  std::vector<float> router_logits_;  // [rows, n_experts]
  std::vector<float> moe_x_;          // [rows * k, dim] the routed rows, grouped by expert
  std::vector<float> moe_gate_;       // [rows * k, ef] (the shared expert: [rows, sf])
  std::vector<float> moe_up_;         // [rows * k, ef]
  std::vector<float> moe_down_;       // [rows * k, dim]
  std::vector<float> shared_gate_;    // [rows] the shared expert's gate logit
};

}  // namespace loom
