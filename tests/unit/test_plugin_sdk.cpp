// sdk.hpp in process: the error buffer, the exception guard, the generated descriptor and
// trampolines (statuses, messages, optional members), and the Host wrapper.
#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "loom/sdk.hpp"
#include "loom/sdk_config.hpp"

namespace {

using loom::sdk::detail::guarded;

std::string written(const std::function<loom_status(loom_error_buf*)>& fn, loom_status* status) {
  char text[64] = "untouched";
  loom_error_buf buf{text, sizeof(text)};
  *status = fn(&buf);
  return text;
}

TEST(SdkWriteError, TruncatesAndTerminates) {
  char text[6];
  loom_error_buf buf{text, sizeof(text)};
  loom::sdk::write_error(&buf, "abcdefghij");
  EXPECT_STREQ(text, "abcde");
  loom::sdk::write_error(&buf, "xy");
  EXPECT_STREQ(text, "xy");
}

TEST(SdkWriteError, NeverSplitsAUtf8Sequence) {
  char text[4];
  loom_error_buf buf{text, sizeof(text)};
  loom::sdk::write_error(&buf, "h\xc3\xa9\xc3\xa9");  // "héé": 5 bytes, room for 3
  EXPECT_STREQ(text, "h\xc3\xa9");
  char small[3];
  loom_error_buf buf2{small, sizeof(small)};
  loom::sdk::write_error(&buf2, "h\xe2\x82\xac");  // "h€": the euro sign needs 3 bytes
  EXPECT_STREQ(small, "h");
}

TEST(SdkWriteError, SafeOnEmptyBuffers) {
  loom::sdk::write_error(nullptr, "x");
  loom_error_buf none{nullptr, 16};
  loom::sdk::write_error(&none, "x");
  char one = 'z';
  loom_error_buf zero{&one, 0};
  loom::sdk::write_error(&zero, "x");
  EXPECT_EQ(one, 'z');
  loom_error_buf just_nul{&one, 1};
  loom::sdk::write_error(&just_nul, "x");
  EXPECT_EQ(one, '\0');
}

TEST(SdkGuard, MapsOutcomesToStatusesAndMessages) {
  loom_status s;
  EXPECT_EQ(written([](loom_error_buf* e) { return guarded(e, [] {}); }, &s), "untouched");
  EXPECT_EQ(s, LOOM_OK);
  EXPECT_EQ(
      written([](loom_error_buf* e) { return guarded(e, [] { return LOOM_ERR_OUT_OF_MEMORY; }); },
              &s),
      "out of memory");
  EXPECT_EQ(s, LOOM_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(written(
                [](loom_error_buf* e) {
                  return guarded(e, [] { throw loom::sdk::ConfigError("unknown key 'x'"); });
                },
                &s),
            "unknown key 'x'");
  EXPECT_EQ(s, LOOM_ERR_CONFIG);
  EXPECT_EQ(written(
                [](loom_error_buf* e) {
                  return guarded(e, [] { throw loom::sdk::Error(LOOM_ERR_UNSUPPORTED, "no fp8"); });
                },
                &s),
            "no fp8");
  EXPECT_EQ(s, LOOM_ERR_UNSUPPORTED);
  EXPECT_EQ(
      written([](loom_error_buf* e) { return guarded(e, [] { throw std::bad_alloc(); }); }, &s),
      "out of memory (std::bad_alloc)");
  EXPECT_EQ(s, LOOM_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(written(
                [](loom_error_buf* e) {
                  return guarded(e, [] { throw std::out_of_range("index 7 >= 3"); });
                },
                &s),
            "index 7 >= 3");
  EXPECT_EQ(s, LOOM_ERR_INTERNAL);
  EXPECT_EQ(written([](loom_error_buf* e) { return guarded(e, [] { throw 42; }); }, &s),
            "unknown exception");
  EXPECT_EQ(s, LOOM_ERR_INTERNAL);
}

TEST(SdkCheck, ThrowsWithTheCalleesMessage) {
  loom::sdk::ErrorBuffer err;
  loom::sdk::write_error(err.buf(), "no free block");
  try {
    loom::sdk::check(LOOM_ERR_OUT_OF_MEMORY, err, "cache append");
    FAIL();
  } catch (const loom::sdk::Error& e) {
    EXPECT_STREQ(e.what(), "cache append: no free block");
    EXPECT_EQ(e.status(), LOOM_ERR_OUT_OF_MEMORY);
  }
  EXPECT_NO_THROW(loom::sdk::check(LOOM_OK, err, "x"));
}

// An attention plugin class: counts live instances, fails on demand.
int g_live = 0;
class TestAttention {
 public:
  TestAttention(const loom::sdk::Host&, const loom_attention_create_args& args,
                std::string_view config) {
    if (config == R"({"bad":1})") throw loom::sdk::ConfigError("unknown key 'bad'");
    if (args.head_dim == 0) throw std::runtime_error("head_dim must be > 0");
    ++g_live;
  }
  ~TestAttention() { --g_live; }
  loom_status forward(const loom_attention_batch* batch, const loom_tensor_view*,
                      const loom_tensor_view*, const loom_tensor_view*, loom_tensor_view*,
                      loom_tensor_view*, loom_tensor_view*) {
    if (batch == nullptr) throw loom::sdk::Error(LOOM_ERR_INVALID_ARGUMENT, "batch is NULL");
    return LOOM_OK;
  }
  static bool validate(std::string_view config, std::string& problems) {
    if (config != "{}") problems = "takes no keys";
    return problems.empty();
  }
};
using AttentionPlugin = loom::sdk::detail::Plugin<TestAttention, loom_attention_vtable>;

TEST(SdkPlugin, DescriptorFields) {
  const loom_plugin_desc d = AttentionPlugin::describe("test", "0.2.0", "a test");
  EXPECT_EQ(d.struct_size, sizeof(loom_plugin_desc));
  EXPECT_EQ(d.abi_version, static_cast<uint32_t>(LOOM_ABI_VERSION));
  EXPECT_EQ(d.kind, LOOM_KIND_ATTENTION);
  EXPECT_EQ(d.iface_major, static_cast<uint32_t>(LOOM_ATTENTION_IFACE_MAJOR));
  EXPECT_EQ(d.iface_minor, static_cast<uint32_t>(LOOM_ATTENTION_IFACE_MINOR));
  EXPECT_STREQ(d.name, "test");
  EXPECT_EQ(d.score, nullptr);  // the class has no score()
  ASSERT_NE(d.validate, nullptr);
  char text[64];
  loom_error_buf err{text, sizeof(text)};
  EXPECT_EQ(d.validate("{}", &err), LOOM_OK);
  EXPECT_EQ(d.validate(R"({"a":1})", &err), LOOM_ERR_CONFIG);
  EXPECT_STREQ(text, "takes no keys");
}

TEST(SdkPlugin, CreateForwardDestroy) {
  const loom_plugin_desc d = AttentionPlugin::describe("test", "0.2.0", "a test");
  loom_attention_create_args args{};
  args.struct_size = sizeof(args);
  args.head_dim = 8;
  char text[64] = "";
  loom_error_buf err{text, sizeof(text)};
  void* self = nullptr;
  const void* vt = nullptr;
  ASSERT_EQ(d.create(nullptr, &args, "{}", &self, &vt, &err), LOOM_OK);
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(g_live, 1);
  const auto* table = static_cast<const loom_attention_vtable*>(vt);
  EXPECT_EQ(table->struct_size, sizeof(loom_attention_vtable));
  loom_attention_batch batch{};
  EXPECT_EQ(
      table->forward(self, &batch, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &err),
      LOOM_OK);
  EXPECT_EQ(
      table->forward(self, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &err),
      LOOM_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(text, "batch is NULL");
  d.destroy(self);
  EXPECT_EQ(g_live, 0);
}

TEST(SdkPlugin, CreateFailures) {
  const loom_plugin_desc d = AttentionPlugin::describe("test", "0.2.0", "a test");
  loom_attention_create_args args{};
  args.struct_size = sizeof(args);
  args.head_dim = 8;
  char text[96] = "";
  loom_error_buf err{text, sizeof(text)};
  void* self = reinterpret_cast<void*>(1);
  const void* vt = nullptr;
  EXPECT_EQ(d.create(nullptr, &args, R"({"bad":1})", &self, &vt, &err), LOOM_ERR_CONFIG);
  EXPECT_STREQ(text, "unknown key 'bad'");
  EXPECT_EQ(self, nullptr);
  args.head_dim = 0;
  EXPECT_EQ(d.create(nullptr, &args, "{}", &self, &vt, &err), LOOM_ERR_INTERNAL);
  EXPECT_STREQ(text, "head_dim must be > 0");
  EXPECT_EQ(d.create(nullptr, nullptr, "{}", &self, &vt, &err), LOOM_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(text, "create: create_args is NULL");
  args.struct_size = 4;
  EXPECT_EQ(d.create(nullptr, &args, "{}", &self, &vt, &err), LOOM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(text).rfind("create: create_args struct_size 4 is smaller than", 0), 0u);
  EXPECT_EQ(g_live, 0);
}

// Two cache classes: one with the optional members, one without.
struct CacheBase {
  loom_status layout(loom_cache_layout*) { return LOOM_OK; }
  loom_status fits(int32_t, int32_t* ok) {
    *ok = 1;
    return LOOM_OK;
  }
  loom_status can_allocate(const loom_request_view*, int32_t, int32_t*) { return LOOM_OK; }
  loom_status allocate(const loom_request_view*, int32_t, int32_t*) { return LOOM_OK; }
  loom_status append(const loom_request_view*, int32_t) { return LOOM_ERR_OUT_OF_MEMORY; }
  void free(uint64_t) {}
  loom_status block_table(uint64_t, loom_block_list*) { return LOOM_OK; }
  loom_status usage(loom_cache_usage*) { return LOOM_OK; }
};
struct PlainCache : CacheBase {};
struct PrefixCache : CacheBase {
  PrefixCache() = default;
  PrefixCache(const loom::sdk::Host&, std::string_view) {}  // the create-args-free form
  loom_status match_prefix(const loom_request_view*, int32_t* n) {
    *n = 16;
    return LOOM_OK;
  }
  void commit(const loom_request_view*) {}
  static int32_t score(const loom_host_api* host, std::string& reason) {
    if (host == nullptr || host->num_cuda_devices == 0) {
      reason = "needs a CUDA device";
      return 0;
    }
    return 3;
  }
};

TEST(SdkPlugin, OptionalMembersAreNullUnlessDefined) {
  const auto& plain = loom::sdk::VtableFor<loom_cache_vtable, PlainCache>::kTable;
  EXPECT_EQ(plain.match_prefix, nullptr);
  EXPECT_EQ(plain.commit, nullptr);
  EXPECT_NE(plain.fits, nullptr);
  const auto& prefix = loom::sdk::VtableFor<loom_cache_vtable, PrefixCache>::kTable;
  ASSERT_NE(prefix.match_prefix, nullptr);
  EXPECT_NE(prefix.commit, nullptr);
  PrefixCache cache;
  int32_t n = 0;
  EXPECT_EQ(prefix.match_prefix(&cache, nullptr, &n, nullptr), LOOM_OK);
  EXPECT_EQ(n, 16);
  char text[32];
  loom_error_buf err{text, sizeof(text)};
  EXPECT_EQ(prefix.append(&cache, nullptr, 1, &err), LOOM_ERR_OUT_OF_MEMORY);
  EXPECT_STREQ(text, "out of memory");
}

TEST(SdkPlugin, ScoreWithReason) {
  const loom_plugin_desc d =
      loom::sdk::detail::Plugin<PrefixCache, loom_cache_vtable>::describe("p", "1", "d");
  ASSERT_NE(d.score, nullptr);
  char text[32];
  loom_error_buf err{text, sizeof(text)};
  loom_host_api api{};
  EXPECT_EQ(d.score(&api, &err), 0);
  EXPECT_STREQ(text, "needs a CUDA device");
  api.num_cuda_devices = 1;
  EXPECT_EQ(d.score(&api, &err), 3);
}

TEST(SdkHost, WithoutAnApiRunsInlineAndDropsLogs) {
  const loom::sdk::Host host(nullptr);
  EXPECT_EQ(host.num_threads(), 1);
  EXPECT_EQ(host.num_cuda_devices(), 0);
  host.info("nowhere ", 1);
  std::vector<int> seen;
  host.parallel_for(5, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) seen.push_back(static_cast<int>(i));
  });
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_THROW(
      host.parallel_for(3, [](int64_t, int64_t, int32_t) { throw std::runtime_error("x"); }),
      std::runtime_error);
}

TEST(SdkHost, LogStreamsEveryPart) {
  struct Captured {
    loom_log_level level = LOOM_LOG_TRACE;
    std::string text;
  } captured;
  loom_host_api api{};
  api.struct_size = sizeof(api);
  api.host_ctx = &captured;
  api.log = [](void* ctx, loom_log_level level, const char* message) {
    static_cast<Captured*>(ctx)->level = level;
    static_cast<Captured*>(ctx)->text = message;
  };
  const loom::sdk::Host host(&api);
  host.warn("blocks: ", 3, " of ", 4.5);
  EXPECT_EQ(captured.level, LOOM_LOG_WARN);
  EXPECT_EQ(captured.text, "blocks: 3 of 4.5");
}

// A cache class in the value-shaped forms: config_spec, a parsed Config in the constructor,
// Verdict answers, returned values instead of out-pointers, references for request views, and
// after_mutation after each change.
struct ValueCacheConfig {
  int32_t blocks = 4;
};
class ValueCache {
 public:
  static const loom::sdk::ConfigSpec<ValueCacheConfig>& config_spec() {
    static const auto spec = loom::sdk::ConfigSpec<ValueCacheConfig>("cache value")
                                 .integer("blocks", &ValueCacheConfig::blocks, "pool blocks", 1, 64);
    return spec;
  }
  ValueCache(const loom::sdk::Host&, const loom_cache_create_args&, const ValueCacheConfig& c) : blocks_(c.blocks) {}
  loom_cache_layout layout() const { return {sizeof(loom_cache_layout), blocks_, 2}; }
  loom::sdk::Verdict fits(int32_t n) const {
    return n <= 2 * blocks_ ? loom::sdk::Verdict::yes() : loom::sdk::Verdict::no("more than " + std::to_string(2 * blocks_));
  }
  int32_t match_prefix(const loom_request_view& r) const { return r.num_tokens / 2; }
  bool can_allocate(const loom_request_view&, int32_t n) const { return n <= 2; }
  void allocate(const loom_request_view&, int32_t, int32_t* cached) { *cached = 0; }
  void append(const loom_request_view&, int32_t) {}
  void free(uint64_t) {}
  loom_block_list block_table(uint64_t) const { return {table_, 1}; }
  void usage(loom_cache_usage*) const {}
  void after_mutation() { ++mutations; }
  int mutations = 0;

 private:
  int32_t blocks_;
  int32_t table_[1] = {3};
};
using ValueCachePlugin = loom::sdk::detail::Plugin<ValueCache, loom_cache_vtable>;

TEST(SdkPlugin, ValueShapedCacheAnswersInOneCall) {
  const loom_plugin_desc d = ValueCachePlugin::describe("value", "0.1.0", "a test");
  ASSERT_NE(d.config_schema, nullptr);
  EXPECT_STREQ(d.config_schema,
               R"([{"default":4,"help":"pool blocks","key":"blocks","max":64,"min":1,"type":"integer"}])");
  char text[128] = "";
  loom_error_buf err{text, sizeof(text)};
  ASSERT_NE(d.validate, nullptr);
  EXPECT_EQ(d.validate(R"({"blocks": 0})", &err), LOOM_ERR_CONFIG);
  EXPECT_STREQ(text, "cache value: \"blocks\" must be an integer in [1, 64], got 0");
  loom_cache_create_args args{};
  args.struct_size = sizeof(args);
  void* self = nullptr;
  const void* vtp = nullptr;
  ASSERT_EQ(d.create(nullptr, &args, R"({"blocks": 3})", &self, &vtp, &err), LOOM_OK);
  const auto& vt = *static_cast<const loom_cache_vtable*>(vtp);
  loom_cache_layout lay{sizeof(lay), 0, 0};
  EXPECT_EQ(vt.layout(self, &lay, &err), LOOM_OK);
  EXPECT_EQ(lay.num_blocks, 3);
  int32_t ok = -1;
  text[0] = '\0';
  EXPECT_EQ(vt.fits(self, 6, &ok, &err), LOOM_OK);
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(vt.fits(self, 7, &ok, &err), LOOM_OK);  // a no: LOOM_OK, ok = 0, the reason in err
  EXPECT_EQ(ok, 0);
  EXPECT_STREQ(text, "more than 6");
  loom_request_view r{};
  r.struct_size = sizeof(r);
  r.num_tokens = 8;
  int32_t n = -1;
  ASSERT_NE(vt.match_prefix, nullptr);
  EXPECT_EQ(vt.match_prefix(self, &r, &n, &err), LOOM_OK);
  EXPECT_EQ(n, 4);
  EXPECT_EQ(vt.match_prefix(self, nullptr, &n, &err), LOOM_ERR_INVALID_ARGUMENT);  // by reference: NULL refused
  EXPECT_STREQ(text, "request view is NULL");
  EXPECT_EQ(vt.can_allocate(self, &r, 3, &ok, &err), LOOM_OK);
  EXPECT_EQ(ok, 0);
  EXPECT_STREQ(text, "refused without a reason");  // a bool no
  EXPECT_EQ(vt.allocate(self, &r, 2, &n, &err), LOOM_OK);
  EXPECT_EQ(vt.append(self, &r, 1, &err), LOOM_OK);
  EXPECT_EQ(vt.free(self, 1, &err), LOOM_OK);
  EXPECT_EQ(static_cast<ValueCache*>(self)->mutations, 3);  // allocate, append, free
  loom_block_list list{};
  EXPECT_EQ(vt.block_table(self, 1, &list, &err), LOOM_OK);
  ASSERT_EQ(list.count, 1);
  EXPECT_EQ(list.ids[0], 3);
  EXPECT_EQ(vt.commit, nullptr);
  EXPECT_EQ(vt.fork, nullptr);
  d.destroy(self);
}

// A quantization class with typed handles: prepare_weight returns a unique_ptr, linear gets the
// weight by reference, release deletes it; supports answers with a Verdict.
struct Scale {
  float factor;
};
class ScaleQuant {
 public:
  using WeightType = Scale;
  ScaleQuant(const loom::sdk::Host&, std::string_view) {}
  loom::sdk::Verdict supports(loom_dtype t) const {
    return t == LOOM_DTYPE_F32 ? loom::sdk::Verdict::yes() : loom::sdk::Verdict::no("f32 only");
  }
  std::unique_ptr<Scale> prepare_weight(const loom_tensor_view* w, const loom_weight_info* info) const {
    return std::make_unique<Scale>(Scale{*static_cast<const float*>(w->data) * (info != nullptr ? 10.0f : 1.0f)});
  }
  void linear(const Scale& s, const loom_tensor_view* x, loom_tensor_view* y) {
    *static_cast<float*>(y->data) = s.factor * *static_cast<const float*>(x->data);
  }
};

TEST(SdkPlugin, TypedQuantizationHandles) {
  const auto& vt = loom::sdk::VtableFor<loom_quantization_vtable, ScaleQuant>::kTable;
  ScaleQuant q(loom::sdk::Host(nullptr), "{}");
  char text[64] = "";
  loom_error_buf err{text, sizeof(text)};
  int32_t ok = -1;
  EXPECT_EQ(vt.supports(&q, LOOM_DTYPE_Q8_0, &ok, &err), LOOM_OK);
  EXPECT_EQ(ok, 0);
  EXPECT_STREQ(text, "f32 only");
  float w = 3, x = 2, y = 0;
  loom_tensor_view wv{}, xv{}, yv{};
  wv.data = &w;
  xv.data = &x;
  yv.data = &y;
  void* h = nullptr;
  ASSERT_EQ(vt.prepare_weight(&q, &wv, &h, &err), LOOM_OK);
  EXPECT_EQ(vt.linear(&q, h, &xv, &yv, &err), LOOM_OK);
  EXPECT_EQ(y, 6.0f);
  vt.release_weight(&q, h);
  loom_weight_info info{};
  ASSERT_EQ(vt.prepare_weight_info(&q, &wv, &info, &h, &err), LOOM_OK);
  EXPECT_EQ(vt.linear(&q, h, &xv, &yv, &err), LOOM_OK);
  EXPECT_EQ(y, 60.0f);
  vt.release_weight(&q, h);
  EXPECT_EQ(vt.linear(&q, nullptr, &xv, &yv, &err), LOOM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(vt.linear_group, nullptr);
}

// covers/present: the one struct_size check.
TEST(SdkCovers, ReadsOnlyWhatStructSizeCovers) {
  loom_attention_vtable vt{};
  vt.forward_rope_k = reinterpret_cast<decltype(vt.forward_rope_k)>(&g_live);
  vt.struct_size = offsetof(loom_attention_vtable, forward_rope_k);  // a 1.0 vtable
  EXPECT_TRUE(loom::sdk::covers(vt, &loom_attention_vtable::forward));
  EXPECT_FALSE(loom::sdk::present(vt, &loom_attention_vtable::forward_rope_k));
  vt.struct_size = sizeof(vt);
  EXPECT_TRUE(loom::sdk::present(vt, &loom_attention_vtable::forward_rope_k));
  vt.forward_rope_k = nullptr;
  EXPECT_FALSE(loom::sdk::present(vt, &loom_attention_vtable::forward_rope_k));
}

}  // namespace
