// The growth rule through real loads, for every kind: a plugin built against the previous minor
// of its kind's header (tests/abi/old_minor, each with its own copy of that minor's structs) is
// loaded by this newer host and answers a real call, and the members its minor lacks read as
// absent although memory past its vtable is not NULL. Kinds still at minor 0 load their 1.0
// plugin, and one claiming a minor newer than the host's is refused with both versions named.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "core/plugin/plugin_host.hpp"
#include "loom/sdk_core.hpp"

namespace loom {
namespace {

PluginSpec spec(loom_plugin_kind kind, const std::string& dir) {
  PluginSpec s;
  s.kind = kind;
  s.name = "old_minor";
  s.path = std::string(LOOM_ABI_VERSION_DIR) + "/" + dir + "/libloom-" + kind_name(kind) + "-old_minor.so";
  s.config_json = "{}";
  return s;
}

loom_tensor_view f32(float* data, std::vector<int64_t> shape) {
  loom_tensor_view v{};
  v.data = data;
  v.dtype = LOOM_DTYPE_F32;
  v.ndim = static_cast<int32_t>(shape.size());
  int64_t stride = 1;
  for (int i = v.ndim - 1; i >= 0; --i) {
    v.shape[i] = shape[static_cast<size_t>(i)];
    v.strides[i] = stride;
    stride *= v.shape[i];
  }
  return v;
}

class AbiVersions : public ::testing::Test {
 protected:
  ThreadPool pool_{1};
  PluginHost host_{pool_, {}};
};

TEST_F(AbiVersions, Attention10LoadsAndForwardRuns) {
  const loom_attention_create_args args{sizeof(args), 2, 1, 2, 0.5f, LOOM_DTYPE_F32, 4, {LOOM_DEVICE_CPU, 0}};
  auto p = host_.create(spec(LOOM_KIND_ATTENTION, "old"), &args);
  EXPECT_EQ(p->desc().iface_minor, 0u);
  const auto& vt = p->vtable<loom_attention_vtable>();
  EXPECT_EQ(vt.struct_size, offsetof(loom_attention_vtable, forward_rope_k));
  EXPECT_FALSE(sdk::present(vt, &loom_attention_vtable::forward_rope_k));  // 1.1's member: absent
  float q[4] = {1, 2, 3, 4}, out[4] = {};
  loom_tensor_view qv = f32(q, {1, 2, 2}), ov = f32(out, {1, 2, 2});
  const int32_t qs[2] = {0, 1}, lens[1] = {1}, pos[1] = {0}, slots[1] = {0}, tables[1] = {0};
  const loom_attention_batch batch{sizeof(batch), 1, 1, qs, lens, pos, slots, tables, 1, 4};
  p->call("forward", &loom_attention_vtable::forward, &batch, &qv, &qv, &qv, &ov, &ov, &ov);
  EXPECT_EQ(std::vector<float>(out, out + 4), (std::vector<float>{2, 4, 6, 8}));
}

// A 1.1 plugin (forward_rope_k, no forward_window): it loads, both its calls run, and the 1.2
// member reads as absent, which is how a host sees it cannot do sliding-window attention.
TEST_F(AbiVersions, Attention11LoadsWithoutSlidingWindow) {
  const loom_attention_create_args args{sizeof(args), 2, 1, 2, 0.5f, LOOM_DTYPE_F32, 4, {LOOM_DEVICE_CPU, 0}};
  auto p = host_.create(spec(LOOM_KIND_ATTENTION, "old_1_1"), &args);
  EXPECT_EQ(p->desc().iface_minor, 1u);
  const auto& vt = p->vtable<loom_attention_vtable>();
  EXPECT_EQ(vt.struct_size, offsetof(loom_attention_vtable, forward_window));
  EXPECT_EQ(kind_info(LOOM_KIND_ATTENTION).version(1).vtable_size, offsetof(loom_attention_vtable, forward_window));
  EXPECT_TRUE(sdk::present(vt, &loom_attention_vtable::forward_rope_k));
  EXPECT_FALSE(sdk::present(vt, &loom_attention_vtable::forward_window));  // 1.2's member: absent
  float q[4] = {1, 2, 3, 4}, out[4] = {};
  loom_tensor_view qv = f32(q, {1, 2, 2}), ov = f32(out, {1, 2, 2});
  const int32_t qs[2] = {0, 1}, lens[1] = {1}, pos[1] = {0}, slots[1] = {0}, tables[1] = {0};
  const loom_attention_batch batch{sizeof(batch), 1, 1, qs, lens, pos, slots, tables, 1, 4};
  p->call("forward", &loom_attention_vtable::forward, &batch, &qv, &qv, &qv, &ov, &ov, &ov);
  EXPECT_EQ(std::vector<float>(out, out + 4), (std::vector<float>{2, 4, 6, 8}));
  const double inv_freq[1] = {1.0};
  const loom_rope rope{sizeof(rope), 2, 0, inv_freq, 1.0};
  p->call("forward_rope_k", &loom_attention_vtable::forward_rope_k, &batch, &rope, &qv, &qv, &qv, &ov, &ov, &ov);
  EXPECT_EQ(std::vector<float>(out, out + 4), (std::vector<float>{3, 6, 9, 12}));
}

// A 1.3 plugin (reads, no linear_experts): it loads, its calls run, and the 1.4 member reads as
// absent, so a host runs a mixture-of-experts layer through linear once per expert.
TEST_F(AbiVersions, Quantization13LoadsWithoutLinearExperts) {
  const loom_quantization_create_args args{sizeof(args), {LOOM_DEVICE_CPU, 0}};
  auto p = host_.create(spec(LOOM_KIND_QUANTIZATION, "old"), &args);
  EXPECT_EQ(p->desc().iface_minor, 3u);
  const auto& vt = p->vtable<loom_quantization_vtable>();
  EXPECT_EQ(vt.struct_size, offsetof(loom_quantization_vtable, linear_experts));
  EXPECT_EQ(kind_info(LOOM_KIND_QUANTIZATION).version(3).vtable_size, offsetof(loom_quantization_vtable, linear_experts));
  EXPECT_TRUE(sdk::present(vt, &loom_quantization_vtable::prepare_weight_info));
  EXPECT_TRUE(sdk::present(vt, &loom_quantization_vtable::linear_group));
  EXPECT_TRUE(sdk::present(vt, &loom_quantization_vtable::reads));
  EXPECT_FALSE(sdk::present(vt, &loom_quantization_vtable::linear_experts));  // 1.4's member: absent
  EXPECT_TRUE(p->ask("supports", &loom_quantization_vtable::supports, LOOM_DTYPE_F32).ok);
  const sdk::Verdict q8 = p->ask("supports", &loom_quantization_vtable::supports, LOOM_DTYPE_Q8_0);
  EXPECT_FALSE(q8.ok);
  EXPECT_EQ(q8.reason, "old_minor reads f32 only");
  int32_t reading = -1;
  p->call("reads", &loom_quantization_vtable::reads, "", LOOM_DTYPE_F32, &reading);
  EXPECT_EQ(reading, LOOM_QUANT_READS_AS_STORED);
  float w[6] = {1, 0, 2, 0, 1, -1}, x[3] = {1, 2, 3}, y[2] = {};
  loom_tensor_view wv = f32(w, {2, 3}), xv = f32(x, {1, 3}), yv = f32(y, {1, 2});
  void* handle = nullptr;
  p->call("prepare_weight_info", &loom_quantization_vtable::prepare_weight_info, &wv, nullptr, &handle);
  p->call("linear", &loom_quantization_vtable::linear, handle, &xv, &yv);
  EXPECT_EQ(y[0], 7.0f);   // 1*1 + 0*2 + 2*3
  EXPECT_EQ(y[1], -1.0f);  // 0*1 + 1*2 - 1*3
  float y2[2] = {};
  loom_tensor_view y2v = f32(y2, {1, 2});
  p->call("linear_group", &loom_quantization_vtable::linear_group, &handle, 1, &xv, &y2v);
  EXPECT_EQ(y2[0], 7.0f);
  vt.release_weight(p->self(), handle);
}

TEST_F(AbiVersions, Cache11LoadsWithTheNewerCreateArgsAndAnswersFitsInOneCall) {
  loom_cache_create_args args{};
  args.struct_size = sizeof(args);  // 1.2's, longer than the plugin's 1.1 copy
  args.n_layers = 1;
  args.n_kv_heads = 1;
  args.head_dim = 2;
  args.kv_dtype = LOOM_DTYPE_F32;
  args.bytes_per_token = 16;
  args.max_model_len = 16;
  args.bytes_per_block_extra = 0;
  auto p = host_.create(spec(LOOM_KIND_CACHE, "old"), &args);
  EXPECT_EQ(p->desc().iface_minor, 1u);
  EXPECT_EQ(kind_info(LOOM_KIND_CACHE).version(1).create_args_size, offsetof(loom_cache_create_args, bytes_per_block_extra));
  loom_cache_layout layout{sizeof(layout), 0, 0};
  p->call("layout", &loom_cache_vtable::layout, &layout);
  EXPECT_EQ(layout.num_blocks, 4);
  EXPECT_EQ(layout.block_size, 4);
  EXPECT_TRUE(p->ask("fits", &loom_cache_vtable::fits, int32_t{16}).ok);
  const sdk::Verdict no = p->ask("fits", &loom_cache_vtable::fits, int32_t{17});
  EXPECT_FALSE(no.ok);
  EXPECT_EQ(no.reason, "old_minor holds 16 tokens, not 17");
}

TEST_F(AbiVersions, Scheduler10LoadsAndCountsRequests) {
  const loom_scheduler_create_args args{sizeof(args), 16};
  auto p = host_.create(spec(LOOM_KIND_SCHEDULER, "old"), &args);
  EXPECT_EQ(p->desc().iface_minor, 0u);
  loom_request_view r{};
  r.struct_size = sizeof(r);
  r.request_id = 7;
  p->call("add_request", &loom_scheduler_vtable::add_request, &r);
  p->call("add_request", &loom_scheduler_vtable::add_request, &r);
  loom_sched_stats stats{};
  stats.struct_size = sizeof(stats);
  p->call("stats", &loom_scheduler_vtable::stats, &stats);
  EXPECT_EQ(stats.num_waiting, 2);
}

TEST_F(AbiVersions, CacheOffload10LoadsAndKeepsKeys) {
  loom_cache_offload_create_args args{};
  args.struct_size = sizeof(args);
  args.copy.struct_size = sizeof(args.copy);
  auto p = host_.create(spec(LOOM_KIND_CACHE_OFFLOAD, "old"), &args);
  EXPECT_EQ(p->desc().iface_minor, 0u);
  int32_t present = -1;
  p->call("contains", &loom_cache_offload_vtable::contains, uint64_t{42}, &present);
  EXPECT_EQ(present, 0);
  p->call("save", &loom_cache_offload_vtable::save, uint64_t{42}, int32_t{0});
  p->call("contains", &loom_cache_offload_vtable::contains, uint64_t{42}, &present);
  EXPECT_EQ(present, 1);
}

TEST_F(AbiVersions, SemanticCache10LoadsAndReturnsWhatItStored) {
  auto p = host_.create(spec(LOOM_KIND_SEMANTIC_CACHE, "old"), nullptr);
  EXPECT_EQ(p->desc().iface_minor, 0u);
  char text[16] = "hello";
  loom_semantic_answer answer{sizeof(answer), text, sizeof(text), 5, 1, 0};
  loom_semantic_query query{};
  query.struct_size = sizeof(query);
  p->call("store", &loom_semantic_cache_vtable::store, &query, &answer);
  char back[16] = {};
  loom_semantic_answer got{sizeof(got), back, sizeof(back), 0, 0, 0};
  int32_t hit = 0;
  p->call("lookup", &loom_semantic_cache_vtable::lookup, &query, &hit, &got);
  EXPECT_EQ(hit, 1);
  EXPECT_EQ(std::string(back, got.length), "hello");
}

// A 1.1 plugin (no create args) loads beside a host that hands 1.2's create args with an embed
// callback it never reads; its 1.1 members (needs_embedding, stats, the answer's similarity) work.
TEST_F(AbiVersions, SemanticCache11LoadsWithTheHostsCreateArgsAndReportsItsStats) {
  loom_semantic_cache_create_args args{};
  args.struct_size = sizeof(args);
  args.embedding_dim = 4;
  args.embed = [](void*, const char*, size_t, float*, loom_error_buf*) { return LOOM_ERR_INTERNAL; };
  auto p = host_.create(spec(LOOM_KIND_SEMANTIC_CACHE, "old_1_1"), &args);
  EXPECT_EQ(p->desc().iface_minor, 1u);
  const auto& vt = p->vtable<loom_semantic_cache_vtable>();
  EXPECT_EQ(vt.struct_size, sizeof(loom_semantic_cache_vtable));
  EXPECT_EQ(kind_info(LOOM_KIND_SEMANTIC_CACHE).version(1).create_args_size, 0u);
  EXPECT_EQ(kind_info(LOOM_KIND_SEMANTIC_CACHE).version(2).create_args_size, sizeof(loom_semantic_cache_create_args));
  EXPECT_EQ(vt.needs_embedding(p->self()), 0);
  char text[16] = "hello";
  loom_semantic_answer answer{sizeof(answer), text, sizeof(text), 5, 1, 0, 1.0f};
  loom_semantic_query query{};
  query.struct_size = sizeof(query);
  p->call("store", &loom_semantic_cache_vtable::store, &query, &answer);
  char back[16] = {};
  loom_semantic_answer got{sizeof(got), back, sizeof(back), 0, 0, 0, 1.0f};
  int32_t hit = 0;
  p->call("lookup", &loom_semantic_cache_vtable::lookup, &query, &hit, &got);
  EXPECT_EQ(hit, 1);
  EXPECT_EQ(std::string(back, got.length), "hello");
  EXPECT_FLOAT_EQ(got.similarity, 0.5f);
  loom_semantic_cache_stats st{};
  st.struct_size = sizeof(st);
  p->call("stats", &loom_semantic_cache_vtable::stats, &st);
  EXPECT_EQ(st.entries, 1);
}

// Kinds at minor 0: the build claiming the host's minor + 1 is refused, both versions named.
TEST_F(AbiVersions, MinorNewerThanTheHostIsRefusedForEveryMinorZeroKind) {
  for (loom_plugin_kind kind : {LOOM_KIND_SCHEDULER, LOOM_KIND_CACHE_OFFLOAD, LOOM_KIND_SEMANTIC_CACHE}) {
    const KindInfo& info = kind_info(kind);
    const PluginSpec s = spec(kind, "newer");
    const std::string host = "1." + std::to_string(info.iface_minor);
    const std::string newer = "1." + std::to_string(info.iface_minor + 1);
    try {
      host_.create(s, nullptr);
      ADD_FAILURE() << kind_name(kind) << ": a newer minor loaded";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "plugin " + kind_name(kind) + " 'old_minor' (" + s.path + "): " +
                                           kind_name(kind) + " interface " + newer + " is newer than the host's " +
                                           host + " (minor " + std::to_string(info.iface_minor + 1) + " > " +
                                           std::to_string(info.iface_minor) + "); update the host");
    }
  }
}

}  // namespace
}  // namespace loom
