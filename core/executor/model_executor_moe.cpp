// The mixture-of-experts MLP of the forward pass (model_executor.hpp), for the families whose
// ArchSpec has MoeSpec::experts: router -> top-k (expert_routing.hpp) -> the routed rows grouped
// by expert -> gate/up, SwiGLU and down as grouped GEMMs (one pass over each active expert's
// weights per step) -> each token's k outputs summed in its rank order, weighted; plus the
// sigmoid-gated shared expert of Qwen2-MoE on every token.
#include <cmath>
#include <string>

#include "core/common/error.hpp"
#include "core/executor/executor_scratch.hpp"
#include "core/executor/kernels/cpu/silu_mul.hpp"
#include "core/executor/model_executor.hpp"
#include "loom/sdk_core.hpp"

namespace loom {

void ModelExecutor::prepare_experts(const LlamaLayerWeights& lw, int32_t l, Layer& L, const GgufFile* source) {
  const int64_t dim = hp_.dim, ef = hp_.expert_ffn_dim, sf = hp_.shared_ffn_dim;
  L.router = prepare(lw.router, "ffn_gate_inp.weight", l, LOOM_WEIGHT_FFN_ROUTER, hp_.n_experts, dim, source);
  for (int32_t e = 0; e < hp_.n_experts; ++e) {
    const auto i = static_cast<size_t>(e);
    L.exp_gate.push_back(prepare(lw.exp_gate[i], "ffn_gate_exps.weight", l, LOOM_WEIGHT_FFN_GATE, ef, dim, source, e));
    L.exp_up.push_back(prepare(lw.exp_up[i], "ffn_up_exps.weight", l, LOOM_WEIGHT_FFN_UP, ef, dim, source, e));
    L.exp_down.push_back(prepare(lw.exp_down[i], "ffn_down_exps.weight", l, LOOM_WEIGHT_FFN_DOWN, dim, ef, source, e));
  }
  if (sf == 0) return;
  L.sh_gate = prepare(lw.sh_gate, "ffn_gate_shexp.weight", l, LOOM_WEIGHT_FFN_GATE, sf, dim, source);
  L.sh_up = prepare(lw.sh_up, "ffn_up_shexp.weight", l, LOOM_WEIGHT_FFN_UP, sf, dim, source);
  L.sh_down = prepare(lw.sh_down, "ffn_down_shexp.weight", l, LOOM_WEIGHT_FFN_DOWN, dim, sf, source);
  L.sh_router = prepare(lw.sh_router, "ffn_gate_inp_shexp.weight", l, LOOM_WEIGHT_FFN_ROUTER, 1, dim, source);
}

void ModelExecutor::linear_experts(const std::vector<void*>& handles, const std::vector<int32_t>& offsets,
                                   const float* x, int64_t in, float* y, int64_t out) {
  const int64_t rows = offsets.back();
  if (!sdk::present(*quant_.vt, &loom_quantization_vtable::linear_experts)) {
    for (size_t e = 0; e < handles.size(); ++e) {
      const int64_t lo = offsets[e], n = offsets[e + 1] - lo;
      if (n > 0) linear(handles[e], x + lo * in, n, in, y + lo * out, out);
    }
    return;
  }
  const loom_tensor_view xv = f32_view(const_cast<float*>(x), {rows, in});
  loom_tensor_view yv = f32_view(y, {rows, out});
  ErrorBuffer err;
  loom_error_buf eb = err.buf();
  const loom_status s = quant_.vt->linear_experts(quant_.self, handles.data(), static_cast<int32_t>(handles.size()),
                                                  offsets.data(), &xv, &yv, &eb);
  if (s != LOOM_OK) throw Error("quantization plugin linear_experts failed: " + err.str(), s);
}

void ModelExecutor::moe_mlp(const Layer& L, const float* xn, int64_t rows, float* out) {
  const int64_t dim = hp_.dim, ef = hp_.expert_ffn_dim, E = hp_.n_experts, k = hp_.n_experts_used;
  ThreadPool* pool = &threads_;
  float* logits = ensure(router_logits_, rows * E);  // [rows, E]
  linear(L.router, xn, rows, dim, logits, E);
  route_experts(logits, static_cast<int32_t>(rows), static_cast<int32_t>(E), static_cast<int32_t>(k), hp_.norm_topk,
                routes_);

  const int64_t routed = rows * k;
  float* xg = ensure(moe_x_, routed * dim);  // [routed, dim] grouped by expert
  for (int64_t r = 0; r < routed; ++r) {
    const float* src = xn + int64_t{routes_.token_of_row[static_cast<size_t>(r)]} * dim;
    std::copy(src, src + dim, xg + r * dim);
  }
  float* gate = ensure(moe_gate_, routed * ef);
  float* up = ensure(moe_up_, routed * ef);
  float* down = ensure(moe_down_, routed * dim);
  linear_experts(L.exp_gate, routes_.offsets, xg, dim, gate, ef);
  linear_experts(L.exp_up, routes_.offsets, xg, dim, up, ef);
  cpu::silu_mul(gate, up, gate, routed * ef, pool);
  linear_experts(L.exp_down, routes_.offsets, gate, ef, down, dim);

  // out[t] = sum over ranks r of weight(t, r) * down[row of (t, r)], in rank order.
  for (int64_t t = 0; t < rows; ++t) {
    float* o = out + t * dim;
    for (int64_t r = 0; r < k; ++r) {
      const auto slot = static_cast<size_t>(t * k + r);
      const float w = routes_.weight[slot];
      const float* y = down + int64_t{routes_.row_of_slot[slot]} * dim;
      if (r == 0) {
        for (int64_t i = 0; i < dim; ++i) o[i] = w * y[i];
      } else {
        for (int64_t i = 0; i < dim; ++i) o[i] += w * y[i];
      }
    }
  }
  if (L.sh_gate == nullptr) return;

  // Qwen2-MoE's shared expert: out += sigmoid(w . x) * down(silu(gate x) * up x), every token.
  const int64_t sf = hp_.shared_ffn_dim;
  float* sg = ensure(moe_gate_, rows * sf);
  float* su = ensure(moe_up_, rows * sf);
  float* sd = ensure(moe_down_, rows * dim);
  float* gl = ensure(shared_gate_, rows);
  const LinearOut gate_up[] = {{L.sh_gate, sg, sf}, {L.sh_up, su, sf}};
  linear_group(gate_up, xn, rows, dim);
  cpu::silu_mul(sg, su, sg, rows * sf, pool);
  linear(L.sh_down, sg, rows, sf, sd, dim);
  linear(L.sh_router, xn, rows, dim, gl, 1);
  for (int64_t t = 0; t < rows; ++t) {
    const float g = 1.0f / (1.0f + std::exp(-gl[t]));
    for (int64_t i = 0; i < dim; ++i) out[t * dim + i] += g * sd[t * dim + i];
  }
}

}  // namespace loom
