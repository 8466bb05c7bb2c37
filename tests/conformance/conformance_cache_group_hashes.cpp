// Cache interface 1.6, group_block_hashes: a cache with block-table groups hands the host the
// chain hashes it registers each group's blocks under, which are the keys take_evicted reports
// them by -- so a cache_offload tier that received a spilled block of group g finds it again for
// a new request. For every plugin that takes groups and offers it: group 0's hashes are
// block_hashes', no two (group, block) share a hash, every evicted block carries the hash of its
// group and position, and capacity and an unknown group are honoured.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "loom/cache.h"
#include "tests/conformance/cache_group_args.hpp"
#include "tests/conformance/cache_request.hpp"
#include "tests/conformance/conformance_support.hpp"

namespace loom {
namespace {

using Req = conformance::CacheRequest;

// Group 0 full attention, groups 1 and 2 a window of 32 tokens; 40 blocks of 16 tokens.
constexpr int32_t kGroups = conformance::kGroupCount;

class CacheGroupHashesConformance : public ::testing::TestWithParam<std::string> {
 protected:
  // The plugin with the groups above, or nullptr and the reason to skip.
  std::unique_ptr<LoadedPlugin> make(std::string* skip) const {
    const loom_cache_create_args a = conformance::group_create_args();
    auto p = conformance::create_or_skip(host_, LOOM_KIND_CACHE, GetParam(), &a, skip, conformance::kGroupPool);
    if (p && !sdk::present(p->vtable<loom_cache_vtable>(), &loom_cache_vtable::group_block_hashes)) {
      *skip = "it takes groups but gives no group_block_hashes: the host spills its blocks and restores none";
      p.reset();
    }
    return p;
  }
  static std::vector<uint64_t> hashes(const LoadedPlugin& p, const Req& r, int32_t group, int32_t capacity = 64) {
    const loom_request_view v = r.view();
    std::vector<uint64_t> out(static_cast<size_t>(capacity));
    int32_t count = -1;
    p.call("group_block_hashes", &loom_cache_vtable::group_block_hashes, &v, group, out.data(), capacity, &count);
    out.resize(static_cast<size_t>(count));
    return out;
  }

  ThreadPool threads_{1};
  PluginHost host_{threads_, {}};
};

TEST_P(CacheGroupHashesConformance, EvictedBlocksCarryTheirGroupsHashes) {
  std::string skip;
  const auto p = make(&skip);
  if (!p) GTEST_SKIP() << GetParam() << ": " << skip;

  // A 100-token prompt: six full blocks and a partial one in each group, computed and committed.
  Req r{1, {}, 0};
  for (int32_t i = 0; i < 100; ++i) r.tokens.push_back(500 + i);
  loom_request_view v = r.view();
  int32_t cached = -1;
  p->call("allocate", &loom_cache_vtable::allocate, &v, 100, &cached);
  r.computed = 100;
  v = r.view();
  p->call("commit", &loom_cache_vtable::commit, &v);
  std::vector<std::vector<int32_t>> tables;
  for (int32_t g = 0; g < kGroups; ++g) {
    loom_block_list l{};
    p->call("group_block_table", &loom_cache_vtable::group_block_table, uint64_t{1}, g, &l);
    tables.emplace_back(l.ids, l.ids + l.count);
  }

  std::vector<std::vector<uint64_t>> by_group;
  std::set<uint64_t> distinct;
  for (int32_t g = 0; g < kGroups; ++g) {
    by_group.push_back(hashes(*p, r, g));
    EXPECT_EQ(by_group.back().size(), 6u) << "group " << g << ": the full blocks before the last token";
    distinct.insert(by_group.back().begin(), by_group.back().end());
  }
  EXPECT_EQ(distinct.size(), 18u) << "every group keys its blocks apart";
  std::vector<uint64_t> group0(64);
  int32_t count = -1;
  p->call("block_hashes", &loom_cache_vtable::block_hashes, &v, group0.data(), 64, &count);
  group0.resize(static_cast<size_t>(count));
  EXPECT_EQ(group0, by_group[0]) << "group 0's are block_hashes'";
  EXPECT_EQ(hashes(*p, r, 2, 2), std::vector<uint64_t>(by_group[2].begin(), by_group[2].begin() + 2));
  std::vector<uint64_t> out(4);
  EXPECT_NE(p->try_call(nullptr, &loom_cache_vtable::group_block_hashes, &v, kGroups, out.data(), 4, &count), LOOM_OK)
      << "group 3 of 3";

  // Freed and evicted: each registered block comes back under the hash of its group and place.
  p->call("free", &loom_cache_vtable::free, uint64_t{1});
  int32_t evicted = -1;
  p->call("evict_cached", &loom_cache_vtable::evict_cached, int32_t{40}, &evicted);
  EXPECT_EQ(evicted, 18);
  loom_evicted_block_list list{};
  p->call("take_evicted", &loom_cache_vtable::take_evicted, &list);
  ASSERT_EQ(list.count, 18);
  std::set<uint64_t> seen;
  for (int32_t k = 0; k < list.count; ++k) {
    const loom_evicted_block& b = list.items[k];
    EXPECT_EQ(b.num_tokens, 16);
    bool found = false;
    for (int32_t g = 0; g < kGroups && !found; ++g) {
      for (size_t i = 0; i < 6 && !found; ++i) {
        if (tables[static_cast<size_t>(g)][i] != b.block_id) continue;
        found = true;
        EXPECT_EQ(b.hash, by_group[static_cast<size_t>(g)][i]) << "group " << g << " block " << i;
      }
    }
    EXPECT_TRUE(found) << "block " << b.block_id << " was none of the request's full blocks";
    seen.insert(b.hash);
  }
  EXPECT_EQ(seen, distinct);
}

INSTANTIATE_TEST_SUITE_P(Plugins, CacheGroupHashesConformance, ::testing::ValuesIn(conformance::plugin_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace loom
