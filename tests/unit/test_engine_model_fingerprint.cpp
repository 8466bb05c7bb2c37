// The fingerprint a persistent tier stores beside each block (model_fingerprint.hpp): unchanged
// for a layout without block-table groups (a disk tier written before groups existed stays
// readable), and different wherever a block holds other layers -- groups or not, another split.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/engine/model_fingerprint.hpp"

namespace loom {
namespace {

KvLayoutDesc layout(KvGroups groups) {
  return KvLayoutDesc{LOOM_DTYPE_F32, 3, 1, 32, 16, std::move(groups)};
}

TEST(ModelFingerprint, OneTableKeepsTheFormatBeforeGroups) {
  const std::string expected = "00000000000abcde-t" + std::to_string(static_cast<int>(LOOM_DTYPE_F32)) + "-L3-H1-D32-B16";
  EXPECT_EQ(model_fingerprint(0xabcde, layout({})), expected);
  EXPECT_EQ(model_fingerprint(0xabcde, layout(KvGroups::single(3))), expected);
  const std::vector<int32_t> same_window = {8, 8, 8};
  EXPECT_EQ(model_fingerprint(0xabcde, layout(KvGroups::for_windows(same_window))), expected)
      << "one window for every layer is one table";
}

TEST(ModelFingerprint, GroupsAndTheirSplitNameTheBlock) {
  const std::string one_table = model_fingerprint(0xabcde, layout(KvGroups::single(3)));
  const std::vector<int32_t> local_first = {8, 8, 0}, global_between = {8, 0, 8};
  const std::string grouped = model_fingerprint(0xabcde, layout(KvGroups::for_windows(local_first)));
  EXPECT_EQ(grouped.rfind(one_table + "-G3x1-", 0), 0u) << grouped;
  EXPECT_EQ(grouped.size(), one_table.size() + 6 + 16);
  EXPECT_EQ(model_fingerprint(0xabcde, layout(KvGroups::for_windows(local_first))), grouped) << "deterministic";
  // The same three groups of one layer, but layer 1 is the global one: group 0's blocks hold
  // another layer's K/V.
  EXPECT_NE(model_fingerprint(0xabcde, layout(KvGroups::for_windows(global_between))), grouped);
}

}  // namespace
}  // namespace loom
