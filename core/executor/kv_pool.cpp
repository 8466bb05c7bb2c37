#include "core/executor/kv_pool.hpp"

#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <string>

#include "core/common/error.hpp"
#include "loom/sdk_kv_quant.hpp"

namespace loom {
namespace {
constexpr size_t kAlignment = 64;  // one cache line: a block never shares a line with another's tail
}
void KvPool::Unmap::operator()(void* p) const { ::munmap(p, bytes); }

int64_t KvPool::element_size(loom_dtype dtype) {
  switch (dtype) {
    case LOOM_DTYPE_F32: return 4;
    case LOOM_DTYPE_F16:
    case LOOM_DTYPE_BF16: return 2;
    case LOOM_DTYPE_I8:
    case LOOM_DTYPE_U8:
    case LOOM_DTYPE_FP8_E4M3: return 1;
    default: return 0;
  }
}

int64_t KvPool::bytes_per_token(int32_t n_layers, int32_t n_kv_heads, int32_t head_dim, loom_dtype dtype) {
  // fp8 keeps an f16 scale per (token, head) beside the data (sdk_kv_quant.hpp).
  return 2 * static_cast<int64_t>(n_layers) *
         (n_kv_heads * head_dim * element_size(dtype) + sdk::kv::scale_bytes_per_token(dtype, n_kv_heads));
}

int64_t KvPool::scale_bytes_per_block(int32_t n_layers, int32_t n_kv_heads, loom_dtype dtype) {
  // int8's one f32 scale per (block, head); fp8's per-token scales are in bytes_per_token.
  return sdk::kv::has_scales(dtype) && !sdk::kv::has_row_scales(dtype) ? 2 * static_cast<int64_t>(n_layers) * n_kv_heads * 4
                                                                         : 0;
}

KvPool::KvPool(const KvPoolShape& shape) : shape_(shape) {
  if (shape.n_layers <= 0 || shape.num_blocks <= 0 || shape.block_size <= 0 || shape.n_kv_heads <= 0 ||
      shape.head_dim <= 0)
    throw Error("kv pool: every dimension must be positive (layers " + std::to_string(shape.n_layers) + ", blocks " +
                std::to_string(shape.num_blocks) + ", block_size " + std::to_string(shape.block_size) +
                ", kv heads " + std::to_string(shape.n_kv_heads) + ", head_dim " + std::to_string(shape.head_dim) + ")");
  const int64_t esize = sdk::kv::element_size(shape.dtype);
  if (esize == 0)
    throw Error("kv pool: dtype " + std::to_string(shape.dtype) +
                " cannot be a KV dtype (f32, f16, bf16, int8, fp8_e4m3)");
  block_bytes_ = sdk::kv::block_bytes(shape.dtype, shape.block_size, shape.n_kv_heads, shape.head_dim);
  const int64_t layer_bytes = (shape.num_blocks * block_bytes_ + static_cast<int64_t>(kAlignment) - 1) /
                              static_cast<int64_t>(kAlignment) * static_cast<int64_t>(kAlignment);
  bytes_ = 2 * layer_bytes * shape.n_layers;
  // Page-aligned (beyond kAlignment) and zero-filled by the kernel page by page, on first touch.
  void* mem = ::mmap(nullptr, static_cast<size_t>(bytes_), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    throw Error("kv pool: cannot allocate " + std::to_string(bytes_) + " bytes", LOOM_ERR_OUT_OF_MEMORY);
  memory_ = std::unique_ptr<void, Unmap>(mem, Unmap{static_cast<size_t>(bytes_)});

  auto make_view = [&](int64_t offset) {
    loom_tensor_view v{};
    v.data = static_cast<char*>(mem) + offset;
    v.dtype = shape.dtype;
    v.ndim = 4;
    v.shape[0] = shape.num_blocks;
    v.shape[1] = shape.block_size;
    v.shape[2] = shape.n_kv_heads;
    v.shape[3] = shape.head_dim;
    v.strides[3] = 1;
    v.strides[2] = shape.head_dim;
    v.strides[1] = static_cast<int64_t>(shape.n_kv_heads) * shape.head_dim;
    v.strides[0] = block_bytes_ / esize;  // the data, then (int8/fp8) padding and scales
    v.device = loom_device{LOOM_DEVICE_CPU, 0};
    return v;
  };
  for (int32_t l = 0; l < shape.n_layers; ++l) {
    k_views_.push_back(make_view((2 * l) * layer_bytes));
    v_views_.push_back(make_view((2 * l + 1) * layer_bytes));
  }
}

void KvPool::copy_block(int32_t src, int32_t dst) {
  for (int32_t id : {src, dst}) {
    if (id < 0 || id >= shape_.num_blocks)
      throw Error("kv pool: block id " + std::to_string(id) + " is outside the pool [0, " +
                  std::to_string(shape_.num_blocks) + ")");
  }
  if (src == dst) return;
  // One block of one layer's K (or V): [block_size, n_kv_heads, head_dim] and its scales.
  const auto bytes = static_cast<size_t>(block_bytes_);
  for (int32_t l = 0; l < shape_.n_layers; ++l) {
    for (loom_tensor_view* view : {&k_views_[static_cast<size_t>(l)], &v_views_[static_cast<size_t>(l)]}) {
      char* base = static_cast<char*>(view->data);
      std::memcpy(base + bytes * static_cast<size_t>(dst), base + bytes * static_cast<size_t>(src), bytes);
    }
  }
}

}  // namespace loom
