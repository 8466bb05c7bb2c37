// Repacking Q4_0 and Q8_0 weights into the x8 layout (in huge pages where the kernel gives them),
// and the activation block info its kernels need.
#include "gguf_repack.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#include "common/weight_pages.hpp"
#include "loom/sdk_gguf_blocks.hpp"

namespace loom_gguf {

namespace g = loom::sdk::gguf;

namespace {

// Block b of row r: its f16 scale and its quant bytes (16 for Q4_0, 32 for Q8_0).
template <class Block>
PackedWeight pack(const uint8_t* rows, int64_t row_bytes, int64_t n_rows, int64_t n_blocks) {
  constexpr int64_t kQs = sizeof(Block::qs);
  PackedWeight p;
  p.quant_bytes = kGroupRows * kQs;
  p.n_rows = n_rows;
  p.n_blocks = n_blocks;
  p.group_bytes = (n_blocks * (p.quant_bytes + 2 * kGroupRows) + 63) / 64 * 64;
  const int64_t n_groups = (n_rows + kGroupRows - 1) / kGroupRows;
  allocate_groups(&p);
  for (int64_t grp = 0; grp < n_groups; ++grp) {
    uint8_t* dst = p.data.get() + grp * p.group_bytes;
    auto* scales = reinterpret_cast<uint16_t*>(dst + n_blocks * p.quant_bytes);
    for (int64_t r = 0; r < kGroupRows && grp * kGroupRows + r < n_rows; ++r) {
      const auto* src = reinterpret_cast<const Block*>(rows + (grp * kGroupRows + r) * row_bytes);
      for (int64_t b = 0; b < n_blocks; ++b) {
        for (int64_t j = 0; j < kQs / 4; ++j) std::memcpy(dst + b * p.quant_bytes + j * 32 + r * 4, src[b].qs + 4 * j, 4);
        scales[b * kGroupRows + r] = src[b].d;
      }
    }
  }
  return p;
}

}  // namespace

void allocate_groups(PackedWeight* p, bool zero) {
  const size_t total = static_cast<size_t>((p->n_rows + kGroupRows - 1) / kGroupRows * p->group_bytes);
  void* mem = std::aligned_alloc(64, total);
  if (mem == nullptr) throw std::bad_alloc();
  p->data = std::unique_ptr<uint8_t, void (*)(void*)>(static_cast<uint8_t*>(mem), &std::free);
  loom_quant::advise_huge_pages(mem, static_cast<int64_t>(total));  // before the first write
  if (zero) std::memset(mem, 0, total);
}

PackedWeight pack_q4_0(const uint8_t* rows, int64_t row_bytes, int64_t n_rows, int64_t n_blocks) {
  return pack<g::BlockQ4_0>(rows, row_bytes, n_rows, n_blocks);
}

PackedWeight pack_q8_0(const uint8_t* rows, int64_t row_bytes, int64_t n_rows, int64_t n_blocks) {
  return pack<g::BlockQ8_0>(rows, row_bytes, n_rows, n_blocks);
}

void activation_block_info(const uint8_t* xq, int64_t xq_row_bytes, int64_t n, int64_t nb, ActivationBlockInfo info) {
  for (int64_t t = 0; t < n; ++t) {
    const auto* a = reinterpret_cast<const g::BlockQ8_0*>(xq + t * xq_row_bytes);
    for (int64_t b = 0; b < nb; ++b) {
      int32_t s = 0;
      for (int k = 0; k < g::kQK; ++k) s += a[b].qs[k];
      info.d[t * nb + b] = loom::sdk::f16_to_f32(a[b].d);
      info.offset[t * nb + b] = 8 * s;
    }
  }
}

}  // namespace loom_gguf
