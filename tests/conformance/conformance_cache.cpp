// Cache conformance: every cache plugin through the same scripted sequence, with the invariants
// every implementation must keep: block ids inside the pool, a sequence's table covering its
// tokens, no block in two live tables (distinct prompts: no prefix to share), used + free +
// cached == total after every call, a refused allocation changing nothing, free returning all;
// and, for caches with fork (1.1), block sharing and copy-on-write.
#include <gtest/gtest.h>

#include <set>

#include "core/common/thread_pool.hpp"
#include "loom/cache.h"
#include "tests/conformance/cache_request.hpp"
#include "tests/conformance/conformance_support.hpp"

namespace loom {
namespace {

class CacheConformance : public ::testing::TestWithParam<std::string> {
 protected:
  ThreadPool threads_{1};
  PluginHost host_{threads_, {}};
};

using Seq = conformance::CacheRequest;

TEST_P(CacheConformance, ScriptedSequence) {
  loom_cache_create_args a{};
  a.struct_size = sizeof(a);
  a.n_layers = 2;
  a.n_kv_heads = 2;
  a.head_dim = 64;
  a.kv_dtype = LOOM_DTYPE_F32;
  a.bytes_per_token = 2 * 2 * 2 * 64 * 4;
  a.max_model_len = 4096;
  std::string skip;
  const auto p = conformance::create_or_skip(host_, LOOM_KIND_CACHE, GetParam(), &a, &skip);
  if (!p) GTEST_SKIP() << skip;

  loom_cache_layout lay{};
  lay.struct_size = sizeof(lay);
  p->call("layout", &loom_cache_vtable::layout, &lay);
  ASSERT_GT(lay.num_blocks, 8);
  ASSERT_GT(lay.block_size, 0);
  const int64_t capacity = static_cast<int64_t>(lay.num_blocks) * lay.block_size;

  auto usage = [&] {
    loom_cache_usage u{};
    u.struct_size = sizeof(u);
    p->call("usage", &loom_cache_vtable::usage, &u);
    EXPECT_EQ(u.total_blocks, lay.num_blocks);
    EXPECT_EQ(u.used_blocks + u.free_blocks + u.cached_blocks, u.total_blocks);
    return u;
  };
  auto table = [&](uint64_t id) {
    loom_block_list l{};
    p->call("block_table", &loom_cache_vtable::block_table, id, &l);
    return std::vector<int32_t>(l.ids, l.ids + l.count);
  };

  int32_t ok = -1;
  if (capacity < INT32_MAX) {
    p->call("fits", &loom_cache_vtable::fits, static_cast<int32_t>(capacity), &ok);
    EXPECT_EQ(ok, 1);
    ErrorBuffer err;
    loom_error_buf eb = err.buf();
    ASSERT_EQ(p->vtable<loom_cache_vtable>().fits(p->self(), static_cast<int32_t>(capacity + 1), &ok, &eb), LOOM_OK);
    EXPECT_EQ(ok, 0);
    EXPECT_FALSE(err.str().empty()) << "a refusal must say why";
  }

  // Allocate distinct-prompt sequences until the cache says no.
  const int32_t max_total = std::max<int32_t>(3 * lay.block_size, static_cast<int32_t>(capacity / 6));
  std::vector<Seq> live;
  for (uint64_t id = 1;; ++id) {
    Seq s{id, {}, 0, max_total};
    for (int32_t i = 0; i < max_total / 2; ++i) s.tokens.push_back(static_cast<int32_t>(id * 1000 + i));
    const loom_request_view v = s.view();
    const int32_t n = static_cast<int32_t>(s.tokens.size());
    p->call("can_allocate", &loom_cache_vtable::can_allocate, &v, n, &ok);
    if (!ok) {
      const loom_cache_usage before = usage();
      int32_t cached = 0;
      EXPECT_EQ(p->try_call(nullptr, &loom_cache_vtable::allocate, &v, n, &cached), LOOM_ERR_OUT_OF_MEMORY);
      const loom_cache_usage after = usage();
      EXPECT_EQ(after.used_blocks, before.used_blocks);
      EXPECT_EQ(after.num_seqs, before.num_seqs);
      break;
    }
    int32_t cached = -1;
    p->call("allocate", &loom_cache_vtable::allocate, &v, n, &cached);
    EXPECT_EQ(cached, 0) << "distinct prompts share no prefix";
    live.push_back(s);
    ASSERT_LT(live.size(), 10000u) << "the cache never ran out";
  }
  ASSERT_GE(live.size(), 2u);
  EXPECT_EQ(usage().num_seqs, static_cast<int32_t>(live.size()));

  // Tables: inside the pool, covering the tokens, disjoint.
  std::set<int32_t> seen;
  for (const Seq& s : live) {
    const auto t = table(s.id);
    EXPECT_GE(static_cast<int64_t>(t.size()) * lay.block_size, static_cast<int64_t>(s.tokens.size()));
    for (int32_t b : t) {
      EXPECT_GE(b, 0);
      EXPECT_LT(b, lay.num_blocks);
      EXPECT_TRUE(seen.insert(b).second) << "block " << b << " in two tables";
    }
  }

  // Free the first one; the second grows by decoding within its max_total.
  p->call("free", &loom_cache_vtable::free, live[0].id);
  Seq& s = live[1];
  s.computed = static_cast<int32_t>(s.tokens.size());
  while (static_cast<int32_t>(s.tokens.size()) < s.max_total) {
    s.tokens.push_back(7);
    const loom_request_view v = s.view();
    p->call("append", &loom_cache_vtable::append, &v, 1);
    s.computed += 1;
    EXPECT_GE(static_cast<int64_t>(table(s.id).size()) * lay.block_size, s.computed);
    usage();
  }

  for (size_t i = 1; i < live.size(); ++i) p->call("free", &loom_cache_vtable::free, live[i].id);
  p->call("free", &loom_cache_vtable::free, uint64_t{987654321});  // unknown: not an error
  const loom_cache_usage end = usage();
  EXPECT_EQ(end.used_blocks, 0);
  EXPECT_EQ(end.num_seqs, 0);
  loom_block_list l{};
  EXPECT_EQ(p->try_call(nullptr, &loom_cache_vtable::block_table, live[1].id, &l), LOOM_ERR_NOT_FOUND);
}

// Interface 1.1, for every cache whose vtable has fork: a child shares its parent's blocks for
// the parent's computed tokens (a partial last block included), is allocated like a new request
// with those tokens cached, and the first writer into a shared block gets its own copy.
TEST_P(CacheConformance, ForkSharesBlocksAndCopiesOnWrite) {
  loom_cache_create_args a{};
  a.struct_size = sizeof(a);
  a.n_layers = 1;
  a.n_kv_heads = 1;
  a.head_dim = 8;
  a.kv_dtype = LOOM_DTYPE_F32;
  a.bytes_per_token = 2 * 8 * 4;
  a.max_model_len = 4096;
  std::string skip;
  const auto p = conformance::create_or_skip(host_, LOOM_KIND_CACHE, GetParam(), &a, &skip);
  if (!p) GTEST_SKIP() << skip;
  const loom_cache_vtable& vt = p->vtable<loom_cache_vtable>();
  if (vt.struct_size < sizeof(loom_cache_vtable) || vt.fork == nullptr)
    GTEST_SKIP() << GetParam() << " has no fork (a 1.0-style cache)";
  ASSERT_NE(vt.take_block_copies, nullptr) << "fork without take_block_copies";

  loom_cache_layout lay{};
  lay.struct_size = sizeof(lay);
  p->call("layout", &loom_cache_vtable::layout, &lay);
  const int32_t bs = lay.block_size;
  ASSERT_GE(lay.num_blocks, 4);
  auto table = [&](uint64_t id) {
    loom_block_list l{};
    p->call("block_table", &loom_cache_vtable::block_table, id, &l);
    return std::vector<int32_t>(l.ids, l.ids + l.count);
  };
  auto copies = [&] {
    loom_block_copy_list l{};
    p->call("take_block_copies", &loom_cache_vtable::take_block_copies, &l);
    return std::vector<loom_block_copy>(l.items, l.items + l.count);
  };
  auto used = [&] {
    loom_cache_usage u{};
    u.struct_size = sizeof(u);
    p->call("usage", &loom_cache_vtable::usage, &u);
    EXPECT_EQ(u.used_blocks + u.free_blocks + u.cached_blocks, u.total_blocks);
    return u.used_blocks;
  };

  // The parent: one block and a half computed (just 2 tokens when a block holds 1).
  const int32_t n = bs > 1 ? bs + bs / 2 : 2;
  Seq parent{1, {}, 0, 4 * bs + 4};
  for (int32_t i = 0; i < n; ++i) parent.tokens.push_back(500 + i);
  loom_request_view v = parent.view();
  int32_t cached = -1;
  p->call("allocate", &loom_cache_vtable::allocate, &v, n, &cached);
  parent.computed = n;
  v = parent.view();
  p->call("commit", &loom_cache_vtable::commit, &v);
  const std::vector<int32_t> parent_blocks = table(1);
  const int32_t used_before = used();

  p->call("fork", &loom_cache_vtable::fork, &v, uint64_t{2});
  EXPECT_EQ(table(2), parent_blocks) << "the child holds the parent's blocks";
  EXPECT_EQ(used(), used_before) << "shared, not copied";

  Seq child{2, parent.tokens, 0, parent.max_total};
  child.tokens.push_back(9);
  const loom_request_view cv = child.view();
  int32_t hit = -1;
  p->call("match_prefix", &loom_cache_vtable::match_prefix, &cv, &hit);
  EXPECT_EQ(hit, n) << "a fork's tokens count as cached, partial block included";
  int32_t ok = -1;
  p->call("can_allocate", &loom_cache_vtable::can_allocate, &cv, n + 1, &ok);
  EXPECT_EQ(ok, 1);
  p->call("allocate", &loom_cache_vtable::allocate, &cv, n + 1, &cached);
  EXPECT_EQ(cached, n);
  const std::vector<int32_t> child_blocks = table(2);
  ASSERT_EQ(child_blocks.size(), static_cast<size_t>((n + 1 + bs - 1) / bs));
  const size_t written = static_cast<size_t>(n / bs);  // the block token n goes into
  for (size_t i = 0; i < written; ++i) EXPECT_EQ(child_blocks[i], parent_blocks[i]) << "full block " << i;
  const std::vector<loom_block_copy> cow = copies();
  if (n % bs != 0) {
    EXPECT_NE(child_blocks[written], parent_blocks[written]) << "the child must not write the parent's block";
    ASSERT_EQ(cow.size(), 1u);
    EXPECT_EQ(cow[0].src, parent_blocks[written]);
    EXPECT_EQ(cow[0].dst, child_blocks[written]);
  } else {
    EXPECT_TRUE(cow.empty()) << "no shared block is written";
  }

  // The parent writes its next token: the block it goes into is its own again.
  parent.tokens.push_back(8);
  v = parent.view();
  p->call("append", &loom_cache_vtable::append, &v, 1);
  EXPECT_EQ(table(1)[written], parent_blocks[written]);
  EXPECT_TRUE(copies().empty());

  // A third child forked and freed before allocation leaves nothing behind.
  const int32_t used_two = used();
  p->call("fork", &loom_cache_vtable::fork, &v, uint64_t{3});
  p->call("free", &loom_cache_vtable::free, uint64_t{3});
  EXPECT_EQ(used(), used_two);

  p->call("free", &loom_cache_vtable::free, uint64_t{1});
  p->call("free", &loom_cache_vtable::free, uint64_t{2});
  EXPECT_EQ(used(), 0);
}

INSTANTIATE_TEST_SUITE_P(Plugins, CacheConformance, ::testing::ValuesIn(conformance::plugin_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace loom
