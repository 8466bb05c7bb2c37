// The physical KV pool: shapes, strides, sizes and zeroed, disjoint memory.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <unistd.h>

#include "core/common/error.hpp"
#include "core/executor/kv_pool.hpp"

namespace loom {
namespace {

// Resident bytes of this process (/proc/self/statm's second field, in pages).
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// A pool sized from free memory may be most of the machine: untouched blocks must not be resident.
TEST(KvPool, UntouchedBlocksCostNoResidentMemory) {
  const int64_t before = resident_bytes();
  KvPool pool(KvPoolShape{4, 4096, 16, 8, 64, LOOM_DTYPE_F32});  // 2 x 4 x 4096 x 16 x 8 x 64 x 4 B = 1 GiB
  ASSERT_GE(pool.total_bytes(), int64_t{1} << 30);
  EXPECT_LT(resident_bytes() - before, int64_t{64} << 20);
  float* last = static_cast<float*>(pool.v(3).data) + (4096 * 16 * 8 * 64 - 1);
  EXPECT_EQ(*last, 0.0f);  // zero when first read, as a fresh pool must be
  *last = 2.0f;
  EXPECT_EQ(*last, 2.0f);
}

TEST(KvPool, ViewsAndSizes) {
  KvPool pool(KvPoolShape{3, 5, 16, 2, 8, LOOM_DTYPE_F32});
  EXPECT_EQ(KvPool::bytes_per_token(3, 2, 8, LOOM_DTYPE_F32), 2 * 3 * 2 * 8 * 4);
  EXPECT_EQ(KvPool::bytes_per_token(3, 2, 8, LOOM_DTYPE_F16), 2 * 3 * 2 * 8 * 2);
  EXPECT_GE(pool.total_bytes(), 2 * 3 * 5 * 16 * 2 * 8 * 4);
  std::set<void*> seen;
  for (int32_t l = 0; l < 3; ++l) {
    for (loom_tensor_view* v : {&pool.k(l), &pool.v(l)}) {
      EXPECT_EQ(v->ndim, 4);
      EXPECT_EQ(v->dtype, LOOM_DTYPE_F32);
      EXPECT_EQ(v->shape[0], 5);
      EXPECT_EQ(v->shape[1], 16);
      EXPECT_EQ(v->shape[2], 2);
      EXPECT_EQ(v->shape[3], 8);
      EXPECT_EQ(v->strides[0], 16 * 2 * 8);
      EXPECT_EQ(v->strides[1], 16);
      EXPECT_EQ(v->strides[2], 8);
      EXPECT_EQ(v->strides[3], 1);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(v->data) % 64, 0u);
      const float* f = static_cast<const float*>(v->data);
      for (int i = 0; i < 5 * 16 * 2 * 8; ++i) ASSERT_EQ(f[i], 0.0f);
      seen.insert(v->data);
    }
  }
  EXPECT_EQ(seen.size(), 6u);
  // Writing one layer's K never shows in another's.
  static_cast<float*>(pool.k(1).data)[5 * 16 * 2 * 8 - 1] = 1.0f;
  EXPECT_EQ(static_cast<float*>(pool.v(1).data)[0], 0.0f);
  EXPECT_THROW(pool.k(3), std::out_of_range);
}

TEST(KvPool, RejectsBadShapes) {
  EXPECT_THROW(KvPool(KvPoolShape{0, 5, 16, 2, 8, LOOM_DTYPE_F32}), Error);
  EXPECT_THROW(KvPool(KvPoolShape{1, 5, 16, 2, 8, LOOM_DTYPE_Q4_0}), Error);
}

}  // namespace
}  // namespace loom
