#include "core/engine/runtime_stack.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <iterator>
#include <string_view>
#include <thread>

#include "core/common/error.hpp"
#include "core/common/logging.hpp"
#include "core/engine/kv_block_copy.hpp"
#include "core/engine/model_fingerprint.hpp"
#include "core/engine/quantization_choice.hpp"
#include "loom/attention.h"
#include "loom/cache.h"
#include "loom/cache_offload.h"
#include "loom/quantization.h"
#include "loom/scheduler.h"
#include "loom/sdk_core.hpp"
#include "loom/sdk_kv_quant.hpp"
#include "core/engine/speculation.hpp"
#include "core/engine/draft_model_service.hpp"
#include "core/engine/semantic_cache_embed.hpp"
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

// The layout loom-convert --quantize wrote (loom.quantization.format), "" for any other file.
std::string quantization_format(const ModelSource& model) {
  const GgufFile* gguf = model.gguf();
  const GgufValue* v = gguf != nullptr ? gguf->find("loom.quantization.format") : nullptr;
  return v != nullptr ? v->as_string() : std::string();
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
                                             .scale = hparams.softmax_scale(),
                                             .kv_dtype = kv_dtype,
                                             .block_size = block_size,
                                             .device = cpu};
  out.attention = host.create(attention, &attn_args);
  // Attention 1.2: a model with sliding-window layers runs only where the plugin declares them.
  if (hparams.has_windowed_layers() &&
      !sdk::present(out.attention->vtable<loom_attention_vtable>(), &loom_attention_vtable::forward_window)) {
    int32_t windowed = 0, window = 0;
    for (int32_t l = 0; l < hparams.n_layers; ++l) {
      windowed += hparams.window_of(l) > 0 ? 1 : 0;
      window = std::max(window, hparams.window_of(l));
    }
    throw Error("attention plugin \"" + attention.name + "\" cannot run this " + hparams.architecture + " model: " +
                    std::to_string(windowed) + " of its " + std::to_string(hparams.n_layers) +
                    " layers use sliding-window attention (window " + std::to_string(window) + ") and the plugin does not declare it (forward_window, attention interface 1.2; "
                    "naive and flash_cpu do)",
                LOOM_ERR_UNSUPPORTED);
  }
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
  const auto hardware = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  int32_t threads = config.runtime.threads > 0 ? config.runtime.threads : hardware;
  if (threads > hardware) {
    // More spinning workers than cores only makes every parallel_for wait for descheduled ones.
    LOOM_LOG_WARN("runtime.threads = {} is more than the {} hardware threads here; using {}", threads, hardware,
                  hardware);
    threads = hardware;
  }
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
  // Block-table groups (kv_groups.hpp): a hybrid sliding-window model's local layers keep only
  // their window's blocks, where the cache holds one table per group. A cache_offload tier moves
  // every group's blocks (swap: kv_swap.hpp; spill and restore: prefix_tiers.hpp).
  kv_groups_ = KvGroups::single(hparams.n_layers);
  if (hparams.has_windowed_layers()) {
    std::vector<int32_t> windows;
    for (int32_t l = 0; l < hparams.n_layers; ++l) windows.push_back(hparams.window_of(l));
    kv_groups_ = KvGroups::for_windows(windows);
  }
  auto make_cache = [&]() {
    loom_cache_create_args cache_args{};
    cache_args.struct_size = sizeof(cache_args);
    cache_args.n_layers = hparams.n_layers;
    cache_args.n_kv_heads = hparams.n_kv_heads;
    cache_args.head_dim = hparams.head_dim;
    cache_args.kv_dtype = kv_dtype;
    cache_args.bytes_per_token = KvPool::bytes_per_token(kv_groups_.slots, hparams.n_kv_heads, hparams.head_dim, kv_dtype);
    cache_args.max_model_len = max_model_len;
    cache_args.bytes_per_block_extra = KvPool::scale_bytes_per_block(kv_groups_.slots, hparams.n_kv_heads, kv_dtype);
    cache_args.n_groups = kv_groups_.num_groups();
    cache_args.group_windows = kv_groups_.windows.data();
    return refusing_kv_dtype([&] { return host_->create(spec_of(LOOM_KIND_CACHE, config.cache), &cache_args); });
  };
  // A cache without group tables refuses groups (or, outside the SDK, lacks group_block_table):
  // it is made again with one table for every layer.
  auto one_table = [&](const std::string& why) {
    LOOM_LOG_INFO("KV cache: cache '{}' has one block table per request, so windowed layers keep every block ({})",
                  config.cache.plugin, why);
    kv_groups_ = KvGroups::single(hparams.n_layers);
  };
  if (kv_groups_.num_groups() > 1) {
    try {
      cache_ = make_cache();
      if (!sdk::present(cache_->vtable<loom_cache_vtable>(), &loom_cache_vtable::group_block_table)) {
        cache_.reset();
        one_table("no group_block_table, cache interface 1.5");
      }
    } catch (const Error& e) {
      if (e.code() != LOOM_ERR_UNSUPPORTED) throw;
      one_table("it refused block-table groups as unsupported");
    }
  }
  if (!cache_) cache_ = make_cache();
  if (kv_groups_.num_groups() > 1) {
    std::string windows;
    for (int32_t w : kv_groups_.windows) windows += (windows.empty() ? "" : ", ") + std::to_string(w);
    LOOM_LOG_INFO("KV cache: {} block-table groups, each block holding {} of the {} layers, windows [{}] (0: full "
                  "attention); windowed groups release blocks that leave the window",
                  kv_groups_.num_groups(), kv_groups_.slots, hparams.n_layers, windows);
  }
  cache_handle_ = std::make_unique<CacheHandle>(*cache_, kv_groups_.num_groups());
  const loom_cache_layout layout = cache_handle_->layout();
  KvPoolShape shape;
  shape.n_layers = kv_groups_.slots;
  shape.num_blocks = layout.num_blocks;
  shape.block_size = layout.block_size;
  shape.n_kv_heads = hparams.n_kv_heads;
  shape.head_dim = hparams.head_dim;
  shape.dtype = kv_dtype;
  kv_pool_ = std::make_unique<KvPool>(shape);

  // The quantization plugin is the one that claims the file's weight types (quantization_choice).
  std::string quantization_why;
  const PluginSpec quantization = resolve_quantization(*host_, spec_of(LOOM_KIND_QUANTIZATION, config.quantization),
                                                       model->weights(), quantization_format(*model), &quantization_why);
  LOOM_LOG_INFO("quantization: {}", quantization_why);
  forward_ = refusing_kv_dtype([&] {
    return create_forward_plugins(*host_, spec_of(LOOM_KIND_ATTENTION, config.attention), quantization, hparams,
                                  kv_dtype, layout.block_size);
  });
  executor_ = std::make_unique<ModelExecutor>(model->weights(), forward_.attention_ops(), forward_.quant_ops(), *kv_pool_,
                                              *threads_, &kv_groups_);
  batch_builder_ = std::make_unique<BatchBuilder>(layout.block_size, kv_groups_.num_groups());
  head_top_k_ = executor_->head_selects() ? config.runtime.head_top_k : 0;
  if (head_top_k_ > 0)
    LOOM_LOG_INFO("head: greedy and top_k <= {} rows take the quantization plugin's selection of their best tokens",
                  head_top_k_);
  else
    LOOM_LOG_INFO("head: every sampled row computes its whole logits row ({})",
                  config.runtime.head_top_k == 0           ? "runtime.head_top_k = 0"
                  : hparams.final_logit_softcap > 0.0f ? "the model soft-caps its logits"
                                                       : "the quantization plugin has no linear_top_k");

  loom_scheduler_create_args sched_args{};
  sched_args.struct_size = sizeof(sched_args);
  sched_args.max_model_len = max_model_len;
  scheduler_ = host_->create(spec_of(LOOM_KIND_SCHEDULER, config.scheduler), &sched_args);
  scheduler_handle_ = std::make_unique<SchedulerHandle>(*scheduler_);

  // Tiers copy through the staging buffers as well as the pool (prefix spill and restore).
  const int64_t staging_blocks =
      config.cache_offload_staging_blocks > 0 ? config.cache_offload_staging_blocks : layout.num_blocks;
  kv_staging_ = std::make_unique<KvStaging>(*kv_pool_, static_cast<int32_t>(staging_blocks));
  loom_cache_offload_create_args offload_args{};
  offload_args.struct_size = sizeof(offload_args);
  offload_args.copy = kv_staging_->copy_ops();
  if (config.cache_offload) {
    // A tier's block is a pool block: one group's layers. The fingerprint names the group split,
    // so a persistent tier never hands a block of one layout to a run of another.
    const KvLayoutDesc kv_layout{kv_dtype, hparams.n_layers, hparams.n_kv_heads, hparams.head_dim, layout.block_size,
                                 kv_groups_};
    model_fingerprint_ = model_fingerprint(model_file_hash(config.model.path), kv_layout);
    offload_args.model_fingerprint = model_fingerprint_.c_str();
    offload_args.kv_dtype = kv_dtype;
    offload_args.n_layers = kv_groups_.slots;
    offload_args.n_kv_heads = hparams.n_kv_heads;
    offload_args.head_dim = hparams.head_dim;
    offload_args.block_size = layout.block_size;
    cache_offload_ = host_->create(spec_of(LOOM_KIND_CACHE_OFFLOAD, *config.cache_offload), &offload_args);
    for (const PluginTable& next : config.cache_offload_next)
      lower_tiers_.push_back(host_->create(spec_of(LOOM_KIND_CACHE_OFFLOAD, next), &offload_args));
    if (!scheduler_handle_->proposes_preemptions()) {
      LOOM_LOG_WARN("scheduler '{}' speaks interface 1.0: it frees preempted requests' blocks itself, so they are "
                    "recomputed, never swapped to cache_offload '{}'",
                    scheduler_->name(), cache_offload_->name());
    }
  }
  swaps_ = std::make_unique<SwapCoordinator>(*cache_handle_, cache_offload_.get(), offload_args.copy.bytes_per_block,
                                             layout.block_size, kv_groups_.windows);
  if (cache_offload_ && config.cache_offload_spill) {
    if (cache_handle_->reports_evictions()) {
      std::vector<const LoadedPlugin*> chain{cache_offload_.get()};
      for (const auto& t : lower_tiers_) chain.push_back(t.get());
      prefix_tiers_ = std::make_unique<PrefixTiers>(*cache_handle_, *kv_staging_, std::move(chain), layout.block_size);
    } else {
      LOOM_LOG_WARN("cache '{}' does not report evicted blocks (cache interface 1.4): cache_offload '{}' holds "
                    "preemption swaps only, no spilled prefixes",
                    cache_->name(), cache_offload_->name());
    }
  }
  step_scheduler_ = std::make_unique<StepScheduler>(*scheduler_handle_, *cache_handle_, *swaps_);

  // fits() is monotonic in the token count: binary search the largest request that fits.
  auto fits = [&](int32_t n) {
    std::string reason;
    return cache_handle_->fits(n, reason);
  };
  // 64-bit bounds: hi - lo + 1 overflows int32 when max_model_len is INT32_MAX.
  int64_t lo = 0, hi = max_model_len;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (fits(static_cast<int32_t>(mid))) lo = mid; else hi = mid - 1;
  }
  max_fit_tokens_ = static_cast<int32_t>(lo);
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

void RuntimeStack::calibrate(int32_t steps, StepTimeModel& model) {
  const int32_t block_size = batch_builder_->block_size();
  const int32_t wipe = kv_pool_->shape().num_blocks - 1;  // never written here: still all zero
  // (prefill tokens, decode sequences, context of each decode): shapes that separate the four
  // coefficients. The first one runs twice, the first time untimed (page faults, cold caches).
  static constexpr int32_t kShapes[][3] = {{64, 0, 0},  {8, 4, 64},   {256, 0, 0}, {32, 8, 128},
                                           {128, 2, 256}, {16, 16, 32}, {512, 0, 0}, {0, 8, 512}};
  constexpr int32_t kNumShapes = static_cast<int32_t>(std::size(kShapes));
  // Token ids for the longest shape only: sized by max_model_len this was 8 GiB at INT32_MAX.
  int32_t longest = 0;
  for (const auto& shape : kShapes) longest = std::max({longest, shape[0], shape[2]});
  std::vector<int32_t> tokens(static_cast<size_t>(std::min(longest, max_model_len)), 0);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i % 7 + 1);
  std::vector<std::vector<int32_t>> tables;
  std::vector<SeqSchedule> seqs;
  std::vector<float> logits;
  HeadSelection selection;
  int32_t touched = 0;
  for (int32_t step = -1; step < steps; ++step) {
    const auto& shape = kShapes[std::max(step, 0) % kNumShapes];
    const int32_t prefill = std::min(shape[0], max_model_len);
    const int32_t context = std::min(shape[2], max_model_len);
    tables.clear();
    seqs.clear();
    int32_t next_block = 0;
    // Each sequence gets blocks of its own (no two write one slot), as long as the pool lasts.
    auto take = [&](int32_t len) -> bool {
      const int32_t n = (len + block_size - 1) / block_size;
      if (next_block + n > wipe) return false;
      std::vector<int32_t> table(static_cast<size_t>(n));
      for (int32_t b = 0; b < n; ++b) table[static_cast<size_t>(b)] = next_block++;
      tables.push_back(std::move(table));
      return true;
    };
    tables.reserve(static_cast<size_t>(1 + shape[1]));
    StepSample sample;
    if (prefill > 0 && take(prefill)) {
      seqs.push_back(SeqSchedule{std::span<const int32_t>(tokens.data(), static_cast<size_t>(prefill)), 0,
                                 tables.back(), true});
      sample.prefill_tokens = prefill;
      sample.kv_tokens += prefill;
    }
    for (int32_t d = 0; d < shape[1] && context > 0 && take(context); ++d) {
      seqs.push_back(SeqSchedule{std::span<const int32_t>(tokens.data() + context - 1, 1), context - 1,
                                 tables.back(), true});
      seqs.back().top_k = head_top_k_ > 0 ? 1 : 0;  // timed as a greedy decode row
      ++sample.decode_tokens;
      sample.kv_tokens += context;
    }
    touched = std::max(touched, next_block);
    if (seqs.empty()) continue;
    const auto start = std::chrono::steady_clock::now();
    batch_builder_->build(seqs, batch_);
    executor_->execute(batch_, logits, &selection);
    sample.wall_us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start)
                         .count();
    if (step >= 0) model.observe(sample);
    LOOM_LOG_DEBUG("calibration step: {} prefill + {} decode tokens, {} KV tokens: {} us", sample.prefill_tokens,
                   sample.decode_tokens, sample.kv_tokens, sample.wall_us);
  }
  for (int32_t b = 0; b < touched; ++b) kv_pool_->copy_block(wipe, b);
}

// A request whose next prefix blocks a tier holds waits for their fetch before the scheduler
// sees it (prefix_tiers.hpp); schedule() hands it over once they are staged.
void RuntimeStack::scheduler_add(const loom_request_view& view) {
  if (prefix_tiers_ && prefix_tiers_->hold(view)) return;
  scheduler_handle_->add(view);
}

StepPlan& RuntimeStack::schedule(const RequestLookup& lookup, int64_t now_us) {
  if (prefix_tiers_) {
    for (uint64_t id : prefix_tiers_->release_held())
      if (const RequestState* req = lookup(id)) scheduler_handle_->add(req->view());
  }
  step_scheduler_->schedule(lookup, now_us, plan_);
  // Nothing to run while a fetch is in flight: a short nap instead of a spinning engine loop.
  if (plan_.seqs.empty() && prefix_tiers_ && prefix_tiers_->fetching())
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  return plan_;
}

void RuntimeStack::prepare(StepPlan& plan) {
  // Evicted prefix blocks leave for the tiers first: a copy-on-write copy or this step's forward
  // pass may write into them.
  if (prefix_tiers_) prefix_tiers_->spill_evicted();
  // Copy-on-write copies land before anything writes K/V.
  for (const loom_block_copy& c : cache_handle_->take_block_copies()) kv_pool_->copy_block(c.src, c.dst);
  prepare_batch(plan, *cache_handle_, *swaps_, prefix_tiers_.get());
}

void RuntimeStack::execute(const StepPlan& plan, std::vector<float>& logits, HeadSelection& selection) {
  batch_builder_->build(plan.batch, batch_);
  executor_->execute(batch_, logits, &selection);
}

namespace {
SamplerSettings settings_of(const SamplingParams& params) {
  SamplerSettings settings;
  settings.temperature = params.temperature;
  settings.top_k = params.top_k;
  settings.top_p = params.top_p;
  settings.min_p = params.min_p;
  return settings;
}
}  // namespace

int32_t RuntimeStack::sample(std::span<const float> logits, const SamplingParams& params, std::mt19937_64& rng) {
  return sampler_.sample(logits, settings_of(params), rng);
}

int32_t RuntimeStack::sample_top(std::span<const int32_t> ids, std::span<const float> values,
                                 const SamplingParams& params, std::mt19937_64& rng) {
  return sampler_.sample_top(ids, values, settings_of(params), rng);
}

void RuntimeStack::distribution(std::span<const float> logits, const SamplingParams& params, std::vector<double>& probs) {
  sampler_.distribution(logits, settings_of(params), probs);
}

void RuntimeStack::create_semantic_cache(const Config& config, EmbeddingWorker* encoder) {
  if (!config.semantic_cache) return;
  const loom_semantic_cache_create_args args = semantic_cache_create_args(encoder);
  semantic_cache_ = host_->create(spec_of(LOOM_KIND_SEMANTIC_CACHE, *config.semantic_cache), &args);
}

std::unique_ptr<LoadedPlugin> RuntimeStack::create_speculator(const Config& config) {
  if (!config.speculator) return nullptr;
  draft_models_ = std::make_unique<DraftModelService>(*host_, *threads_, *tokenizer,
                                                      spec_of(LOOM_KIND_ATTENTION, config.attention),
                                                      sdk::kv::dtype_from_name(config.kv_dtype.c_str()));
  return loom::create_speculator(*host_, config, tokenizer->vocab_size(), max_model_len, draft_models_->api());
}

void RuntimeStack::release(uint64_t request_id) {
  // Each part runs even when one before it failed (a scheduler that kept a request the cache
  // failed to free would schedule it again); the first failure is rethrown after all of them.
  std::exception_ptr failure;
  auto run = [&](auto&& part) {
    try {
      part();
    } catch (const std::exception&) {
      if (!failure) failure = std::current_exception();
    }
  };
  if (prefix_tiers_) run([&] { prefix_tiers_->release(request_id); });
  run([&] { swaps_->release(request_id); });
  run([&] { scheduler_handle_->remove(request_id); });
  if (failure) std::rethrow_exception(failure);
}

bool RuntimeStack::tier_copies_pending() const { return prefix_tiers_ && prefix_tiers_->copies_pending(); }

void RuntimeStack::read_stats(EngineStats& out) const {
  scheduler_handle_->read_stats(out);
  cache_handle_->read_stats(out);
  swaps_->read_stats(out);
  if (prefix_tiers_) prefix_tiers_->read_stats(out);
}

}  // namespace loom
