// The attention skeleton: exact causal attention over the paged f32 KV pool, one query at a time.
#include "tools/plugin/skeleton.hpp"

namespace loom::tools {

SkeletonKind attention_skeleton() {
  SkeletonKind k;
  k.class_header = R"skel(
// Writes this step's K/V into the pool, then attends every query token over its sequence's
// positions 0..pos (causal), reading K/V back through the block table. f32 KV, CPU only.
class @CLASS@ {
 public:
  @CLASS@(const loom::sdk::Host&, const loom_attention_create_args& args, std::string_view config)
      : args_(args) {
    @IDENT@_plugin::refuse_config_keys(config);
    if (args.n_heads <= 0 || args.n_kv_heads <= 0 || args.n_heads % args.n_kv_heads != 0 || args.head_dim <= 0)
      throw loom::sdk::Error(LOOM_ERR_INVALID_ARGUMENT, "attention @NAME@: n_heads must be a positive multiple of n_kv_heads");
    if (args.kv_dtype != LOOM_DTYPE_F32 || args.device.type != LOOM_DEVICE_CPU)
      throw loom::sdk::Error(LOOM_ERR_UNSUPPORTED, "attention @NAME@: only an f32 KV cache on the CPU");
  }

  loom_status forward(const loom_attention_batch* b, const loom_tensor_view* q, const loom_tensor_view* k,
                      const loom_tensor_view* v, loom_tensor_view* k_cache, loom_tensor_view* v_cache,
                      loom_tensor_view* out) {
    const int64_t H = args_.n_heads, KVH = args_.n_kv_heads, D = args_.head_dim;
    // q, out: [num_tokens, n_heads, head_dim]; k, v: [num_tokens, n_kv_heads, head_dim]
    // k_cache, v_cache: [num_blocks, block_size, n_kv_heads, head_dim]
    for (int32_t t = 0; t < b->num_tokens; ++t) {
      for (int64_t h = 0; h < KVH; ++h) {
        std::copy_n(at(k, t, h), D, pool(k_cache, b->slot_mapping[t], h));
        std::copy_n(at(v, t, h), D, pool(v_cache, b->slot_mapping[t], h));
      }
    }
    std::vector<double> scores;
    for (int32_t s = 0; s < b->num_seqs; ++s) {
      const int32_t* table = b->block_tables + int64_t(s) * b->max_blocks_per_seq;
      for (int32_t t = b->query_start[s]; t < b->query_start[s + 1]; ++t) {
        const int32_t pos = b->positions[t];
        for (int64_t h = 0; h < H; ++h) {
          const int64_t kvh = h / (H / KVH);
          const float* qv = at(q, t, h);
          scores.assign(size_t(pos) + 1, 0.0);
          double top = -INFINITY;
          for (int32_t p = 0; p <= pos; ++p) {
            const float* kp = pool(k_cache, slot(table, b->block_size, p), kvh);
            double dot = 0;
            for (int64_t d = 0; d < D; ++d) dot += double(qv[d]) * kp[d];
            scores[size_t(p)] = dot * args_.scale;
            top = std::max(top, scores[size_t(p)]);
          }
          double sum = 0;
          for (double& x : scores) sum += (x = std::exp(x - top));
          float* o = at(out, t, h);
          for (int64_t d = 0; d < D; ++d) {
            double acc = 0;
            for (int32_t p = 0; p <= pos; ++p)
              acc += scores[size_t(p)] * pool(v_cache, slot(table, b->block_size, p), kvh)[d];
            o[d] = float(acc / sum);
          }
        }
      }
    }
    return LOOM_OK;
  }

 private:
  static float* at(const loom_tensor_view* x, int64_t token, int64_t head) {
    return static_cast<float*>(x->data) + token * x->strides[0] + head * x->strides[1];
  }
  static float* pool(const loom_tensor_view* c, int64_t slot, int64_t head) {
    const int64_t block_size = c->shape[1];
    return static_cast<float*>(c->data) + (slot / block_size) * c->strides[0] + (slot % block_size) * c->strides[1] +
           head * c->strides[2];
  }
  static int64_t slot(const int32_t* table, int32_t block_size, int32_t pos) {
    return int64_t(table[pos / block_size]) * block_size + pos % block_size;
  }

  loom_attention_create_args args_;
};
)skel";
  k.test_body = R"skel(    // 2 query heads sharing 1 KV head, head_dim 2, blocks of 2 tokens; one sequence of 3 tokens.
    loom_attention_create_args args{};
    args.struct_size = sizeof(args);
    args.n_heads = 2;
    args.n_kv_heads = 1;
    args.head_dim = 2;
    args.scale = 1.0f;
    args.kv_dtype = LOOM_DTYPE_F32;
    args.block_size = 2;
    @CLASS@ plugin(host, args, "{}");
    auto view = [](float* data, int32_t ndim, std::vector<int64_t> shape) {
      loom_tensor_view t{};
      t.data = data;
      t.dtype = LOOM_DTYPE_F32;
      t.ndim = ndim;
      int64_t stride = 1;
      for (int32_t d = ndim - 1; d >= 0; --d) {
        t.shape[d] = shape[size_t(d)];
        t.strides[d] = stride;
        stride *= shape[size_t(d)];
      }
      return t;
    };
    float qd[3 * 2 * 2] = {1, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1};
    float kd[3 * 2] = {1, 0, 0, 1, 1, 1};
    float vd[3 * 2] = {1, 2, 3, 4, 5, 6};
    std::vector<float> kc(2 * 2 * 2, 0.0f), vc(2 * 2 * 2, 0.0f), od(3 * 2 * 2, 0.0f);
    loom_tensor_view q = view(qd, 3, {3, 2, 2}), k = view(kd, 3, {3, 1, 2}), v = view(vd, 3, {3, 1, 2});
    loom_tensor_view k_cache = view(kc.data(), 4, {2, 2, 1, 2}), v_cache = view(vc.data(), 4, {2, 2, 1, 2});
    loom_tensor_view out = view(od.data(), 3, {3, 2, 2});
    // Blocks 1 then 0: the sequence's K/V does not sit in pool order.
    const int32_t query_start[2] = {0, 3}, seq_lens[1] = {3}, positions[3] = {0, 1, 2};
    const int32_t slots[3] = {2, 3, 0}, tables[2] = {1, 0};
    loom_attention_batch batch{sizeof(batch), 1, 3, query_start, seq_lens, positions, slots, tables, 2, 2};
    check(plugin.forward(&batch, &q, &k, &v, &k_cache, &v_cache, &out) == LOOM_OK, "forward returns LOOM_OK");
    check(kc[4] == 1 && kc[5] == 0 && kc[0] == 1 && kc[1] == 1, "new K rows are written at their slots");
    // Token 0 sees only itself: its output is V[0] exactly, for both heads.
    check(od[0] == 1 && od[1] == 2 && od[2] == 1 && od[3] == 2, "position 0 attends to itself only");
    // Token 1, head 1 (q = [0, 1]) scores key 0 with 0 and key 1 with 1: weights 1/(1+e), e/(1+e).
    const double w = std::exp(1.0) / (1.0 + std::exp(1.0));
    check(std::fabs(od[6] - float((1 - w) * 1 + w * 3)) < 1e-6f, "position 1 weighs V by softmax(q.k)");
    // Token 2, head 1 (q = [1, 1]) scores 1, 1, 2 against the three keys.
    const double e2 = std::exp(1.0), s2 = 2 * std::exp(0.0) + e2;
    check(std::fabs(od[11] - float((2.0 + 4.0 + e2 * 6.0) / s2)) < 1e-6f, "position 2 attends to all three");)skel";
  return k;
}

}  // namespace loom::tools
