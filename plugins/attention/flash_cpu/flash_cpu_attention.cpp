// attention/flash_cpu: tiled online-softmax attention over the paged KV pool, GQA-aware and
// threaded through the host's parallel_for.
//
// One forward call:
//   1. checks every shape, position, slot and block-table entry it will touch (so the parallel
//      part cannot go out of bounds and never throws);
//   2. writes this step's K/V rows into the pool at slot_mapping, exactly as `naive` does (an
//      f16/bf16/int8/fp8_e4m3 pool gets them encoded, with the scale schemes of
//      loom/sdk_kv_quant.hpp: int8 per (block, head), fp8 per (token, head));
//   3. splits the batch into tiles (sequence, run of kv_heads, tile of that sequence's query
//      tokens) — prefill chunks and decodes alike — and runs the tile kernel on each, one split-K
//      partition of the keys at a time (flash_cpu_split.hpp): a tile's partitions are folded and
//      merged in one work item, or, when the tile is a large share of the step (one long decode
//      on a machine of several threads), spread over one work item per partition, the last of
//      which to finish merges the partials.
//
// Work item region map, for one sequence with tokens [query_start[s], query_start[s+1]):
//   | tile 0: kTileRows/G tokens | tile 1 | ... | last tile (shorter) |   x  n_kv_heads
// Each item's rows are (KV head of the run) x (token of the tile) x (the G query heads of that KV
// head), so a KV block is read once for G * tokens rows. Small tiles (decode: one token) take
// several KV heads per item, so a block's rows are read whole and in address order; large ones
// (prefill) take one, keeping the item's accumulators small. Tiles are cut relative to the
// sequence's first token, and a row's result does not depend on its tile-mates (nor on which
// heads share its item), so batched and alone runs agree bit for bit. Whether a tile's partitions
// run in one item or in several changes who computes a partial, never its arithmetic or the
// order of the merge, so the thread count and the batch do not change a bit either.

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "flash_cpu_kernel.hpp"
#include "flash_cpu_split.hpp"
#include "loom/attention.h"
#include "loom/sdk.hpp"
#include "loom/sdk_config.hpp"
#include "loom/sdk_kv_quant.hpp"
#include "loom/sdk_rope.hpp"

namespace {

using loom::sdk::Error;
namespace fc = loom::flash_cpu;

// Rows (token x query head) per tile: the accumulators of a tile ([rows, head_dim] floats, 32 KiB
// at head_dim 128) stay in L2 while the K/V block being folded in stays in L1.
constexpr int32_t kTileRows = 64;
constexpr int32_t kMaxHeadDim = 256;
// Work items per thread the head runs of small tiles aim for (see build_items).
constexpr int64_t kItemsPerThread = 8;
// A tile costing more than 1 / (kSplitShare x threads) of the step is spread over one work item
// per partition: alone it would leave the other threads idle.
constexpr int64_t kSplitShare = 2;

struct Options {
  bool simd = true;  // "simd": "auto" (default) or "portable" (forces the portable kernel)
};

std::string dtype_name(loom_dtype t) {
  switch (t) {
    case LOOM_DTYPE_F32: return "f32";
    case LOOM_DTYPE_F16: return "f16";
    case LOOM_DTYPE_BF16: return "bf16";
    case LOOM_DTYPE_I8: return "int8";
    case LOOM_DTYPE_U8: return "u8";
    case LOOM_DTYPE_Q8_0: return "q8_0";
    case LOOM_DTYPE_FP8_E4M3: return "fp8_e4m3";
    default: return "dtype " + std::to_string(static_cast<int>(t));
  }
}

// Rank, dtype and extents (-1 = any) of a view; its innermost dimension must be contiguous.
void expect_view(const loom_tensor_view* t, const char* name, std::initializer_list<int64_t> shape,
                 loom_dtype dtype = LOOM_DTYPE_F32) {
  const std::string n(name);
  if (t == nullptr || t->data == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, n + " is null");
  if (t->dtype != dtype)
    throw Error(LOOM_ERR_UNSUPPORTED, n + ": " + dtype_name(t->dtype) + " is not " + dtype_name(dtype) +
                                          " (the dtype flash_cpu expects here)");
  const auto rank = static_cast<int32_t>(shape.size());
  if (t->ndim != rank)
    throw Error(LOOM_ERR_INVALID_ARGUMENT,
                n + ": expected " + std::to_string(rank) + " dims, got " + std::to_string(t->ndim));
  int32_t d = 0;
  for (int64_t want : shape) {
    if (want >= 0 && t->shape[d] != want)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, n + ": dim " + std::to_string(d) + " is " + std::to_string(t->shape[d]) +
                                                 ", expected " + std::to_string(want));
    ++d;
  }
  if (t->strides[rank - 1] != 1) throw Error(LOOM_ERR_INVALID_ARGUMENT, n + ": innermost dimension must be contiguous");
}

class FlashCpuAttention {
 public:
  static const loom::sdk::ConfigSpec<Options>& config_spec() {
    static const auto spec = loom::sdk::ConfigSpec<Options>("attention flash_cpu")
                                 .choice("simd", &Options::simd, {{"auto", true}, {"portable", false}},
                                         "\"auto\": the fastest kernel this CPU runs; \"portable\": the plain C++ one");
    return spec;
  }

  FlashCpuAttention(const loom::sdk::Host& host, const loom_attention_create_args& args, const Options& opt)
      : host_(host), args_(args) {
    if (args.n_heads <= 0 || args.n_kv_heads <= 0 || args.n_heads % args.n_kv_heads != 0)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "attention flash_cpu: n_heads " + std::to_string(args.n_heads) +
                                                 " is not a positive multiple of n_kv_heads " +
                                                 std::to_string(args.n_kv_heads));
    if (args.block_size <= 0)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "attention flash_cpu: block_size must be positive");
    if (args.head_dim <= 0 || args.head_dim % 4 != 0 || args.head_dim > kMaxHeadDim)
      throw Error(LOOM_ERR_UNSUPPORTED, "attention flash_cpu: head_dim " + std::to_string(args.head_dim) +
                                            " is not supported (a multiple of 4 up to " + std::to_string(kMaxHeadDim) +
                                            ")");
    if (loom::sdk::kv::element_size(args.kv_dtype) == 0)
      throw Error(LOOM_ERR_UNSUPPORTED, "attention flash_cpu: kv_dtype " + dtype_name(args.kv_dtype) +
                                            " is not supported (f32, f16, bf16, int8, fp8_e4m3)");
    if (args.device.type != LOOM_DEVICE_CPU)
      throw Error(LOOM_ERR_UNSUPPORTED, "attention flash_cpu: runs on the CPU only, not on device type " +
                                            std::to_string(args.device.type));
    const char* kernel_name = "";
    kernel_ = fc::select_tile_kernel(opt.simd, &kernel_name);
    scratch_.resize(static_cast<size_t>(host_.num_threads()));
    host_.log(LOOM_LOG_DEBUG, "attention flash_cpu: ", kernel_name, " kernel, ", host_.num_threads(), " threads");
  }

  void forward(const loom_attention_batch* b, const loom_tensor_view* q, const loom_tensor_view* k,
               const loom_tensor_view* v, loom_tensor_view* k_cache, loom_tensor_view* v_cache,
               loom_tensor_view* out) {
    run(b, nullptr, 0, q, k, v, k_cache, v_cache, out);
  }

  // Interface 1.1: k arrives without RoPE; each row is rotated on its way into the pool.
  void forward_rope_k(const loom_attention_batch* b, const loom_rope* rope, const loom_tensor_view* q,
                      const loom_tensor_view* k, const loom_tensor_view* v, loom_tensor_view* k_cache,
                      loom_tensor_view* v_cache, loom_tensor_view* out) {
    check_rope(rope);
    run(b, rope, 0, q, k, v, k_cache, v_cache, out);
  }

  // Interface 1.2: sliding-window attention, with or without the fused RoPE of K.
  void forward_window(const loom_attention_batch* b, int32_t window, const loom_rope* rope, const loom_tensor_view* q,
                      const loom_tensor_view* k, const loom_tensor_view* v, loom_tensor_view* k_cache,
                      loom_tensor_view* v_cache, loom_tensor_view* out) {
    if (rope != nullptr) check_rope(rope);
    run(b, rope, std::max(window, 0), q, k, v, k_cache, v_cache, out);
  }

 private:
  void check_rope(const loom_rope* rope) const {
    if (rope == nullptr || rope->struct_size < sizeof(loom_rope) || rope->inv_freq == nullptr ||
        rope->rope_dim <= 0 || rope->rope_dim % 2 != 0 || rope->rope_dim > args_.head_dim ||
        rope->rope_dim / 2 > loom::sdk::rope::kMaxPairs)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "forward_rope_k: rope must give an even rope_dim of at most head_dim " +
                                                 std::to_string(args_.head_dim) + " and its frequencies");
  }

  // The oldest position a token at `pos` attends to under window_ (0 without one).
  int32_t window_first(int32_t pos) const { return window_ > 0 && pos >= window_ ? pos - window_ + 1 : 0; }

  void run(const loom_attention_batch* b, const loom_rope* rope, int32_t window, const loom_tensor_view* q,
           const loom_tensor_view* k, const loom_tensor_view* v, loom_tensor_view* k_cache, loom_tensor_view* v_cache,
           loom_tensor_view* out) {
    window_ = window;
    if (b == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "batch is null");
    const int64_t T = b->num_tokens, H = args_.n_heads, KVH = args_.n_kv_heads, D = args_.head_dim;
    if (b->block_size != args_.block_size)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "batch block_size " + std::to_string(b->block_size) +
                                                 " differs from the plugin's " + std::to_string(args_.block_size));
    expect_view(q, "q", {T, H, D});
    expect_view(k, "k", {T, KVH, D});
    expect_view(v, "v", {T, KVH, D});
    expect_view(out, "out", {T, H, D});
    expect_view(k_cache, "k_cache", {-1, b->block_size, KVH, D}, args_.kv_dtype);
    expect_view(v_cache, "v_cache", {k_cache->shape[0], b->block_size, KVH, D}, args_.kv_dtype);
    if (args_.kv_dtype != LOOM_DTYPE_F32) {
      // Encoded pools are read and written through the SDK block layout (scales after the data).
      const int64_t block_elems =
          loom::sdk::kv::block_bytes(args_.kv_dtype, b->block_size, KVH, D) / loom::sdk::kv::element_size(args_.kv_dtype);
      for (const loom_tensor_view* c : {k_cache, v_cache}) {
        if (c->strides[0] != block_elems || c->strides[1] != KVH * D || c->strides[2] != D)
          throw Error(LOOM_ERR_INVALID_ARGUMENT, std::string(c == k_cache ? "k_cache" : "v_cache") +
                                                     ": strides are not the KV block layout of " +
                                                     dtype_name(args_.kv_dtype) + " (block stride " +
                                                     std::to_string(block_elems) + " elements)");
      }
    }
    if (T == 0) return;
    check_batch(*b, k_cache->shape[0]);
    write_kv(*b, rope, *k, *v, *k_cache, *v_cache);
    build_items(*b);
    run_items(*b, *q, *k_cache, *v_cache, *out);
  }

  // A tile of one sequence's query tokens against KV heads kv_head .. kv_head + kv_heads - 1,
  // over keys key_first .. key_last (the union of its rows' keys, within one partition for a
  // split item). split < 0: the item folds the tile's partitions one after the other and merges
  // them itself; split >= 0: it is one partition of splits_[split]. `cost` ~ rows x blocks walked.
  struct Item {
    int32_t seq, kv_head, kv_heads, token_begin, token_end, key_first, key_last, split;
    int64_t cost;
    int32_t part_begin() const { return fc::partition_of(key_first); }
    int32_t part_end() const { return fc::partition_of(key_last) + 1; }
  };
  // A tile spread over one item per partition.
  struct Split {
    Item tile;         // the whole tile (split = -1)
    int64_t partials;  // offset in partials_ of its [rows, part_end - part_begin, head_dim + 2]
  };

  // Per thread, reused across steps.
  struct Scratch {
    std::vector<const float*> q_rows;  // [rows] of the item being run
    std::vector<float*> out_rows;      // [rows]
    std::vector<int32_t> row_pos;      // [rows]
    std::vector<float*> part_rows;     // [rows] where each row leaves its partial state
    std::vector<float> partial;        // [rows, head_dim + 2] run_tile: one partition's partials
    std::vector<float> state;          // [rows, head_dim + 2] run_tile: the merged partials so far
    fc::TileScratch tile;
  };

  // Every index the parallel part will use is checked here, once.
  void check_batch(const loom_attention_batch& b, int64_t num_blocks) const {
    const int64_t T = b.num_tokens, num_slots = num_blocks * b.block_size;
    if (b.num_seqs < 0 || b.query_start[0] != 0 || b.query_start[b.num_seqs] != T)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "query_start must run from 0 to num_tokens");
    for (int32_t s = 0; s < b.num_seqs; ++s) {
      if (b.query_start[s + 1] < b.query_start[s])
        throw Error(LOOM_ERR_INVALID_ARGUMENT, "query_start decreases at sequence " + std::to_string(s));
      int32_t max_pos = -1, min_first = INT32_MAX;
      for (int32_t t = b.query_start[s]; t < b.query_start[s + 1]; ++t) {
        const int32_t pos = b.positions[t];
        if (pos < 0 || pos >= b.seq_lens[s] || pos / b.block_size >= b.max_blocks_per_seq)
          throw Error(LOOM_ERR_INVALID_ARGUMENT, "token " + std::to_string(t) + ": position " + std::to_string(pos) +
                                                     " outside its sequence (seq_len " + std::to_string(b.seq_lens[s]) +
                                                     ")");
        if (b.slot_mapping[t] < 0 || b.slot_mapping[t] >= num_slots)
          throw Error(LOOM_ERR_INVALID_ARGUMENT, "token " + std::to_string(t) + ": slot " +
                                                     std::to_string(b.slot_mapping[t]) + " outside the pool");
        max_pos = std::max(max_pos, pos);
        min_first = std::min(min_first, window_first(pos));
      }
      // Blocks wholly before every window are never read (the host may have released them).
      const int32_t* table = b.block_tables + static_cast<int64_t>(s) * b.max_blocks_per_seq;
      for (int32_t i = max_pos >= 0 ? min_first / b.block_size : 0; i <= max_pos / b.block_size && max_pos >= 0; ++i) {
        if (table[i] < 0 || table[i] >= num_blocks)
          throw Error(LOOM_ERR_INVALID_ARGUMENT, "sequence " + std::to_string(s) + ": block table entry " +
                                                     std::to_string(i) + " is block " + std::to_string(table[i]) +
                                                     ", outside the pool of " + std::to_string(num_blocks));
      }
    }
  }

  // Row [slot / block_size, slot % block_size, h, :] of a pool view.
  static float* pool_row(const loom_tensor_view& c, int64_t slot, int64_t h) {
    const int64_t bs = c.shape[1];
    return static_cast<float*>(c.data) + (slot / bs) * c.strides[0] + (slot % bs) * c.strides[1] + h * c.strides[2];
  }

  // Step 1: the new K/V rows go in first, so a token attends to itself and to the earlier tokens
  // of the same step. Serial on purpose: duplicate slots (never valid) still end last-write-wins,
  // exactly like `naive`. With `rope` (forward_rope_k) each K row is rotated on the way, from a
  // row-sized copy: the angles once per token, loom/sdk_rope.hpp's arithmetic (this file is built
  // with -ffp-contract=off, like the host's RoPE), so the pool holds the host's bits.
  void write_kv(const loom_attention_batch& b, const loom_rope* rope, const loom_tensor_view& k,
                const loom_tensor_view& v, const loom_tensor_view& k_cache, const loom_tensor_view& v_cache) {
    const int64_t bs = b.block_size, es = loom::sdk::kv::element_size(args_.kv_dtype);
    const int64_t D = args_.head_dim;
    const size_t row_bytes = static_cast<size_t>(D) * sizeof(float);
    float cos_t[loom::sdk::rope::kMaxPairs];
    float sin_t[loom::sdk::rope::kMaxPairs];
    rotated_.resize(static_cast<size_t>(D));
    // Row h of token t of src, or, for K under `rope`, its rotated copy.
    const auto row = [&](const loom_tensor_view& src, int64_t t, int64_t h) -> const float* {
      const float* r = static_cast<const float*>(src.data) + t * src.strides[0] + h * src.strides[1];
      if (rope == nullptr || &src != &k) return r;
      std::memcpy(rotated_.data(), r, row_bytes);
      loom::sdk::rope::rotate(*rope, rotated_.data(), cos_t, sin_t);
      return rotated_.data();
    };
    for (int64_t t = 0; t < b.num_tokens; ++t) {
      const int64_t slot = b.slot_mapping[t];
      if (rope != nullptr) loom::sdk::rope::angles(*rope, b.positions[t], cos_t, sin_t);
      for (int64_t h = 0; h < args_.n_kv_heads; ++h) {
        for (auto [src, cache] : {std::pair{&k, &k_cache}, std::pair{&v, &v_cache}}) {
          if (args_.kv_dtype == LOOM_DTYPE_F32) {
            std::memcpy(pool_row(*cache, slot, h), row(*src, t, h), row_bytes);
            continue;
          }
          // Encoded pools are written through the SDK block layout (scales after the data).
          char* block = static_cast<char*>(cache->data) + (slot / bs) * cache->strides[0] * es;
#if defined(__x86_64__) && defined(__GNUC__)
          const bool half = args_.kv_dtype == LOOM_DTYPE_F16 || args_.kv_dtype == LOOM_DTYPE_BF16;
          if (half && kernel_ == fc::tile_avx2) {  // 8 values at a time, write_row's bits
            auto* dst = reinterpret_cast<uint16_t*>(block) + ((slot % bs) * args_.n_kv_heads + h) * D;
            (args_.kv_dtype == LOOM_DTYPE_F16 ? fc::encode_f16_avx2 : fc::encode_bf16_avx2)(row(*src, t, h), dst,
                                                                                             static_cast<int32_t>(D));
            continue;
          }
#endif
          loom::sdk::kv::write_row(args_.kv_dtype, block, slot % bs, h, row(*src, t, h), bs, args_.n_kv_heads,
                                   args_.head_dim);
        }
      }
    }
  }

  // Step 2: the work items, most expensive first so the dynamic hand-out below ends evenly.
  // The split-K partitions of every row are fixed (flash_cpu_split.hpp); what is decided here,
  // from the batch and the thread count, is only which item computes which partial.
  void build_items(const loom_attention_batch& b) {
    const int32_t group = args_.n_heads / args_.n_kv_heads;
    const int32_t tile_tokens = std::max(1, kTileRows / group);
    const int32_t kvh = args_.n_kv_heads;
    const int32_t bs = b.block_size;
    // Heads per item when a tile is small: enough items per thread for the dynamic hand-out to
    // even out (a single decode sequence still spreads its heads over every thread).
    const auto threads = static_cast<int64_t>(scratch_.size());
    const int64_t head_items = int64_t{b.num_seqs} * kvh;
    const auto spread =
        static_cast<int32_t>(std::clamp<int64_t>(head_items / (kItemsPerThread * threads), 1, kvh));
    tiles_.clear();
    int64_t total = 0;
    for (int32_t s = 0; s < b.num_seqs; ++s) {
      for (int32_t t0 = b.query_start[s]; t0 < b.query_start[s + 1]; t0 += tile_tokens) {
        const int32_t t1 = std::min(b.query_start[s + 1], t0 + tile_tokens);
        int32_t max_pos = 0, min_first = INT32_MAX;
        for (int32_t t = t0; t < t1; ++t) {
          max_pos = std::max(max_pos, b.positions[t]);
          min_first = std::min(min_first, window_first(b.positions[t]));
        }
        const int32_t rows = (t1 - t0) * group;
        const int32_t heads = std::min(spread, std::max(1, kTileRows / rows));
        for (int32_t g = 0; g < kvh; g += heads) {
          const int32_t n = std::min(heads, kvh - g);
          const int64_t cost = int64_t{rows} * n * (max_pos / bs - min_first / bs + 1);
          tiles_.push_back(Item{s, g, n, t0, t1, min_first, max_pos, -1, cost});
          total += cost;
        }
      }
    }
    items_.clear();
    splits_.clear();
    const int64_t pf = fc::partial_floats(args_.head_dim);
    int64_t partial_floats = 0;
    for (const Item& tile : tiles_) {
      const int32_t parts = tile.part_end() - tile.part_begin();
      if (threads == 1 || parts == 1 || tile.cost * kSplitShare * threads <= total) {
        items_.push_back(tile);
        continue;
      }
      const auto split = static_cast<int32_t>(splits_.size());
      splits_.push_back(Split{tile, partial_floats});
      const int32_t rows = (tile.token_end - tile.token_begin) * group * tile.kv_heads;
      partial_floats += int64_t{rows} * parts * pf;
      for (int32_t p = tile.part_begin(); p < tile.part_end(); ++p) {
        Item it = tile;
        it.key_first = std::max(tile.key_first, p * fc::kPartitionTokens);
        it.key_last = std::min(tile.key_last, (p + 1) * fc::kPartitionTokens - 1);
        it.split = split;
        it.cost = int64_t{rows} * (it.key_last / bs - it.key_first / bs + 1);
        items_.push_back(it);
      }
    }
    if (partials_.size() < static_cast<size_t>(partial_floats)) partials_.resize(static_cast<size_t>(partial_floats));
    remaining_ = std::vector<std::atomic<int32_t>>(splits_.size());
    for (size_t i = 0; i < splits_.size(); ++i)
      remaining_[i].store(splits_[i].tile.part_end() - splits_[i].tile.part_begin(), std::memory_order_relaxed);
    std::stable_sort(items_.begin(), items_.end(), [](const Item& x, const Item& y) { return x.cost > y.cost; });
  }

  // Step 3: one parallel_for index per thread, each pulling items from a shared counter — item
  // costs differ by orders of magnitude (a 1-token decode vs a long prefill tile), so a static
  // split of the item range would leave threads idle.
  void run_items(const loom_attention_batch& b, const loom_tensor_view& q, const loom_tensor_view& k_cache,
                 const loom_tensor_view& v_cache, const loom_tensor_view& out) {
    const auto n_items = static_cast<int64_t>(items_.size());
    std::atomic<int64_t> next{0};
    const int64_t workers = std::min<int64_t>(n_items, static_cast<int64_t>(scratch_.size()));
    host_.parallel_for(workers, [&](int64_t begin, int64_t end, int32_t thread) {
      if (thread < 0 || static_cast<size_t>(thread) >= scratch_.size())
        throw Error(LOOM_ERR_INTERNAL, "parallel_for thread index out of range");
      if (begin >= end) return;
      Scratch& sc = scratch_[static_cast<size_t>(thread)];
      for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < n_items;
           i = next.fetch_add(1, std::memory_order_relaxed)) {
        const Item& it = items_[static_cast<size_t>(i)];
        if (it.split >= 0) {
          run_split_part(b, q, k_cache, v_cache, out, it, sc);
        } else {
          run_tile(b, q, k_cache, v_cache, out, it, sc);
        }
      }
    });
  }

  // The rows of a tile into sc (q_rows, out_rows, row_pos): head-major, then token, then the
  // G query heads of the KV head. Returns their number.
  int32_t fill_rows(const loom_attention_batch& b, const loom_tensor_view& q, const loom_tensor_view& out,
                    const Item& it, Scratch& sc) const {
    const int32_t group = args_.n_heads / args_.n_kv_heads;
    const int32_t rows = (it.token_end - it.token_begin) * group * it.kv_heads;
    sc.q_rows.resize(static_cast<size_t>(rows));
    sc.out_rows.resize(static_cast<size_t>(rows));
    sc.row_pos.resize(static_cast<size_t>(rows));
    sc.part_rows.resize(static_cast<size_t>(rows));
    size_t r = 0;
    for (int64_t g = it.kv_head; g < int64_t{it.kv_head} + it.kv_heads; ++g) {
      for (int64_t t = it.token_begin; t < it.token_end; ++t) {
        for (int64_t h = g * group; h < (g + 1) * group; ++h, ++r) {
          sc.q_rows[r] = static_cast<const float*>(q.data) + t * q.strides[0] + h * q.strides[1];
          sc.out_rows[r] = static_cast<float*>(out.data) + t * out.strides[0] + h * out.strides[1];
          sc.row_pos[r] = b.positions[t];
        }
      }
    }
    return rows;
  }

  // The kernel on sc's rows (fill_rows) for the keys of partition `part`; rows whose keys reach
  // outside it leave their partials at sc.part_rows.
  void run_kernel(const loom_attention_batch& b, const loom_tensor_view& k_cache, const loom_tensor_view& v_cache,
                  const Item& it, int32_t part, Scratch& sc) const {
    const int64_t es = loom::sdk::kv::element_size(args_.kv_dtype);
    // From a block's first row of head h to that head's (int8: block-head, fp8: first row's) scale.
    const int64_t scales_at = loom::sdk::kv::scales_offset(args_.kv_dtype, b.block_size, args_.n_kv_heads, args_.head_dim);
    const int64_t scale_size = loom::sdk::kv::scale_size(args_.kv_dtype);
    const fc::TileArgs a{sc.q_rows.data(),
                         sc.out_rows.data(),
                         sc.row_pos.data(),
                         static_cast<int32_t>(sc.row_pos.size()),
                         window_,
                         part * fc::kPartitionTokens,
                         (part + 1) * fc::kPartitionTokens,
                         sc.part_rows.data(),
                         b.block_tables + static_cast<int64_t>(it.seq) * b.max_blocks_per_seq,
                         static_cast<const char*>(k_cache.data) + it.kv_head * k_cache.strides[2] * es,
                         static_cast<const char*>(v_cache.data) + it.kv_head * v_cache.strides[2] * es,
                         it.kv_heads,
                         k_cache.strides[2],
                         v_cache.strides[2],
                         k_cache.strides[0],
                         k_cache.strides[1],
                         v_cache.strides[0],
                         v_cache.strides[1],
                         args_.kv_dtype,
                         scales_at + it.kv_head * (scale_size - k_cache.strides[2] * es),
                         scale_size,
                         loom::sdk::kv::scale_slot_stride(args_.kv_dtype, args_.n_kv_heads),
                         args_.block_size,
                         args_.head_dim,
                         args_.scale};
    kernel_(a, sc.tile);
  }

  // First and last partition of the keys of a row at `pos`.
  std::pair<int32_t, int32_t> row_parts(int32_t pos) const {
    return {fc::partition_of(window_first(pos)), fc::partition_of(pos)};
  }

  // A whole tile in this item: partition after partition, each row's partials merged as they come
  // (rows within one partition are finished by the kernel itself).
  void run_tile(const loom_attention_batch& b, const loom_tensor_view& q, const loom_tensor_view& k_cache,
                const loom_tensor_view& v_cache, const loom_tensor_view& out, const Item& it, Scratch& sc) const {
    const int32_t rows = fill_rows(b, q, out, it, sc);
    const int64_t pf = fc::partial_floats(args_.head_dim);
    if (it.part_end() - it.part_begin() > 1) {
      sc.partial.resize(static_cast<size_t>(rows * pf));  // [rows, head_dim + 2] this partition's
      sc.state.resize(static_cast<size_t>(rows * pf));    // [rows, head_dim + 2] merged so far
      for (int32_t r = 0; r < rows; ++r) {
        sc.part_rows[static_cast<size_t>(r)] = sc.partial.data() + r * pf;
        fc::reset_partial(sc.state.data() + r * pf, args_.head_dim);
      }
    }
    for (int32_t p = it.part_begin(); p < it.part_end(); ++p) {
      run_kernel(b, k_cache, v_cache, it, p, sc);
      if (it.part_end() - it.part_begin() == 1) break;  // every row lies in the one partition
      for (int32_t r = 0; r < rows; ++r) {
        const auto [first, last] = row_parts(sc.row_pos[static_cast<size_t>(r)]);
        if (first < last && first <= p && p <= last)
          fc::merge_partial(sc.state.data() + r * pf, sc.partial.data() + r * pf, args_.head_dim);
      }
    }
    if (it.part_end() - it.part_begin() == 1) return;
    for (int32_t r = 0; r < rows; ++r) {
      const auto [first, last] = row_parts(sc.row_pos[static_cast<size_t>(r)]);
      if (first < last)
        fc::finish_partial(sc.state.data() + r * pf, sc.out_rows[static_cast<size_t>(r)], args_.head_dim);
    }
  }

  // One partition of a split tile; the last of the tile's items to finish merges its partials,
  // in increasing partition order, with the same merge_partial calls run_tile makes.
  void run_split_part(const loom_attention_batch& b, const loom_tensor_view& q, const loom_tensor_view& k_cache,
                      const loom_tensor_view& v_cache, const loom_tensor_view& out, const Item& it, Scratch& sc) {
    const Split& sp = splits_[static_cast<size_t>(it.split)];
    const int32_t parts = sp.tile.part_end() - sp.tile.part_begin();
    const int64_t pf = fc::partial_floats(args_.head_dim);
    // [rows, parts, head_dim + 2] of the tile: row r's partial of partition p.
    const auto slot = [&](int32_t r, int32_t p) {
      return partials_.data() + sp.partials + (int64_t{r} * parts + p - sp.tile.part_begin()) * pf;
    };
    const int32_t rows = fill_rows(b, q, out, it, sc);
    for (int32_t r = 0; r < rows; ++r) sc.part_rows[static_cast<size_t>(r)] = slot(r, it.part_begin());
    run_kernel(b, k_cache, v_cache, it, it.part_begin(), sc);
    // acq_rel: the last item sees every other item's partials.
    if (remaining_[static_cast<size_t>(it.split)].fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    sc.state.resize(static_cast<size_t>(pf));
    for (int32_t r = 0; r < rows; ++r) {
      const auto [first, last] = row_parts(sc.row_pos[static_cast<size_t>(r)]);
      if (first == last) continue;  // finished by the kernel
      fc::reset_partial(sc.state.data(), args_.head_dim);
      for (int32_t p = first; p <= last; ++p)
        fc::merge_partial(sc.state.data(), slot(r, p), args_.head_dim);
      fc::finish_partial(sc.state.data(), sc.out_rows[static_cast<size_t>(r)], args_.head_dim);
    }
  }

  loom::sdk::Host host_;
  loom_attention_create_args args_;
  int32_t window_ = 0;          // the current call's sliding window (0: none)
  std::vector<float> rotated_;  // write_kv: one K row after RoPE
  fc::TileKernel kernel_ = nullptr;
  // Of the current step, reused across steps:
  std::vector<Item> tiles_;    // [tiles] before the split
  std::vector<Item> items_;    // [work items]
  std::vector<Split> splits_;  // [split tiles]
  std::vector<float> partials_;  // [split tiles' rows x partitions, head_dim + 2] (Split::partials)
  std::vector<std::atomic<int32_t>> remaining_;  // [split tiles] partitions not yet folded
  std::vector<Scratch> scratch_;  // per thread, reused across steps
};

}  // namespace

LOOM_ATTENTION_PLUGIN(FlashCpuAttention, "flash_cpu", "0.1.0",
                      "tiled online-softmax attention over the paged KV pool (GQA-aware, threaded, SIMD, sliding window)");
