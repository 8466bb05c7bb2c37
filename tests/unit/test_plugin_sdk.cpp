// sdk.hpp in process: the error buffer, the exception guard, the generated descriptor and
// trampolines (statuses, messages, optional members), and the Host wrapper.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "loom/sdk.hpp"

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

}  // namespace
