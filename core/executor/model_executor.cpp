#include "core/executor/model_executor.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>

#include "core/common/error.hpp"
#include "core/common/half.hpp"
#include "core/executor/executor_scratch.hpp"
#include "core/executor/kernels/cpu/add.hpp"
#include "core/executor/kernels/cpu/add_rmsnorm.hpp"
#include "core/executor/kernels/cpu/embedding.hpp"
#include "core/executor/kernels/cpu/rmsnorm.hpp"
#include "core/executor/kernels/cpu/silu_mul.hpp"
#include "loom/sdk_core.hpp"

namespace loom {
namespace {

// Norm weights are tiny: keep an f32 copy whatever their stored type.
std::vector<float> to_f32(const loom_tensor_view& v, const std::string& name) {
  const int64_t n = v.shape[v.ndim - 1];
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    switch (v.dtype) {
      case LOOM_DTYPE_F32: out[static_cast<size_t>(i)] = static_cast<const float*>(v.data)[i]; break;
      case LOOM_DTYPE_F16: out[static_cast<size_t>(i)] = f16_to_f32(static_cast<const uint16_t*>(v.data)[i]); break;
      case LOOM_DTYPE_BF16: out[static_cast<size_t>(i)] = bf16_to_f32(static_cast<const uint16_t*>(v.data)[i]); break;
      default:
        throw Error("tensor " + name + ": dtype " + std::to_string(v.dtype) + " is not supported for a norm weight "
                    "(f32, f16 or bf16)", LOOM_ERR_UNSUPPORTED);
    }
  }
  return out;
}


// dst[i] = src[rows[i]] for rows of `width` floats; throws on a row outside [0, n). Returns dst.
float* gather_rows(const float* src, int64_t width, std::span<const int32_t> rows, int64_t n, float* dst) {
  for (size_t i = 0; i < rows.size(); ++i) {
    const int32_t t = rows[i];
    if (t < 0 || t >= n) throw Error("model executor: logits index " + std::to_string(t) + " outside the batch");
    std::copy(src + t * width, src + (t + 1) * width, dst + static_cast<int64_t>(i) * width);
  }
  return dst;
}


// y[t, :] += bias for every row t of [n_rows, bias.size()].
void add_row_bias(float* y, const std::vector<float>& bias, int64_t n_rows) {
  const size_t n = bias.size();
  for (int64_t t = 0; t < n_rows; ++t) {
    float* row = y + static_cast<size_t>(t) * n;
    for (size_t i = 0; i < n; ++i) row[i] += bias[i];
  }
}

std::string layer_name(int32_t layer, const char* name) {
  return layer < 0 ? std::string(name) : "blk." + std::to_string(layer) + "." + name;
}

}  // namespace

ModelExecutor::ModelExecutor(const GgufFile& file, AttentionOps attention, QuantOps quant, KvPool& pool,
                             ThreadPool& threads, const KvGroups* groups)
    : ModelExecutor(load_llama_weights(file), attention, quant, pool, threads, groups) {}

ModelExecutor::ModelExecutor(const LlamaWeights& w, AttentionOps attention, QuantOps quant, KvPool& pool,
                             ThreadPool& threads, const KvGroups* groups)
    : hp_(w.hparams),
      attn_(attention),
      quant_(quant),
      pool_(pool),
      groups_(groups != nullptr ? *groups : KvGroups::single(w.hparams.n_layers)),
      threads_(threads),
      rope_(w.hparams.head_dim, llama_rope_inv_freq(w.hparams), w.hparams.rope_style == RopeStyle::kNeox,
            rope_attention_factor(w.hparams.rope_scaling)),
      rope_local_(w.hparams.head_dim,
                  w.hparams.has_windowed_layers() ? llama_rope_inv_freq_local(w.hparams) : llama_rope_inv_freq(w.hparams),
                  w.hparams.rope_style == RopeStyle::kNeox,
                  w.hparams.has_windowed_layers() ? 1.0 : rope_attention_factor(w.hparams.rope_scaling)),
      token_embd_(w.token_embd) {
  if (attn_.vt == nullptr || attn_.vt->forward == nullptr) throw Error("model executor: no attention plugin");
  if (w.hparams.has_windowed_layers() && !sdk::present(*attn_.vt, &loom_attention_vtable::forward_window))
    throw Error("model executor: " + w.hparams.architecture + " has sliding-window layers and the attention plugin "
                "does not offer sliding-window attention (forward_window, attention interface 1.2)",
                LOOM_ERR_UNSUPPORTED);
  if (quant_.vt == nullptr || quant_.vt->linear == nullptr || quant_.vt->prepare_weight == nullptr)
    throw Error("model executor: no quantization plugin");
  const KvPoolShape& ps = pool.shape();
  if (ps.n_layers != groups_.slots || ps.n_kv_heads != hp_.n_kv_heads || ps.head_dim != hp_.head_dim)
    throw Error("model executor: the KV pool has " + std::to_string(ps.n_layers) + " layers x " +
                std::to_string(ps.n_kv_heads) + " kv heads x " + std::to_string(ps.head_dim) +
                " head_dim but the model needs " + std::to_string(groups_.slots) + " x " +
                std::to_string(hp_.n_kv_heads) + " x " + std::to_string(hp_.head_dim));
  if (groups_.n_layers() != hp_.n_layers)
    throw Error("model executor: KV groups for " + std::to_string(groups_.n_layers()) + " layers, but the model has " +
                std::to_string(hp_.n_layers));
  try {
    for (int32_t l = 0; l < hp_.n_layers; ++l) {
      const LlamaLayerWeights& lw = w.layers[static_cast<size_t>(l)];
      Layer layer;
      layer.attn_norm = to_f32(lw.attn_norm, layer_name(l, "attn_norm.weight"));
      layer.ffn_norm = to_f32(lw.ffn_norm, layer_name(l, "ffn_norm.weight"));
      if (hp_.norms == NormPlacement::kSandwich) {
        layer.post_attn_norm = to_f32(lw.post_attn_norm, layer_name(l, "post_attention_norm.weight"));
        layer.post_ffn_norm = to_f32(lw.post_ffn_norm, layer_name(l, "post_ffw_norm.weight"));
      }
      layer.window = hp_.window_of(l);
      if (hp_.qkv_bias) {
        layer.bq = to_f32(lw.bq, layer_name(l, "attn_q.bias"));
        layer.bk = to_f32(lw.bk, layer_name(l, "attn_k.bias"));
        layer.bv = to_f32(lw.bv, layer_name(l, "attn_v.bias"));
      }
      if (hp_.qk_norm) {
        layer.q_norm = to_f32(lw.q_norm, layer_name(l, "attn_q_norm.weight"));
        layer.k_norm = to_f32(lw.k_norm, layer_name(l, "attn_k_norm.weight"));
      }
      layers_.push_back(std::move(layer));
      Layer& L = layers_.back();
      const int64_t dim = hp_.dim, ff = hp_.ffn_dim, q_dim = int64_t{hp_.n_heads} * hp_.head_dim;
      const int64_t kv_dim = int64_t{hp_.n_kv_heads} * hp_.head_dim;
      L.wq = prepare(lw.wq, "attn_q.weight", l, LOOM_WEIGHT_ATTN_Q, q_dim, dim, w.source);
      L.wk = prepare(lw.wk, "attn_k.weight", l, LOOM_WEIGHT_ATTN_K, kv_dim, dim, w.source);
      L.wv = prepare(lw.wv, "attn_v.weight", l, LOOM_WEIGHT_ATTN_V, kv_dim, dim, w.source);
      L.wo = prepare(lw.wo, "attn_output.weight", l, LOOM_WEIGHT_ATTN_OUTPUT, dim, q_dim, w.source);
      if (hp_.is_moe()) {
        prepare_experts(lw, l, L, w.source);
        continue;
      }
      L.w_gate = prepare(lw.w_gate, "ffn_gate.weight", l, LOOM_WEIGHT_FFN_GATE, ff, dim, w.source);
      L.w_up = prepare(lw.w_up, "ffn_up.weight", l, LOOM_WEIGHT_FFN_UP, ff, dim, w.source);
      L.w_down = prepare(lw.w_down, "ffn_down.weight", l, LOOM_WEIGHT_FFN_DOWN, dim, ff, w.source);
    }
    output_norm_ = to_f32(w.output_norm, "output_norm.weight");
    output_ = prepare(w.output, w.tied_output ? "token_embd.weight" : "output.weight", -1, LOOM_WEIGHT_OUTPUT,
                      hp_.vocab_size, hp_.dim, w.source);
  } catch (...) {
    release_all();
    throw;
  }
}

ModelExecutor::~ModelExecutor() { release_all(); }

void ModelExecutor::release_all() noexcept {
  if (quant_.vt == nullptr || quant_.vt->release_weight == nullptr) return;
  auto release = [&](void*& h) {
    if (h != nullptr) quant_.vt->release_weight(quant_.self, h);
    h = nullptr;
  };
  for (Layer& L : layers_) {
    for (void** h : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down, &L.router, &L.sh_gate, &L.sh_up,
                     &L.sh_down, &L.sh_router})
      release(*h);
    for (std::vector<void*>* experts : {&L.exp_gate, &L.exp_up, &L.exp_down})
      for (void*& h : *experts) release(h);
  }
  release(output_);
}

void* ModelExecutor::prepare(const loom_tensor_view& w, const char* name, int32_t layer, loom_weight_role role,
                             int64_t out, int64_t in, const GgufFile* source, int32_t expert) {
  ErrorBuffer err;
  loom_error_buf eb = err.buf();
  const std::string full_name = layer_name(layer, name);
  const std::string shown = expert < 0 ? full_name : full_name + " (expert " + std::to_string(expert) + ")";
  if (quant_.vt->supports != nullptr) {  // one call: the answer, and with a no the reason in err
    int32_t ok = 0;
    const loom_status s = quant_.vt->supports(quant_.self, w.dtype, &ok, &eb);
    if (s != LOOM_OK || ok == 0)
      throw Error("tensor " + shown + ": the quantization plugin cannot use it: " +
                      (err.str().empty() ? std::string("no reason given") : std::string(err.str())),
                  s != LOOM_OK ? s : LOOM_ERR_UNSUPPORTED);
  }
  void* handle = nullptr;
  const bool has_info = sdk::present(*quant_.vt, &loom_quantization_vtable::prepare_weight_info);
  loom_status s = LOOM_OK;
  if (has_info) {
    loom_weight_info info{};
    info.struct_size = sizeof(loom_weight_info);
    info.name = full_name.c_str();
    info.role = role;
    info.layer = layer;
    info.out_features = out;
    info.in_features = in;
    info.expert = expert;
    if (source != nullptr) {
      info.find_tensor = [](void* ctx, const char* tensor, loom_tensor_view* view) -> int32_t {
        const GgufTensorInfo* t = static_cast<const GgufFile*>(ctx)->find_tensor(tensor);
        if (t == nullptr || view == nullptr) return 0;
        *view = gguf_tensor_view(*t);
        return 1;
      };
      info.find_ctx = const_cast<GgufFile*>(source);
    }
    s = quant_.vt->prepare_weight_info(quant_.self, &w, &info, &handle, &eb);
  } else {
    s = quant_.vt->prepare_weight(quant_.self, &w, &handle, &eb);
  }
  if (s != LOOM_OK) throw Error("tensor " + shown + ": prepare_weight failed: " + err.str(), s);
  return handle;
}

void ModelExecutor::linear(void* handle, const float* x, int64_t n, int64_t in, float* y, int64_t out) {
  const loom_tensor_view xv = f32_view(const_cast<float*>(x), {n, in});
  loom_tensor_view yv = f32_view(y, {n, out});
  ErrorBuffer err;
  loom_error_buf eb = err.buf();
  const loom_status s = quant_.vt->linear(quant_.self, handle, &xv, &yv, &eb);
  if (s != LOOM_OK) throw Error("quantization plugin linear failed: " + err.str(), s);
}

void ModelExecutor::linear_group(std::span<const LinearOut> outs, const float* x, int64_t n, int64_t in) {
  constexpr size_t kMaxGroup = 4;
  const bool offered = sdk::present(*quant_.vt, &loom_quantization_vtable::linear_group);
  if (!offered || outs.size() > kMaxGroup) {
    for (const LinearOut& o : outs) linear(o.handle, x, n, in, o.y, o.out);
    return;
  }
  const loom_tensor_view xv = f32_view(const_cast<float*>(x), {n, in});
  std::array<void*, kMaxGroup> handles{};
  std::array<loom_tensor_view, kMaxGroup> yv{};
  for (size_t i = 0; i < outs.size(); ++i) {
    handles[i] = outs[i].handle;
    yv[i] = f32_view(outs[i].y, {n, outs[i].out});
  }
  ErrorBuffer err;
  loom_error_buf eb = err.buf();
  const loom_status s = quant_.vt->linear_group(quant_.self, handles.data(), static_cast<int32_t>(outs.size()), &xv,
                                                yv.data(), &eb);
  if (s != LOOM_OK) throw Error("quantization plugin linear_group failed: " + err.str(), s);
}

void ModelExecutor::set_max_micro_batch(int32_t n) {
  if (n < 1) throw Error("model executor: micro-batch size " + std::to_string(n) + " must be >= 1");
  max_micro_batch_ = n;
}

void ModelExecutor::execute(const BuiltBatch& batch, std::vector<float>& logits, HeadSelection* selection) {
  const int32_t T = batch.num_tokens();
  if (T <= max_micro_batch_) {
    execute_tokens(batch, logits, selection);
    return;
  }
  const int64_t vocab = hp_.vocab_size;
  logits.resize(static_cast<size_t>(int64_t{batch.num_logits()} * vocab));
  // The step's stride, whichever micro-batch holds its widest row.
  if (selection != nullptr) size_selection(batch, *selection);
  for (int32_t t0 = 0; t0 < T; t0 += max_micro_batch_) {
    slice_batch(batch, t0, std::min(T, t0 + max_micro_batch_), micro_, micro_rows_);
    execute_tokens(micro_, micro_logits_, selection != nullptr ? &micro_selection_ : nullptr);
    for (size_t i = 0; i < micro_rows_.size(); ++i) {
      const auto to = static_cast<size_t>(micro_rows_[i]);
      if (!micro_.logits_top_k.empty() && micro_.logits_top_k[i] > 0 && micro_selection_.stride > 0) {
        const auto k = static_cast<size_t>(std::min(micro_.logits_top_k[i], micro_selection_.stride));
        const size_t from = i * static_cast<size_t>(micro_selection_.stride);
        const size_t into = to * static_cast<size_t>(selection->stride);
        std::copy_n(micro_selection_.ids.begin() + from, k, selection->ids.begin() + into);
        std::copy_n(micro_selection_.values.begin() + from, k, selection->values.begin() + into);
        continue;
      }
      const float* row = micro_logits_.data() + static_cast<int64_t>(i) * vocab;
      std::copy(row, row + vocab, logits.data() + static_cast<int64_t>(to) * vocab);
    }
  }
}

void ModelExecutor::execute_tokens(const BuiltBatch& batch, std::vector<float>& logits, HeadSelection* selection) {
  const int64_t T = batch.num_tokens();
  const int64_t dim = hp_.dim, ff = hp_.ffn_dim, H = hp_.n_heads, KVH = hp_.n_kv_heads, D = hp_.head_dim;
  const int64_t n_logits = batch.num_logits();
  logits.resize(static_cast<size_t>(n_logits * hp_.vocab_size));
  if (T == 0) return;
  if (batch.block_size != pool_.shape().block_size)
    throw Error("model executor: batch block_size " + std::to_string(batch.block_size) + " differs from the pool's " +
                std::to_string(pool_.shape().block_size));

  float* x = ensure(x_, T * dim);
  float* xn = ensure(xn_, T * dim);
  float* q = ensure(q_, T * H * D);
  float* k = ensure(k_, T * KVH * D);
  float* v = ensure(v_, T * KVH * D);
  float* att = ensure(att_, T * H * D);
  float* proj = ensure(proj_, T * dim);
  float* gate = ensure(gate_, T * ff);
  float* up = ensure(up_, T * ff);
  ThreadPool* pool = &threads_;

  cpu::embedding(token_embd_, batch.token_ids, x, pool);
  if (hp_.embed_scale != 1.0f) cpu::scale_inplace(x, hp_.embed_scale, T * dim, pool);  // Gemma: x sqrt(dim)
  if (batch.num_groups != groups_.num_groups())
    throw Error("model executor: the batch has " + std::to_string(batch.num_groups) + " block-table groups, the KV "
                "pool " + std::to_string(groups_.num_groups()));
  std::vector<loom_attention_batch>& group_batches = group_batches_;
  group_batches.clear();
  for (int32_t g = 0; g < batch.num_groups; ++g) group_batches.push_back(batch.attention(g));
  const loom_tensor_view qv = f32_view(q, {T, H, D});
  const loom_tensor_view kv = f32_view(k, {T, KVH, D});
  const loom_tensor_view vv = f32_view(v, {T, KVH, D});
  loom_tensor_view ov = f32_view(att, {T, H, D});

  // Attention interface 1.1: RoPE of K fused into the plugin's cache write, when it offers that.
  const bool fused_rope_k = sdk::present(*attn_.vt, &loom_attention_vtable::forward_rope_k);
  const loom_rope rope_global = rope_.view(), rope_local = rope_local_.view();
  const bool has_window = sdk::present(*attn_.vt, &loom_attention_vtable::forward_window);
  for (int32_t l = 0; l < hp_.n_layers; ++l) {
    const Layer& L = layers_[static_cast<size_t>(l)];
    const cpu::RotaryEmbedding& rot = L.window > 0 ? rope_local_ : rope_;
    const loom_rope& rope = L.window > 0 ? rope_local : rope_global;
    // Attention sublayer: x += Wo · attn(rope(Wq·n(x)), rope(Wk·n(x)), Wv·n(x)). After the first
    // layer, xn = n(x) was made by the previous layer's fused residual add.
    if (l == 0) cpu::rmsnorm(x, dim, L.attn_norm.data(), xn, dim, T, dim, hp_.rms_eps, pool);
    const LinearOut qkv[] = {{L.wq, q, H * D}, {L.wk, k, KVH * D}, {L.wv, v, KVH * D}};
    linear_group(qkv, xn, T, dim);
    if (!L.bq.empty()) {  // Qwen2: biased projections
      add_row_bias(q, L.bq, T);
      add_row_bias(k, L.bk, T);
      add_row_bias(v, L.bv, T);
    }
    if (!L.q_norm.empty() && hp_.qk_norm_whole) {  // OLMoE: RMSNorm over each token's whole q and k
      cpu::rmsnorm(q, H * D, L.q_norm.data(), q, H * D, T, H * D, hp_.rms_eps, pool);
      cpu::rmsnorm(k, KVH * D, L.k_norm.data(), k, KVH * D, T, KVH * D, hp_.rms_eps, pool);
    } else if (!L.q_norm.empty()) {  // Qwen3: RMSNorm over each head of q and k, before RoPE
      cpu::rmsnorm(q, D, L.q_norm.data(), q, D, T * H, D, hp_.rms_eps, pool);
      cpu::rmsnorm(k, D, L.k_norm.data(), k, D, T * KVH, D, hp_.rms_eps, pool);
    }
    rot.apply(q, T, H, H * D, batch.positions.data(), pool);
    ErrorBuffer err;
    loom_error_buf eb = err.buf();
    loom_status s;
    if (!fused_rope_k) rot.apply(k, T, KVH, KVH * D, batch.positions.data(), pool);
    const loom_attention_batch& ab = group_batches[static_cast<size_t>(groups_.group_of[static_cast<size_t>(l)])];
    loom_tensor_view& k_pool = pool_.k(groups_.slot_of[static_cast<size_t>(l)]);
    loom_tensor_view& v_pool = pool_.v(groups_.slot_of[static_cast<size_t>(l)]);
    if (L.window > 0 && has_window) {  // a local layer: attention 1.2's sliding window
      s = attn_.vt->forward_window(attn_.self, &ab, L.window, fused_rope_k ? &rope : nullptr, &qv, &kv, &vv, &k_pool,
                                   &v_pool, &ov, &eb);
    } else if (fused_rope_k) {  // the plugin rotates each K row as it writes it to the pool
      s = attn_.vt->forward_rope_k(attn_.self, &ab, &rope, &qv, &kv, &vv, &k_pool, &v_pool, &ov, &eb);
    } else {
      s = attn_.vt->forward(attn_.self, &ab, &qv, &kv, &vv, &k_pool, &v_pool, &ov, &eb);
    }
    if (s != LOOM_OK) throw Error("attention plugin forward failed at layer " + std::to_string(l) + ": " + err.str(), s);

    // Past the last layer's attention only the sampled rows matter: every row's K and V are in
    // the pool now, and the other rows' hidden states reach nothing. So Wo, the MLP and the final
    // norm run on the sampled rows alone (a prompt's chunk that samples nothing stops here). Each
    // row's arithmetic is the same whatever rows share its GEMM, so the logits keep their bits.
    const bool last = l + 1 == hp_.n_layers;
    int64_t rows = T;
    float* h = x;          // [rows, dim] the residual stream of the rows still computed
    const float* a = att;  // [rows, H * D] their attention outputs
    if (last) {
      if (n_logits == 0) return;
      rows = n_logits;
      h = gather_rows(x, dim, batch.logits_indices, T, ensure(final_, n_logits * dim));
      a = gather_rows(att, H * D, batch.logits_indices, T, q);  // q is free once attention has run
    }
    linear(L.wo, a, rows, H * D, proj, dim);
    // Sandwich norms (Gemma): the sublayer's output is normed before it joins the residual.
    const bool sandwich = !L.post_attn_norm.empty();
    if (sandwich) cpu::rmsnorm(proj, dim, L.post_attn_norm.data(), proj, dim, rows, dim, hp_.rms_eps, pool);

    // MLP sublayer (SwiGLU / GeGLU): x += Wdown · (act(Wgate·n(x)) * Wup·n(x)), n(x) fused with the add.
    // A mixture of experts in place of the one MLP: the same x in and sublayer output out.
    cpu::add_rmsnorm(h, proj, L.ffn_norm.data(), xn, rows, dim, hp_.rms_eps, pool);
    if (hp_.is_moe()) {
      moe_mlp(L, xn, rows, proj);
    } else {
      const LinearOut gate_up[] = {{L.w_gate, gate, ff}, {L.w_up, up, ff}};
      linear_group(gate_up, xn, rows, dim);
      if (hp_.mlp == GatedActivation::kGeluTanh) {
        cpu::gelu_tanh_mul(gate, up, gate, rows * ff, pool);
      } else {
        cpu::silu_mul(gate, up, gate, rows * ff, pool);
      }
      linear(L.w_down, gate, rows, ff, proj, dim);
    }
    if (sandwich) cpu::rmsnorm(proj, dim, L.post_ffn_norm.data(), proj, dim, rows, dim, hp_.rms_eps, pool);
    if (!last) {
      cpu::add_rmsnorm(x, proj, layers_[static_cast<size_t>(l) + 1].attn_norm.data(), xn, T, dim, hp_.rms_eps, pool);
    } else {
      cpu::add_inplace(h, proj, rows * dim, pool);
    }
  }

  // Final norm and classifier on the sampled rows, gathered into final_ in the last layer.
  float* fin = final_.data();
  cpu::rmsnorm(fin, dim, output_norm_.data(), fin, dim, n_logits, dim, hp_.rms_eps, pool);
  head(batch, fin, logits, selection);
}

}  // namespace loom
