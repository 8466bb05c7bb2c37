#include "core/engine/kv_block_copy.hpp"

#include <cstring>
#include <string>

namespace loom {
namespace {

// One block of one layer's K (or V), with its scales when the dtype has them.
int64_t slice_bytes(const KvPool& pool) { return pool.block_bytes(); }

void write_error(loom_error_buf* err, const std::string& message) {
  if (err == nullptr || err->data == nullptr || err->capacity == 0) return;
  const size_t n = std::min(message.size(), err->capacity - 1);
  std::memcpy(err->data, message.data(), n);
  err->data[n] = '\0';
}

// Calls fn(pool_slice, host_slice) for K and V of every layer of one block.
template <class Fn>
loom_status for_each_slice(void* host_ctx, int32_t block_id, loom_error_buf* err, Fn fn) {
  KvPool& pool = *static_cast<KvPool*>(host_ctx);
  const KvPoolShape& s = pool.shape();
  if (block_id < 0 || block_id >= s.num_blocks) {
    write_error(err, "block id " + std::to_string(block_id) + " is outside the pool [0, " +
                         std::to_string(s.num_blocks) + ")");
    return LOOM_ERR_INVALID_ARGUMENT;
  }
  const int64_t bytes = slice_bytes(pool);
  int64_t offset = 0;
  for (int32_t layer = 0; layer < s.n_layers; ++layer) {
    for (loom_tensor_view* view : {&pool.k(layer), &pool.v(layer)}) {
      char* slice = static_cast<char*>(view->data) + bytes * block_id;
      fn(slice, offset, bytes);
      offset += bytes;
    }
  }
  return LOOM_OK;
}

loom_status read_block(void* host_ctx, int32_t block_id, void* dst, loom_error_buf* err) {
  return for_each_slice(host_ctx, block_id, err, [dst](char* slice, int64_t offset, int64_t bytes) {
    std::memcpy(static_cast<char*>(dst) + offset, slice, static_cast<size_t>(bytes));
  });
}

loom_status write_block(void* host_ctx, int32_t block_id, const void* src, loom_error_buf* err) {
  return for_each_slice(host_ctx, block_id, err, [src](char* slice, int64_t offset, int64_t bytes) {
    std::memcpy(slice, static_cast<const char*>(src) + offset, static_cast<size_t>(bytes));
  });
}

}  // namespace

loom_kv_copy_ops make_kv_copy_ops(KvPool& pool) {
  loom_kv_copy_ops ops{};
  ops.struct_size = sizeof(ops);
  ops.host_ctx = &pool;
  ops.bytes_per_block = slice_bytes(pool) * 2 * pool.shape().n_layers;
  ops.read_block = &read_block;
  ops.write_block = &write_block;
  return ops;
}

}  // namespace loom
