// Cache interface 1.5, block-table groups: every cache plugin either refuses n_groups > 1 as
// unsupported (the host then makes it with one table) or keeps one table per group, and then:
// every group's table covers the sequence's tokens; a windowed group releases exactly the
// blocks wholly before the window of the next token written (entries -1), a full-attention group
// none; released blocks count as available to can_allocate; a prefix registered by every group
// is matched no further than every group holds it, a windowed group needing only the blocks its
// window reaches; fork and free cover all groups.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/common/thread_pool.hpp"
#include "loom/cache.h"
#include "tests/conformance/cache_group_args.hpp"
#include "tests/conformance/cache_request.hpp"
#include "tests/conformance/conformance_support.hpp"

namespace loom {
namespace {

class CacheGroupsConformance : public ::testing::TestWithParam<std::string> {
 protected:
  // The plugin with the groups below, or nullptr (skip) when it keeps one table per sequence.
  std::unique_ptr<LoadedPlugin> make(std::string* skip) const;
  // One group's table of a sequence.
  static std::vector<int32_t> table(const LoadedPlugin& p, uint64_t id, int32_t group) {
    loom_block_list l{};
    p.call("group_block_table", &loom_cache_vtable::group_block_table, id, group, &l);
    return std::vector<int32_t>(l.ids, l.ids + l.count);
  }

  ThreadPool threads_{1};
  PluginHost host_{threads_, {}};
};

// Group 0 full attention, groups 1 and 2 a window of 32 tokens; 16-token blocks, 40 of them.
constexpr const int32_t* kWindows = conformance::kGroupWindows;
constexpr int32_t kBlock = conformance::kGroupBlock;

using Req = conformance::CacheRequest;

std::unique_ptr<LoadedPlugin> CacheGroupsConformance::make(std::string* skip) const {
  const loom_cache_create_args a = conformance::group_create_args();
  return conformance::create_or_skip(host_, LOOM_KIND_CACHE, GetParam(), &a, skip, conformance::kGroupPool);
}

TEST_P(CacheGroupsConformance, WindowedGroupsReleaseWhatLeavesTheWindow) {
  std::string skip;
  const auto p = make(&skip);
  if (!p) GTEST_SKIP() << GetParam() << " keeps one table per sequence: " << skip;
  const loom_cache_vtable& vt = p->vtable<loom_cache_vtable>();
  ASSERT_TRUE(sdk::present(vt, &loom_cache_vtable::group_block_table))
      << "a cache that takes n_groups > 1 must hand out the group tables";

  auto table = [&](uint64_t id, int32_t g) { return CacheGroupsConformance::table(*p, id, g); };
  auto usage = [&] {
    loom_cache_usage u{};
    u.struct_size = sizeof(u);
    p->call("usage", &loom_cache_vtable::usage, &u);
    EXPECT_EQ(u.used_blocks + u.free_blocks + u.cached_blocks, u.total_blocks);
    return u;
  };

  // A 100-token prompt: 7 blocks in each of the 3 groups.
  Req r{1, {}, 0};
  for (int32_t i = 0; i < 100; ++i) r.tokens.push_back(1000 + i);
  loom_request_view v = r.view();
  int32_t cached = -1;
  p->call("allocate", &loom_cache_vtable::allocate, &v, 100, &cached);
  EXPECT_EQ(cached, 0);
  EXPECT_EQ(usage().used_blocks, 21);
  loom_block_list g0{};
  p->call("block_table", &loom_cache_vtable::block_table, uint64_t{1}, &g0);
  EXPECT_EQ(std::vector<int32_t>(g0.ids, g0.ids + g0.count), table(1, 0)) << "block_table is group 0's";
  for (int32_t g = 0; g < 3; ++g) {
    const std::vector<int32_t> t = table(1, g);
    ASSERT_EQ(t.size(), 7u) << "group " << g;
    for (int32_t b : t) EXPECT_GE(b, 0);
  }
  r.computed = 100;
  v = r.view();
  p->call("commit", &loom_cache_vtable::commit, &v);

  // Decoding position 100 reads keys 69..100 in a windowed group: blocks 0-3 (tokens 0..63)
  // wholly precede position 69 and go; block 4 (64..79) stays.
  r.tokens.push_back(7);
  v = r.view();
  p->call("append", &loom_cache_vtable::append, &v, 1);
  EXPECT_EQ(table(1, 0).size(), 7u);
  for (int32_t b : table(1, 0)) EXPECT_GE(b, 0) << "a full-attention group keeps every block";
  for (int32_t g = 1; g < 3; ++g) {
    const std::vector<int32_t> t = table(1, g);
    ASSERT_EQ(t.size(), 7u);
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(t[i], -1) << "group " << g << " block " << i;
    for (size_t i = 4; i < 7; ++i) EXPECT_GE(t[i], 0) << "group " << g << " block " << i;
  }
  EXPECT_EQ(usage().used_blocks, 7 + 3 + 3);

  // Released blocks are available again: a second request needing all the rest fits.
  Req other{2, std::vector<int32_t>(static_cast<size_t>(kBlock) * 9, 5), 0};
  const loom_request_view ov = other.view();
  int32_t ok = -1;
  p->call("can_allocate", &loom_cache_vtable::can_allocate, &ov, kBlock * 9, &ok);
  EXPECT_EQ(ok, 1) << "27 blocks for 3 x 9, 27 left";
  p->call("can_allocate", &loom_cache_vtable::can_allocate, &ov, kBlock * 9 + 1, &ok);
  EXPECT_EQ(ok, 0) << "3 x 10 blocks do not fit";

  // The prefix is found again: group 0's six full blocks, and in a windowed group the two the
  // window of token 96 (positions 65..96) reads; the four before it are not held.
  Req again{3, std::vector<int32_t>(r.tokens.begin(), r.tokens.begin() + 100), 0};
  const loom_request_view av = again.view();
  int32_t hit = -1;
  p->call("match_prefix", &loom_cache_vtable::match_prefix, &av, &hit);
  EXPECT_EQ(hit, 96) << "six full blocks, the last token left to compute";
  p->call("allocate", &loom_cache_vtable::allocate, &av, 100, &cached);
  EXPECT_EQ(cached, 96);
  for (int32_t g = 0; g < 3; ++g) {
    const std::vector<int32_t> t = table(3, g);
    ASSERT_EQ(t.size(), 7u) << "group " << g;
    for (size_t i = 0; i < t.size(); ++i) EXPECT_EQ(t[i] < 0, g > 0 && i < 4) << "group " << g << " block " << i;
  }
  EXPECT_EQ(usage().used_blocks, 13 + 1 + 1 + 1) << "request 3's own blocks: the last of each group";
  // Its groups share group 0's first six blocks with request 1, and the windowed ones theirs.
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(table(3, 0)[i], table(1, 0)[i]);
  for (size_t i = 4; i < 6; ++i) EXPECT_EQ(table(3, 1)[i], table(1, 1)[i]);
  const std::vector<int32_t> global = table(3, 0);
  for (int32_t g = 1; g < 3; ++g) {
    for (int32_t b : table(3, g)) {
      if (b >= 0) {
        EXPECT_EQ(std::count(global.begin(), global.end(), b), 0);
      }
    }
  }

  // Fork shares every group's table, released entries included; free leaves nothing.
  r.computed = 101;
  v = r.view();
  if (sdk::present(vt, &loom_cache_vtable::fork)) {
    p->call("fork", &loom_cache_vtable::fork, &v, uint64_t{4});
    for (int32_t g = 0; g < 3; ++g) EXPECT_EQ(table(4, g), table(1, g)) << "group " << g;
    p->call("free", &loom_cache_vtable::free, uint64_t{4});
  }
  p->call("free", &loom_cache_vtable::free, uint64_t{1});
  p->call("free", &loom_cache_vtable::free, uint64_t{3});
  EXPECT_EQ(usage().used_blocks, 0);
}

TEST_P(CacheGroupsConformance, APrefixMatchesOnlyAsFarAsEveryGroupHoldsIt) {
  std::string skip;
  const auto p = make(&skip);
  if (!p) GTEST_SKIP() << GetParam() << " keeps one table per sequence: " << skip;

  // A 64-token prompt, computed and committed, then freed: 4 blocks cached in each group.
  Req r{1, std::vector<int32_t>(64, 0), 0};
  for (int32_t i = 0; i < 64; ++i) r.tokens[static_cast<size_t>(i)] = 300 + i;
  loom_request_view v = r.view();
  int32_t cached = -1;
  p->call("allocate", &loom_cache_vtable::allocate, &v, 64, &cached);
  r.computed = 64;
  v = r.view();
  p->call("commit", &loom_cache_vtable::commit, &v);
  p->call("free", &loom_cache_vtable::free, uint64_t{1});

  // Fill the pool past its free blocks: two of the twelve cached ones are evicted, and then no
  // group or not every group holds the whole prefix.
  Req filler{2, std::vector<int32_t>(static_cast<size_t>(kBlock) * 9 + 1, 9), 0};
  v = filler.view();
  p->call("allocate", &loom_cache_vtable::allocate, &v, kBlock * 9 + 1, &cached);  // 3 x 10 of 40 blocks
  Req again{3, r.tokens, 0};
  again.tokens.push_back(1);
  const loom_request_view av = again.view();
  int32_t hit = -1;
  p->call("match_prefix", &loom_cache_vtable::match_prefix, &av, &hit);
  EXPECT_EQ(hit % kBlock, 0);
  EXPECT_LT(hit, 64) << "two of twelve cached blocks were evicted: no group holds the whole prefix";
  p->call("free", &loom_cache_vtable::free, uint64_t{2});
  p->call("allocate", &loom_cache_vtable::allocate, &av, 65, &cached);
  EXPECT_EQ(cached, hit);
  loom_cache_usage u{};
  u.struct_size = sizeof(u);
  p->call("usage", &loom_cache_vtable::usage, &u);
  // Five blocks in each group, less the hit's blocks a windowed group's window no longer reaches
  // from token `hit` on (positions hit - 31 ..): which blocks a cache evicted decides the hit.
  const int32_t out_of_window = std::max(0, hit - kWindows[1] + 1) / kBlock;
  EXPECT_EQ(u.used_blocks, 5 + 2 * (5 - out_of_window)) << "hit " << hit;
  p->call("free", &loom_cache_vtable::free, uint64_t{3});
}

TEST_P(CacheGroupsConformance, AWindowedGroupNeedsOnlyItsWindowOfAPrefix) {
  std::string skip;
  const auto p = make(&skip);
  if (!p) GTEST_SKIP() << GetParam() << " keeps one table per sequence: " << skip;
  auto table = [&](uint64_t id, int32_t g) { return CacheGroupsConformance::table(*p, id, g); };

  // Request 1 computes 100 tokens and decodes one more: the windowed groups release (and keep
  // cached) their blocks 0-3.
  Req r{1, {}, 0};
  for (int32_t i = 0; i < 100; ++i) r.tokens.push_back(2000 + i);
  loom_request_view v = r.view();
  int32_t cached = -1;
  p->call("allocate", &loom_cache_vtable::allocate, &v, 100, &cached);
  r.computed = 100;
  v = r.view();
  p->call("commit", &loom_cache_vtable::commit, &v);
  r.tokens.push_back(3);
  v = r.view();
  p->call("append", &loom_cache_vtable::append, &v, 1);
  // A filler takes every free block and evicts those eight cached ones, then leaves.
  Req filler{2, std::vector<int32_t>(static_cast<size_t>(kBlock) * 9, 4), 0};
  v = filler.view();
  p->call("allocate", &loom_cache_vtable::allocate, &v, kBlock * 9, &cached);
  p->call("free", &loom_cache_vtable::free, uint64_t{2});

  // The same prompt again: group 0 holds the whole chain, the windowed groups only blocks 4 and
  // 5, which are all the window of token 96 (positions 65..96) reads.
  Req again{3, std::vector<int32_t>(r.tokens.begin(), r.tokens.begin() + 100), 0};
  const loom_request_view av = again.view();
  int32_t hit = -1;
  p->call("match_prefix", &loom_cache_vtable::match_prefix, &av, &hit);
  EXPECT_EQ(hit, 96);
  p->call("allocate", &loom_cache_vtable::allocate, &av, 100, &cached);
  EXPECT_EQ(cached, 96);
  for (int32_t g = 1; g < 3; ++g) {
    const std::vector<int32_t> t = table(3, g);
    const std::vector<int32_t> held = table(1, g);
    ASSERT_EQ(t.size(), 7u);
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(t[i], -1) << "group " << g << " block " << i << ": out of the window";
    for (size_t i = 4; i < 6; ++i) EXPECT_EQ(t[i], held[i]) << "group " << g << " block " << i << ": shared";
    EXPECT_GE(t[6], 0);
  }
  p->call("free", &loom_cache_vtable::free, uint64_t{1});
  p->call("free", &loom_cache_vtable::free, uint64_t{3});
}

INSTANTIATE_TEST_SUITE_P(Plugins, CacheGroupsConformance, ::testing::ValuesIn(conformance::plugin_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace loom
