// attention/naive: the reference every other attention plugin is checked against.
//
// For each query token and head it computes exact softmax attention over positions 0..pos of its
// sequence (or, with a sliding window w, pos - w + 1 .. pos), reading K/V through the block table, with every sum in double precision. Nothing is
// tiled or fused: clarity over speed. The result of one (token, head) depends only on that
// token's query and its sequence's cached K/V, never on what else is in the batch, so batched
// and alone runs agree bit for bit.
#include <cmath>
#include <string>
#include <vector>

#include "loom/attention.h"
#include "loom/sdk.hpp"
#include "loom/sdk_config.hpp"

namespace {

using loom::sdk::Error;

std::string dtype_label(loom_dtype t) {
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

// Checks a view's rank, dtype and extents; the innermost dimension must be contiguous.
void check_view(const loom_tensor_view* t, const char* name, int32_t ndim,
                std::initializer_list<int64_t> shape) {
  if (t == nullptr || t->data == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, std::string(name) + " is null");
  if (t->dtype != LOOM_DTYPE_F32)
    throw Error(LOOM_ERR_UNSUPPORTED, std::string(name) + ": " + dtype_label(t->dtype) +
                                          " is not f32 (the only dtype attention naive handles)");
  if (t->ndim != ndim)
    throw Error(LOOM_ERR_INVALID_ARGUMENT,
                std::string(name) + ": expected " + std::to_string(ndim) + " dims, got " + std::to_string(t->ndim));
  int32_t d = 0;
  for (int64_t want : shape) {
    if (want >= 0 && t->shape[d] != want)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, std::string(name) + ": dim " + std::to_string(d) + " is " +
                                                 std::to_string(t->shape[d]) + ", expected " + std::to_string(want));
    ++d;
  }
  if (t->strides[ndim - 1] != 1)
    throw Error(LOOM_ERR_INVALID_ARGUMENT, std::string(name) + ": innermost dimension must be contiguous");
}

class NaiveAttention {
 public:
  // No options: an empty table (or none) is the only valid config.
  static const loom::sdk::ConfigSpec<loom::sdk::NoConfig>& config_spec() {
    static const loom::sdk::ConfigSpec<loom::sdk::NoConfig> spec("attention naive");
    return spec;
  }

  NaiveAttention(const loom::sdk::Host& host, const loom_attention_create_args& args, const loom::sdk::NoConfig&)
      : host_(host), args_(args) {
    if (args.n_heads <= 0 || args.n_kv_heads <= 0 || args.n_heads % args.n_kv_heads != 0)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "attention naive: n_heads " + std::to_string(args.n_heads) +
                                                 " is not a positive multiple of n_kv_heads " +
                                                 std::to_string(args.n_kv_heads));
    if (args.head_dim <= 0 || args.block_size <= 0)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "attention naive: head_dim and block_size must be positive");
    if (args.kv_dtype != LOOM_DTYPE_F32)
      throw Error(LOOM_ERR_UNSUPPORTED, "attention naive: kv_dtype " + dtype_label(args.kv_dtype) +
                                            " is not supported (only f32)");
    if (args.device.type != LOOM_DEVICE_CPU)
      throw Error(LOOM_ERR_UNSUPPORTED, "attention naive: runs on the CPU only, not on device type " +
                                            std::to_string(args.device.type));
    scratch_.resize(static_cast<size_t>(host_.num_threads()));
  }

  void forward(const loom_attention_batch* b, const loom_tensor_view* q, const loom_tensor_view* k,
               const loom_tensor_view* v, loom_tensor_view* k_cache, loom_tensor_view* v_cache,
               loom_tensor_view* out) {
    run(b, 0, q, k, v, k_cache, v_cache, out);
  }

  // Interface 1.2: the sliding-window reference. K arrives rotated (naive offers no
  // forward_rope_k, so a host passes no rope).
  void forward_window(const loom_attention_batch* b, int32_t window, const loom_rope* rope, const loom_tensor_view* q,
                      const loom_tensor_view* k, const loom_tensor_view* v, loom_tensor_view* k_cache,
                      loom_tensor_view* v_cache, loom_tensor_view* out) {
    if (rope != nullptr)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "attention naive: forward_window takes no rope (naive has no forward_rope_k)");
    run(b, window, q, k, v, k_cache, v_cache, out);
  }

 private:
  // window <= 0: full causal context; else positions pos - window + 1 .. pos.
  void run(const loom_attention_batch* b, int32_t window, const loom_tensor_view* q, const loom_tensor_view* k,
           const loom_tensor_view* v, loom_tensor_view* k_cache, loom_tensor_view* v_cache, loom_tensor_view* out) {
    if (b == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "batch is null");
    const int64_t T = b->num_tokens, H = args_.n_heads, KVH = args_.n_kv_heads, D = args_.head_dim;
    if (b->block_size != args_.block_size)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "batch block_size " + std::to_string(b->block_size) +
                                                 " differs from the plugin's " + std::to_string(args_.block_size));
    check_view(q, "q", 3, {T, H, D});
    check_view(k, "k", 3, {T, KVH, D});
    check_view(v, "v", 3, {T, KVH, D});
    check_view(out, "out", 3, {T, H, D});
    check_view(k_cache, "k_cache", 4, {-1, b->block_size, KVH, D});
    check_view(v_cache, "v_cache", 4, {k_cache->shape[0], b->block_size, KVH, D});
    if (T == 0) return;
    const int64_t num_slots = k_cache->shape[0] * b->block_size;

    // Token -> sequence, checked once so the parallel part cannot go out of bounds.
    token_seq_.resize(static_cast<size_t>(T));
    if (b->query_start[0] != 0 || b->query_start[b->num_seqs] != T)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "query_start must run from 0 to num_tokens");
    for (int32_t s = 0; s < b->num_seqs; ++s) {
      for (int32_t t = b->query_start[s]; t < b->query_start[s + 1]; ++t) {
        const int32_t pos = b->positions[t];
        if (pos < 0 || pos >= b->seq_lens[s] || pos / b->block_size >= b->max_blocks_per_seq)
          throw Error(LOOM_ERR_INVALID_ARGUMENT, "token " + std::to_string(t) + ": position " + std::to_string(pos) +
                                                     " outside its sequence (seq_len " + std::to_string(b->seq_lens[s]) + ")");
        if (b->slot_mapping[t] < 0 || b->slot_mapping[t] >= num_slots)
          throw Error(LOOM_ERR_INVALID_ARGUMENT, "token " + std::to_string(t) + ": slot " +
                                                     std::to_string(b->slot_mapping[t]) + " outside the pool");
        token_seq_[static_cast<size_t>(t)] = s;
      }
    }

    // 1. Write this step's K/V rows into the pool, so a token can attend to itself and to the
    //    earlier tokens of the same step.
    for (int64_t t = 0; t < T; ++t) {
      const int64_t slot = b->slot_mapping[t];
      for (int64_t h = 0; h < KVH; ++h) {
        const float* ks = static_cast<const float*>(k->data) + t * k->strides[0] + h * k->strides[1];
        const float* vs = static_cast<const float*>(v->data) + t * v->strides[0] + h * v->strides[1];
        float* kd = cache_row(k_cache, slot, h);
        float* vd = cache_row(v_cache, slot, h);
        for (int64_t d = 0; d < D; ++d) {
          kd[d] = ks[d];
          vd[d] = vs[d];
        }
      }
    }

    // 2. Exact softmax attention per (token, head).
    host_.parallel_for(T * H, [&](int64_t begin, int64_t end, int32_t thread) {
      if (thread < 0 || static_cast<size_t>(thread) >= scratch_.size())
        throw Error(LOOM_ERR_INTERNAL, "parallel_for thread index out of range");
      std::vector<double>& scores = scratch_[static_cast<size_t>(thread)].scores;
      std::vector<double>& acc = scratch_[static_cast<size_t>(thread)].acc;
      acc.resize(static_cast<size_t>(D));
      for (int64_t item = begin; item < end; ++item) {
        const int64_t t = item / H, h = item % H;
        const int64_t kvh = h / (H / KVH);
        const int32_t s = token_seq_[static_cast<size_t>(t)];
        const int32_t pos = b->positions[t];
        const int32_t first = window > 0 && pos >= window ? pos - window + 1 : 0;  // oldest key it sees
        const int32_t* table = b->block_tables + static_cast<int64_t>(s) * b->max_blocks_per_seq;
        const float* qr = static_cast<const float*>(q->data) + t * q->strides[0] + h * q->strides[1];
        if (scores.size() < static_cast<size_t>(pos) + 1) scores.resize(static_cast<size_t>(pos) + 1);

        double max_score = -INFINITY;
        for (int32_t p = first; p <= pos; ++p) {
          const float* kr = cache_row(k_cache, slot_of(table, p, num_slots, s), kvh);
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += static_cast<double>(qr[d]) * kr[d];
          scores[static_cast<size_t>(p)] = dot * args_.scale;
          if (scores[static_cast<size_t>(p)] > max_score) max_score = scores[static_cast<size_t>(p)];
        }
        double sum = 0.0;
        for (int32_t p = first; p <= pos; ++p) {
          scores[static_cast<size_t>(p)] = std::exp(scores[static_cast<size_t>(p)] - max_score);
          sum += scores[static_cast<size_t>(p)];
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int32_t p = first; p <= pos; ++p) {
          const float* vr = cache_row(v_cache, slot_of(table, p, num_slots, s), kvh);
          const double w = scores[static_cast<size_t>(p)];
          for (int64_t d = 0; d < D; ++d) acc[static_cast<size_t>(d)] += w * vr[d];
        }
        float* o = static_cast<float*>(out->data) + t * out->strides[0] + h * out->strides[1];
        for (int64_t d = 0; d < D; ++d) o[d] = static_cast<float>(acc[static_cast<size_t>(d)] / sum);
      }
    });
  }

  // Row [slot / block_size, slot % block_size, h, :] of a pool view.
  static float* cache_row(const loom_tensor_view* c, int64_t slot, int64_t h) {
    const int64_t bs = c->shape[1];
    return static_cast<float*>(c->data) + (slot / bs) * c->strides[0] + (slot % bs) * c->strides[1] +
           h * c->strides[2];
  }

  int64_t slot_of(const int32_t* table, int32_t p, int64_t num_slots, int32_t s) const {
    const int32_t block = table[p / args_.block_size];
    const int64_t slot = static_cast<int64_t>(block) * args_.block_size + p % args_.block_size;
    if (block < 0 || slot >= num_slots)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "sequence " + std::to_string(s) + ": position " + std::to_string(p) +
                                                 " maps to block " + std::to_string(block) + ", outside the pool");
    return slot;
  }

  loom::sdk::Host host_;
  loom_attention_create_args args_;
  std::vector<int32_t> token_seq_;            // [num_tokens] sequence of each token
  struct Scratch {
    std::vector<double> scores;  // [context] softmax weights
    std::vector<double> acc;     // [head_dim] weighted sum of V
  };
  std::vector<Scratch> scratch_;  // per thread, reused across steps
};

}  // namespace

LOOM_ATTENTION_PLUGIN(NaiveAttention, "naive", "0.1.0",
                      "reference attention: exact double-precision softmax over the paged KV pool, causal or sliding-window");
