#include "core/engine/runtime_stack.hpp"

#include <cmath>
#include <cstddef>
#include <cstring>
#include <string_view>

#include "core/common/error.hpp"
#include "core/common/logging.hpp"
#include "core/engine/kv_block_copy.hpp"
#include "core/executor/prequantized_format.hpp"
#include "loom/attention.h"
#include "loom/cache.h"
#include "loom/cache_offload.h"
#include "loom/quantization.h"
#include "loom/scheduler.h"
#include "loom/sdk_core.hpp"
#include "loom/sdk_kv_quant.hpp"
#include "loom/semantic_cache.h"

namespace loom {
namespace {

PluginSpec spec_of(loom_plugin_kind kind, const PluginTable& table) {
  PluginSpec spec;
  spec.kind = kind;
  spec.name = table.plugin;
  spec.path = table.path;
  spec.config_json = table.config_json;
  return spec;
}

// The scheduler reads request state through the host: host_ctx is this lookup.
struct LookupContext {
  const RuntimeStack::RequestLookup* lookup;
};

loom_status get_request(void* host_ctx, uint64_t request_id, loom_request_view* out) {
  const auto* ctx = static_cast<const LookupContext*>(host_ctx);
  const RequestState* req = (*ctx->lookup)(request_id);
  if (req == nullptr) return LOOM_ERR_NOT_FOUND;
  *out = req->view();
  return LOOM_OK;
}

}  // namespace

ForwardPlugins create_forward_plugins(PluginHost& host, const PluginSpec& attention, const PluginSpec& quantization,
                                      const LlamaHparams& hparams, loom_dtype kv_dtype, int32_t block_size) {
  const loom_device cpu{LOOM_DEVICE_CPU, 0};
  ForwardPlugins out;
  const loom_attention_create_args attn_args{.struct_size = sizeof(loom_attention_create_args),
                                             .n_heads = hparams.n_heads,
                                             .n_kv_heads = hparams.n_kv_heads,
                                             .head_dim = hparams.head_dim,
                                             .scale = 1.0f / std::sqrt(static_cast<float>(hparams.head_dim)),
                                             .kv_dtype = kv_dtype,
                                             .block_size = block_size,
                                             .device = cpu};
  out.attention = host.create(attention, &attn_args);
  const loom_quantization_create_args quant_args{.struct_size = sizeof(loom_quantization_create_args), .device = cpu};
  out.quantization = host.create(quantization, &quant_args);
  return out;
}

RuntimeStack::RuntimeStack(const Config& config)
    : model(ModelSource::open(config.model.path)),
      hparams(model->hparams()),
      tokenizer(model->load_tokenizer()),
      chat_template(model->load_chat_template()) {
  max_model_len = config.model.max_model_len > 0 ? config.model.max_model_len : hparams.context_length;
  LOOM_CHECK(max_model_len > 0, config.model.path + ": the model states no context length; set [model] max_model_len");
  // The attention plugins do not mask windows: stay where full attention is what the model saw.
  if (hparams.sliding_window > 0 && hparams.sliding_window < max_model_len) {
    LOOM_LOG_WARN("{}: sliding_window {} is smaller than max_model_len {}; capping max_model_len to it",
                  config.model.path, hparams.sliding_window, max_model_len);
    max_model_len = hparams.sliding_window;
  }
  const int32_t threads = config.runtime.threads > 0
                              ? config.runtime.threads
                              : static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  threads_ = std::make_unique<ThreadPool>(threads);
  host_ = std::make_unique<PluginHost>(*threads_, config.plugin_dirs);

  // The cache decides the pool's geometry; the core allocates it.
  const loom_dtype kv_dtype = sdk::kv::dtype_from_name(config.kv_dtype.c_str());
  LOOM_CHECK(kv_dtype != LOOM_DTYPE_INVALID, "[cache] kv_dtype \"" + config.kv_dtype + "\" is not a KV dtype");
  // A plugin refusing the KV dtype is reported with both plugins of the pair and the dtype.
  auto refusing_kv_dtype = [&](auto&& create) {
    try {
      return create();
    } catch (const Error& e) {
      if (std::string_view(e.what()).find("kv_dtype") == std::string_view::npos) throw;
      throw Error("[cache] kv_dtype \"" + config.kv_dtype + "\" is not supported by the pair cache \"" +
                      config.cache.plugin + "\" + attention \"" + config.attention.plugin + "\": " + e.what(),
                  e.code());
    }
  };
  loom_cache_create_args cache_args{};
  cache_args.struct_size = sizeof(cache_args);
  cache_args.n_layers = hparams.n_layers;
  cache_args.n_kv_heads = hparams.n_kv_heads;
  cache_args.head_dim = hparams.head_dim;
  cache_args.kv_dtype = kv_dtype;
  cache_args.bytes_per_token = KvPool::bytes_per_token(hparams.n_layers, hparams.n_kv_heads, hparams.head_dim, kv_dtype);
  cache_args.max_model_len = max_model_len;
  cache_args.bytes_per_block_extra = KvPool::scale_bytes_per_block(hparams.n_layers, hparams.n_kv_heads, kv_dtype);
  cache_ = refusing_kv_dtype([&] { return host_->create(spec_of(LOOM_KIND_CACHE, config.cache), &cache_args); });
  loom_cache_layout layout{};
  layout.struct_size = sizeof(layout);
  cache_->call("layout", &loom_cache_vtable::layout, &layout);
  KvPoolShape shape;
  shape.n_layers = hparams.n_layers;
  shape.num_blocks = layout.num_blocks;
  shape.block_size = layout.block_size;
  shape.n_kv_heads = hparams.n_kv_heads;
  shape.head_dim = hparams.head_dim;
  shape.dtype = kv_dtype;
  kv_pool_ = std::make_unique<KvPool>(shape);
  {
    // Reading fork/take_block_copies past a 1.0 plugin's shorter vtable would be out of bounds.
    const auto& vt = cache_->vtable<loom_cache_vtable>();
    can_fork_ = sdk::present(vt, &loom_cache_vtable::fork) && sdk::present(vt, &loom_cache_vtable::take_block_copies);
  }

  if (const GgufFile* gguf = model->gguf()) check_prequantized_plugin(*gguf, config.quantization.plugin);
  forward_ = refusing_kv_dtype([&] {
    return create_forward_plugins(*host_, spec_of(LOOM_KIND_ATTENTION, config.attention),
                                  spec_of(LOOM_KIND_QUANTIZATION, config.quantization), hparams, kv_dtype,
                                  layout.block_size);
  });
  executor_ = std::make_unique<ModelExecutor>(model->weights(), forward_.attention_ops(), forward_.quant_ops(), *kv_pool_,
                                              *threads_);
  batch_builder_ = std::make_unique<BatchBuilder>(layout.block_size);

  loom_scheduler_create_args sched_args{};
  sched_args.struct_size = sizeof(sched_args);
  sched_args.max_model_len = max_model_len;
  scheduler_ = host_->create(spec_of(LOOM_KIND_SCHEDULER, config.scheduler), &sched_args);

  if (config.cache_offload) {
    loom_cache_offload_create_args offload_args{};
    offload_args.struct_size = sizeof(offload_args);
    offload_args.copy = make_kv_copy_ops(*kv_pool_);
    cache_offload_ = host_->create(spec_of(LOOM_KIND_CACHE_OFFLOAD, *config.cache_offload), &offload_args);
    swapper_ = std::make_unique<KvSwapper>(*cache_offload_, offload_args.copy.bytes_per_block);
    block_size_ = layout.block_size;
  }
  if (config.semantic_cache) {
    semantic_cache_ = host_->create(spec_of(LOOM_KIND_SEMANTIC_CACHE, *config.semantic_cache), nullptr);
  }

  // fits() is monotonic in the token count: binary search the largest request that fits.
  auto fits = [&](int32_t n) { return cache_->ask("fits", &loom_cache_vtable::fits, n).ok; };
  int32_t lo = 0, hi = max_model_len;
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) lo = mid; else hi = mid - 1;
  }
  max_fit_tokens_ = lo;
  LOOM_CHECK(max_fit_tokens_ > 0, "plugin cache '" + config.cache.plugin + "': the KV pool (" +
                                      std::to_string(layout.num_blocks) + " blocks of " +
                                      std::to_string(layout.block_size) + " tokens) cannot hold even one token");
  if (max_fit_tokens_ < max_model_len) {
    LOOM_LOG_WARN("the KV pool holds at most {} tokens per request, fewer than max_model_len {}",
                  max_fit_tokens_, max_model_len);
  }
  LOOM_LOG_INFO("model {}: {} layers, dim {}, {} heads ({} KV), vocab {}, context {}", config.model.path,
                hparams.n_layers, hparams.dim, hparams.n_heads, hparams.n_kv_heads, hparams.vocab_size,
                max_model_len);
  LOOM_LOG_INFO("KV pool: {} blocks x {} tokens ({:.1f} MiB); plugins: attention={} quantization={} scheduler={} cache={}",
                layout.num_blocks, layout.block_size, kv_pool_->total_bytes() / 1048576.0,
                forward_.attention->name(), forward_.quantization->name(), scheduler_->name(), cache_->name());
}

RuntimeStack::~RuntimeStack() = default;

bool RuntimeStack::kv_fits(int32_t max_total_tokens, std::string& reason) const {
  if (max_total_tokens <= max_fit_tokens_) return true;
  reason = "prompt + max_tokens = " + std::to_string(max_total_tokens) +
           " tokens cannot fit in the KV cache, which holds at most " + std::to_string(max_fit_tokens_) +
           " tokens per request";
  return false;
}

void RuntimeStack::scheduler_add(const loom_request_view& view) {
  scheduler_->call("add_request", &loom_scheduler_vtable::add_request, &view);
}

ScheduleResult RuntimeStack::schedule(const RequestLookup& lookup, int64_t now_us) {
  loom_sched_stats stats{};
  stats.struct_size = sizeof(stats);
  scheduler_->call("stats", &loom_scheduler_vtable::stats, &stats);
  const size_t capacity = static_cast<size_t>(stats.num_waiting + stats.num_running) + 1;
  sched_buf_.resize(capacity);
  preempt_buf_.resize(capacity);
  reject_buf_.resize(capacity);

  LookupContext lookup_ctx{&lookup};
  loom_sched_context ctx{};
  ctx.struct_size = sizeof(ctx);
  ctx.cache = loom_cache_handle{cache_->self(), &cache_->vtable<loom_cache_vtable>()};
  ctx.host_ctx = &lookup_ctx;
  ctx.get_request = &get_request;
  ctx.now_us = now_us;
  loom_sched_output out{};
  out.struct_size = sizeof(out);
  out.scheduled = sched_buf_.data();
  out.scheduled_capacity = static_cast<int32_t>(capacity);
  out.preempted = preempt_buf_.data();
  out.preempted_capacity = static_cast<int32_t>(capacity);
  out.rejected = reject_buf_.data();
  out.rejected_capacity = static_cast<int32_t>(capacity);
  scheduler_->call("schedule", &loom_scheduler_vtable::schedule, &ctx, &out);

  ScheduleResult result;
  result.scheduled.assign(sched_buf_.begin(), sched_buf_.begin() + out.num_scheduled);
  result.preempted.assign(preempt_buf_.begin(), preempt_buf_.begin() + out.num_preempted);
  for (int32_t i = 0; i < out.num_rejected; ++i) {
    const uint64_t id = reject_buf_[static_cast<size_t>(i)];
    // The reason is the host's own fact (max_fit_tokens_, from fits at start-up), not a second
    // call of fits.
    std::string reason = "the request can never fit in the KV cache";
    if (const RequestState* req = lookup(id)) {
      std::string why;
      if (!kv_fits(req->max_total_tokens, why)) reason = "max_tokens: " + why;
    }
    result.rejected.emplace_back(id, std::move(reason));
  }
  return result;
}

void RuntimeStack::execute(std::span<const StepSequence> seqs, std::vector<float>& logits) {
  seq_buf_.clear();
  for (const auto& s : seqs) {
    const RequestState& req = *s.request;
    loom_block_list blocks{};
    cache_->call("block_table", &loom_cache_vtable::block_table, req.id, &blocks);
    SeqSchedule seq;
    seq.token_ids = std::span<const int32_t>(req.token_ids).subspan(
        static_cast<size_t>(req.num_computed_tokens), static_cast<size_t>(s.num_new_tokens));
    seq.start_pos = req.num_computed_tokens;
    seq.block_table = std::span<const int32_t>(blocks.ids, static_cast<size_t>(blocks.count));
    seq.need_logits = req.num_computed_tokens + s.num_new_tokens == req.num_tokens();
    if (swapper_) last_tables_[req.id].assign(blocks.ids, blocks.ids + blocks.count);
    seq_buf_.push_back(seq);
    // The block table view is valid only until the cache's next mutating call; none happens
    // before the batch is built, and the builder copies it.
  }
  batch_builder_->build(seq_buf_, batch_);
  executor_->execute(batch_, logits);
}

int32_t RuntimeStack::sample(std::span<const float> logits, const SamplingParams& params, std::mt19937_64& rng) {
  SamplerSettings settings;
  settings.temperature = params.temperature;
  settings.top_k = params.top_k;
  settings.top_p = params.top_p;
  settings.min_p = params.min_p;
  return sampler_.sample(logits, settings, rng);
}

void RuntimeStack::cache_commit(const loom_request_view& view) {
  if (cache_->has(&loom_cache_vtable::commit)) cache_->call("commit", &loom_cache_vtable::commit, &view);
}

bool RuntimeStack::fork(const loom_request_view& parent, uint64_t child_id) {
  std::string message;
  const loom_status status = cache_->try_call(&message, &loom_cache_vtable::fork, &parent, child_id);
  if (status == LOOM_OK) return true;
  if (status == LOOM_ERR_OUT_OF_MEMORY) return false;
  throw Error("plugin cache '" + std::string(cache_->name()) + "': fork: " + message, status);
}

void RuntimeStack::apply_block_copies() {
  if (!can_fork_) return;
  loom_block_copy_list copies{};
  cache_->call("take_block_copies", &loom_cache_vtable::take_block_copies, &copies);
  for (int32_t i = 0; i < copies.count; ++i) kv_pool_->copy_block(copies.items[i].src, copies.items[i].dst);
}

void RuntimeStack::release(uint64_t request_id) {
  cache_->call("free", &loom_cache_vtable::free, request_id);
  scheduler_->call("remove_request", &loom_scheduler_vtable::remove_request, request_id);
  if (swapper_) {
    swapper_->forget(request_id);
    last_tables_.erase(request_id);
  }
}

int32_t RuntimeStack::swap_out(uint64_t request_id, int32_t num_computed_tokens) {
  if (!swapper_) return 0;
  const auto it = last_tables_.find(request_id);
  if (it == last_tables_.end()) return 0;
  const int32_t saved = swapper_->swap_out(request_id, it->second, num_computed_tokens, block_size_);
  last_tables_.erase(it);  // those blocks belong to the pool again
  return saved;
}

int32_t RuntimeStack::swap_in(const RequestState& req, int32_t num_new_tokens) {
  if (!swapper_ || !swapper_->has_swapped(req.id)) return 0;
  loom_block_list blocks{};
  cache_->call("block_table", &loom_cache_vtable::block_table, req.id, &blocks);
  // Remembered as execute() does: a chunk restored whole is not executed this step.
  std::vector<int32_t>& table = last_tables_[req.id];
  table.assign(blocks.ids, blocks.ids + blocks.count);
  return restore_swapped(*swapper_, SwapInStep{req.id, req.num_computed_tokens, num_new_tokens, req.num_tokens(), table},
                         block_size_);
}

RuntimeUsage RuntimeStack::usage() const {
  RuntimeUsage u;
  loom_sched_stats stats{};
  stats.struct_size = sizeof(stats);
  scheduler_->call("stats", &loom_scheduler_vtable::stats, &stats);
  u.num_waiting = stats.num_waiting;
  u.num_running = stats.num_running;
  u.num_preemptions = stats.num_preemptions;
  loom_cache_usage cache{};
  cache.struct_size = sizeof(cache);
  cache_->call("usage", &loom_cache_vtable::usage, &cache);
  u.kv_total_blocks = cache.total_blocks;
  u.kv_used_blocks = cache.used_blocks;
  u.kv_free_blocks = cache.free_blocks;
  u.kv_num_seqs = cache.num_seqs;
  u.kv_cached_blocks = cache.cached_blocks;
  u.prefix_hit_tokens = cache.prefix_hit_tokens;
  u.prefix_query_tokens = cache.prefix_query_tokens;
  u.prefix_miss_partial_block_tokens = cache.prefix_miss_partial_block_tokens;
  u.prefix_miss_no_match_tokens = cache.prefix_miss_no_match_tokens;
  u.prefix_miss_evicted_tokens = cache.prefix_miss_evicted_tokens;
  u.prefix_miss_salt_mismatch_tokens = cache.prefix_miss_salt_mismatch_tokens;
  if (swapper_) {
    u.kv_swapped_out_blocks = swapper_->swapped_out_blocks_total();
    u.kv_swapped_in_blocks = swapper_->swapped_in_blocks_total();
  }
  return u;
}

}  // namespace loom
