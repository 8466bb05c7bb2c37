// cache/contiguous: block accounting, first fit, fits refusal, reservation-bounded append, config.
#include <gtest/gtest.h>

#include "core/common/thread_pool.hpp"
#include "core/plugin/plugin_host.hpp"
#include "loom/cache.h"

namespace loom {
namespace {

loom_request_view req(uint64_t id, int32_t max_total, int32_t computed = 0) {
  loom_request_view r{};
  r.struct_size = sizeof(r);
  r.request_id = id;
  r.max_total_tokens = max_total;
  r.num_computed_tokens = computed;
  r.num_tokens = computed;
  return r;
}

class Contiguous : public ::testing::Test {
 protected:
  std::unique_ptr<LoadedPlugin> make(const std::string& config, int64_t bytes_per_token = 64) {
    loom_cache_create_args a{};
    a.struct_size = sizeof(a);
    a.n_layers = 1;
    a.n_kv_heads = 1;
    a.head_dim = 8;
    a.kv_dtype = LOOM_DTYPE_F32;
    a.bytes_per_token = bytes_per_token;
    a.max_model_len = 1024;
    return host_.create(PluginSpec{LOOM_KIND_CACHE, "contiguous", "", config}, &a);
  }
  const loom_cache_vtable& vt(const LoadedPlugin& p) { return p.vtable<loom_cache_vtable>(); }
  std::vector<int32_t> table(const LoadedPlugin& p, uint64_t id) {
    loom_block_list l{};
    p.call("block_table", &loom_cache_vtable::block_table, id, &l);
    return std::vector<int32_t>(l.ids, l.ids + l.count);
  }
  int32_t can(const LoadedPlugin& p, const loom_request_view& r, int32_t n) {
    int32_t ok = -1;
    p.call("can_allocate", &loom_cache_vtable::can_allocate, &r, n, &ok);
    return ok;
  }
  loom_status alloc(const LoadedPlugin& p, const loom_request_view& r, int32_t n) {
    int32_t cached = -1;
    const loom_status s = p.try_call(nullptr, &loom_cache_vtable::allocate, &r, n, &cached);
    if (s == LOOM_OK) {
      EXPECT_EQ(cached, 0);
    }
    return s;
  }
  loom_cache_usage usage(const LoadedPlugin& p) {
    loom_cache_usage u{};
    u.struct_size = sizeof(u);
    p.call("usage", &loom_cache_vtable::usage, &u);
    return u;
  }

  ThreadPool pool_{1};
  PluginHost host_{pool_, {}};
};

TEST_F(Contiguous, FirstFitAccounting) {
  auto p = make(R"({"num_blocks": 10, "block_size": 4})");
  EXPECT_EQ(vt(*p).match_prefix, nullptr);
  loom_cache_layout lay{};
  p->call("layout", &loom_cache_vtable::layout, &lay);
  EXPECT_EQ(lay.num_blocks, 10);
  EXPECT_EQ(lay.block_size, 4);

  ASSERT_EQ(alloc(*p, req(1, 10), 5), LOOM_OK);  // 3 blocks for max_total 10
  EXPECT_EQ(table(*p, 1), (std::vector<int32_t>{0, 1, 2}));
  ASSERT_EQ(alloc(*p, req(2, 16), 16), LOOM_OK);
  EXPECT_EQ(table(*p, 2), (std::vector<int32_t>{3, 4, 5, 6}));
  EXPECT_EQ(can(*p, req(3, 16), 1), 0);  // 3 free blocks < 4
  std::string msg;
  EXPECT_EQ(p->try_call(&msg, &loom_cache_vtable::allocate, &static_cast<const loom_request_view&>(req(3, 16)), 1,
                        static_cast<int32_t*>(nullptr)),
            LOOM_ERR_OUT_OF_MEMORY);
  EXPECT_NE(msg.find("no free run of 4"), std::string::npos) << msg;

  loom_cache_usage u = usage(*p);
  EXPECT_EQ(u.total_blocks, 10);
  EXPECT_EQ(u.used_blocks, 7);
  EXPECT_EQ(u.free_blocks, 3);
  EXPECT_EQ(u.cached_blocks, 0);
  EXPECT_EQ(u.num_seqs, 2);

  p->call("free", &loom_cache_vtable::free, uint64_t{1});
  // 6 free blocks but in two runs of 3: a 4-block reservation still does not fit.
  EXPECT_EQ(can(*p, req(3, 16), 1), 0);
  ASSERT_EQ(alloc(*p, req(4, 12), 1), LOOM_OK);
  EXPECT_EQ(table(*p, 4), (std::vector<int32_t>{0, 1, 2}));  // first fit: the lowest run
  ASSERT_EQ(alloc(*p, req(5, 9), 1), LOOM_OK);
  EXPECT_EQ(table(*p, 5), (std::vector<int32_t>{7, 8, 9}));
  u = usage(*p);
  EXPECT_EQ(u.used_blocks + u.free_blocks + u.cached_blocks, u.total_blocks);
  EXPECT_EQ(u.free_blocks, 0);
  EXPECT_EQ(u.num_seqs, 3);

  // Allocating a sequence twice is an error; freeing an unknown one is not.
  EXPECT_EQ(alloc(*p, req(2, 16), 1), LOOM_ERR_INVALID_ARGUMENT);
  p->call("free", &loom_cache_vtable::free, uint64_t{99});
  loom_block_list l{};
  EXPECT_EQ(p->try_call(nullptr, &loom_cache_vtable::block_table, uint64_t{99}, &l), LOOM_ERR_NOT_FOUND);
}

TEST_F(Contiguous, AppendStaysInsideTheReservation) {
  auto p = make(R"({"num_blocks": 8, "block_size": 4})");
  ASSERT_EQ(alloc(*p, req(1, 16), 10), LOOM_OK);
  const loom_request_view at10 = req(1, 16, 10);
  EXPECT_EQ(can(*p, at10, 6), 1);
  EXPECT_EQ(can(*p, at10, 7), 0);
  p->call("append", &loom_cache_vtable::append, &at10, 6);
  std::string msg;
  EXPECT_EQ(p->try_call(&msg, &loom_cache_vtable::append, &at10, 7), LOOM_ERR_OUT_OF_MEMORY);
  EXPECT_NE(msg.find("beyond its reservation of 16"), std::string::npos) << msg;
  const loom_request_view unknown = req(7, 4);
  EXPECT_EQ(p->try_call(nullptr, &loom_cache_vtable::append, &unknown, 1), LOOM_ERR_NOT_FOUND);
  EXPECT_EQ(usage(*p).used_blocks, 4);
}

TEST_F(Contiguous, FitsRefusalNamesBothSizes) {
  auto p = make(R"({"num_blocks": 10, "block_size": 4})");
  int32_t ok = -1;
  p->call("fits", &loom_cache_vtable::fits, 40, &ok);
  EXPECT_EQ(ok, 1);
  loom::ErrorBuffer err;
  loom_error_buf eb = err.buf();
  ASSERT_EQ(vt(*p).fits(p->self(), 41, &ok, &eb), LOOM_OK);
  EXPECT_EQ(ok, 0);
  EXPECT_NE(err.str().find("max_total_tokens 41"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("= 40 tokens"), std::string::npos) << err.str();
}

TEST_F(Contiguous, SizesThePoolFromKvMemory) {
  loom_cache_layout lay{};
  make(R"({"kv_memory": "1KiB", "block_size": 4})", 16)->call("layout", &loom_cache_vtable::layout, &lay);
  EXPECT_EQ(lay.num_blocks, 16);  // 1024 / (4 * 16)
  make(R"({"kv_memory": 1000, "block_size": 4})", 16)->call("layout", &loom_cache_vtable::layout, &lay);
  EXPECT_EQ(lay.num_blocks, 15);
  make("{}", 1024)->call("layout", &loom_cache_vtable::layout, &lay);
  EXPECT_EQ(lay.block_size, 16);
  EXPECT_EQ(lay.num_blocks, 4096);  // 64 MiB / (16 * 1024)
  make(R"({"kv_memory": "0.5 MB", "block_size": 1})", 1000)->call("layout", &loom_cache_vtable::layout, &lay);
  EXPECT_EQ(lay.num_blocks, 500);
}

TEST_F(Contiguous, ConfigErrorsAreAllReported) {
  try {
    make(R"({"kv_memory": "lots", "num_blocks": 4, "block_size": 0, "colour": 1})");
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("\"kv_memory\" must be"), std::string::npos) << m;
    EXPECT_NE(m.find("\"block_size\" must be"), std::string::npos) << m;
    EXPECT_NE(m.find("unknown key \"colour\""), std::string::npos) << m;
    EXPECT_NE(m.find("not both"), std::string::npos) << m;
  }
  EXPECT_THROW(make(R"({"kv_memory": 10, "block_size": 4})", 64), Error);  // not one block
}

}  // namespace
}  // namespace loom
