#include "tools/convert/smoothquant_calibration.hpp"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <thread>

#include "core/common/error.hpp"
#include "core/common/thread_pool.hpp"
#include "core/engine/runtime_stack.hpp"
#include "core/executor/batch_builder.hpp"
#include "core/executor/kv_pool.hpp"
#include "core/executor/llama_model.hpp"
#include "core/executor/model_executor.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "core/plugin/plugin_host.hpp"
#include "tools/convert/loom_quantized.hpp"

namespace loom::convert {
namespace {

// A quantization vtable in front of another one: forwards every call, and on linear() records
// max |x_j| of the weight's input. `self` is the Recorder, handles are Recorded.
struct Recorded {
  void* inner = nullptr;
  std::vector<float>* absmax = nullptr;  // nullptr: not a per-layer matrix (the head)
};

struct Recorder {
  QuantOps inner;
  ActivationMaxima maxima;

  static Recorder& of(void* self) { return *static_cast<Recorder*>(self); }

  static loom_status supports(void* self, loom_dtype dtype, int32_t* ok, loom_error_buf* err) {
    const QuantOps& q = of(self).inner;
    return q.vt->supports(q.self, dtype, ok, err);
  }
  static loom_status prepare_info(void* self, const loom_tensor_view* w, const loom_weight_info* info, void** handle,
                                  loom_error_buf* err) {
    Recorder& r = of(self);
    auto rec = std::make_unique<Recorded>();
    const loom_status s = r.inner.vt->prepare_weight(r.inner.self, w, &rec->inner, err);
    if (s != LOOM_OK) return s;
    if (info != nullptr && info->name != nullptr && is_layer_matrix(info->name)) {
      std::vector<float>& m = r.maxima[info->name];
      m.assign(static_cast<size_t>(info->in_features), 0.0f);
      rec->absmax = &m;
    }
    *handle = rec.release();
    return LOOM_OK;
  }
  static loom_status prepare(void* self, const loom_tensor_view* w, void** handle, loom_error_buf* err) {
    return prepare_info(self, w, nullptr, handle, err);
  }
  static loom_status linear(void* self, void* handle, const loom_tensor_view* x, loom_tensor_view* y,
                            loom_error_buf* err) {
    const Recorded& rec = *static_cast<const Recorded*>(handle);
    if (rec.absmax != nullptr && x->dtype == LOOM_DTYPE_F32 && x->ndim == 2 &&
        x->shape[1] == static_cast<int64_t>(rec.absmax->size())) {
      const auto* xv = static_cast<const float*>(x->data);
      for (int64_t t = 0; t < x->shape[0]; ++t)
        for (int64_t j = 0; j < x->shape[1]; ++j) {
          float& m = (*rec.absmax)[static_cast<size_t>(j)];
          m = std::max(m, std::fabs(xv[t * x->strides[0] + j]));
        }
    }
    const QuantOps& q = of(self).inner;
    return q.vt->linear(q.self, rec.inner, x, y, err);
  }
  static void release(void* self, void* handle) {
    const QuantOps& q = of(self).inner;
    auto* rec = static_cast<Recorded*>(handle);
    q.vt->release_weight(q.self, rec->inner);
    delete rec;
  }
};

constexpr loom_quantization_vtable kRecorderVtable = {sizeof(loom_quantization_vtable), &Recorder::supports,
                                                      &Recorder::prepare,  &Recorder::linear,
                                                      &Recorder::release,  &Recorder::prepare_info};

}  // namespace

std::vector<int32_t> calibration_tokens(const GgufFile& file, const std::string& text) {
  return load_tokenizer(file)->encode(text, true);
}

ActivationMaxima collect_activation_maxima(const GgufFile& file, std::span<const int32_t> tokens, int32_t chunk) {
  if (tokens.empty()) throw Error("--smoothquant: the calibration text has no tokens");
  const LlamaWeights weights = load_llama_weights(file);
  const LlamaHparams& hp = weights.hparams;
  if (hp.context_length > 0) chunk = std::min(chunk, hp.context_length);
  constexpr int32_t kBlockSize = 16;
  const int32_t n_blocks = (chunk + kBlockSize - 1) / kBlockSize;
  ThreadPool threads(static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency())));
  PluginHost host(threads, {});
  const ForwardPlugins plugins =
      create_forward_plugins(host, PluginSpec{LOOM_KIND_ATTENTION, "naive", "", "{}"},
                             PluginSpec{LOOM_KIND_QUANTIZATION, "none", "", "{}"}, hp, LOOM_DTYPE_F32, kBlockSize);
  Recorder recorder{plugins.quant_ops(), {}};
  KvPool pool(KvPoolShape{hp.n_layers, n_blocks, kBlockSize, hp.n_kv_heads, hp.head_dim, LOOM_DTYPE_F32});
  {
    ModelExecutor executor(weights, plugins.attention_ops(), {&recorder, &kRecorderVtable}, pool, threads);
    std::vector<int32_t> table(static_cast<size_t>(n_blocks));
    for (int32_t i = 0; i < n_blocks; ++i) table[static_cast<size_t>(i)] = i;
    BatchBuilder builder(kBlockSize);
    BuiltBatch batch;
    std::vector<float> logits;
    for (size_t at = 0; at < tokens.size(); at += static_cast<size_t>(chunk)) {
      const size_t n = std::min(tokens.size() - at, static_cast<size_t>(chunk));
      SeqSchedule s{tokens.subspan(at, n), 0, table, true};
      builder.build(std::span<const SeqSchedule>(&s, 1), batch);
      // Every row's logits: the executor runs the last layer past attention only on the rows
      // sampled, and the maxima must see every row's activations.
      batch.logits_indices.resize(n);
      for (size_t t = 0; t < n; ++t) batch.logits_indices[t] = static_cast<int32_t>(t);
      executor.execute(batch, logits);
    }
  }
  return std::move(recorder.maxima);
}

}  // namespace loom::convert
