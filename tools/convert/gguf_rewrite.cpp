#include "tools/convert/gguf_rewrite.hpp"

#include <algorithm>
#include <cstring>

#include "core/common/error.hpp"
#include "loom/sdk_dtype.hpp"
#include "loom/sdk_gguf_blocks.hpp"
#include "loom/sdk_half.hpp"

namespace loom::convert {
namespace {

namespace g = sdk::gguf;

// ggml's type numbers that can hold block-quantized weights (0..39), activation-only ones left out.
bool is_weight_block_type(int t) {
  return t > 1 && t < 40 && t != LOOM_DTYPE_Q8_1 && t != LOOM_DTYPE_Q8_K && sdk::dtype_info(loom_dtype(t)).block_size > 1;
}

// Bytes of `values` elements (a whole number of blocks) of type t.
int64_t row_bytes(loom_dtype t, int64_t values) {
  if (is_float_type(t)) return values * sdk::dtype_info(t).block_bytes;
  const g::BlockGeometry geo = g::block_geometry(t);
  return values / geo.values * geo.bytes;
}

// One row of n values stored as `t` at `src` -> f32.
void row_to_f32(loom_dtype t, const uint8_t* src, int64_t n, float* out) {
  if (t == LOOM_DTYPE_F32) {
    std::memcpy(out, src, static_cast<size_t>(n) * sizeof(float));
  } else if (t == LOOM_DTYPE_F16 || t == LOOM_DTYPE_BF16) {
    const auto* h = reinterpret_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) out[i] = t == LOOM_DTYPE_F16 ? sdk::f16_to_f32(h[i]) : sdk::bf16_to_f32(h[i]);
  } else {
    g::dequantize_row(t, src, out, n);
  }
}

// f32 -> one row of n values of `t` at `dst`.
void row_from_f32(loom_dtype t, const float* x, int64_t n, uint8_t* dst) {
  if (t == LOOM_DTYPE_F32) {
    std::memcpy(dst, x, static_cast<size_t>(n) * sizeof(float));
  } else if (t == LOOM_DTYPE_F16 || t == LOOM_DTYPE_BF16) {
    auto* h = reinterpret_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) h[i] = t == LOOM_DTYPE_F16 ? sdk::f32_to_f16(x[i]) : sdk::f32_to_bf16(x[i]);
  } else {
    g::quantize_row(t, x, dst, n);
  }
}

// Why tensor `t` cannot be rewritten as `to`; empty when it can.
std::string conversion_problem(const GgufTensorInfo& t, loom_dtype to) {
  const loom_dtype from = t.dtype;
  if (!is_float_type(from) && !can_dequantize(from))
    return t.name + ": cannot read " + sdk::type_name(from) + " (this build reads " + readable_type_names() + ")";
  if (!is_float_type(to) && !can_quantize(to))
    return t.name + ": this build cannot write " + sdk::type_name(to);
  const int64_t block = is_float_type(to) ? 1 : g::block_geometry(to).values;
  if (t.dims.empty() || t.dims[0] % block != 0)
    return t.name + ": rows of " + std::to_string(t.dims.empty() ? 0 : t.dims[0]) + " values are not whole " +
           sdk::type_name(to) + " blocks";
  return "";
}

// One block of zeros through the SDK's dispatch, one way or the other: whether it knows `t` that
// way (the geometry table and the converters are separate switches, so both are asked).
bool dispatch_knows(loom_dtype t, bool quantize) {
  if (!is_weight_block_type(t)) return false;
  const g::BlockGeometry geo = g::block_geometry(t);
  if (geo.values == 0) return false;
  std::vector<float> values(static_cast<size_t>(geo.values), 0.0f);
  std::vector<uint8_t> block(static_cast<size_t>(geo.bytes), 0);
  return quantize ? g::quantize_row(t, values.data(), block.data(), geo.values)
                  : g::dequantize_row(t, block.data(), values.data(), geo.values);
}

}  // namespace

bool is_float_type(loom_dtype t) { return t == LOOM_DTYPE_F32 || t == LOOM_DTYPE_F16 || t == LOOM_DTYPE_BF16; }

bool can_dequantize(loom_dtype t) { return dispatch_knows(t, false); }
bool can_quantize(loom_dtype t) { return dispatch_knows(t, true); }

std::string readable_type_names() {
  std::string s = "f32, f16, bf16";
  for (int t = 0; t < 40; ++t)
    if (can_dequantize(loom_dtype(t))) s += ", " + sdk::type_name(loom_dtype(t));
  return s;
}

GgufWriter rewrite_gguf(const GgufFile& in, const std::vector<loom_dtype>& dtypes, uint32_t file_type) {
  const std::vector<GgufTensorInfo>& tensors = in.tensors();
  if (dtypes.size() != tensors.size()) throw Error("rewrite: one dtype per tensor is needed");
  GgufWriter w(in.alignment());
  for (const auto& [key, value] : in.metadata()) {
    if (key == "general.alignment") continue;  // the writer sets it from its own alignment
    w.set(key, value);
  }
  w.set_u32("general.file_type", file_type);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const GgufTensorInfo* src = &tensors[i];
    const loom_dtype to = dtypes[i];
    if (to == src->dtype) {
      w.add_tensor(src->name, src->dtype, src->dims, [src](GgufTensorSink& sink) { sink.write(src->data, src->nbytes); });
      continue;
    }
    if (const std::string problem = conversion_problem(*src, to); !problem.empty()) throw Error(problem);
    w.add_tensor(src->name, to, src->dims, [src, to](GgufTensorSink& sink) {
      // The tensor as rows: [rows, cols], cols = dims[0] (GGUF's innermost dimension).
      const int64_t cols = src->dims[0];
      int64_t rows = 1;
      for (size_t d = 1; d < src->dims.size(); ++d) rows *= src->dims[d];
      const int64_t in_bytes = row_bytes(src->dtype, cols), out_bytes = row_bytes(to, cols);
      constexpr int64_t kRowsPerWrite = 64;  // bounded buffers whatever the tensor's size
      std::vector<float> f32(static_cast<size_t>(cols));                      // [cols]
      std::vector<uint8_t> out(static_cast<size_t>(kRowsPerWrite * out_bytes));  // [kRowsPerWrite, out_bytes]
      const auto* base = static_cast<const uint8_t*>(src->data);
      for (int64_t r0 = 0; r0 < rows; r0 += kRowsPerWrite) {
        const int64_t n = std::min(kRowsPerWrite, rows - r0);
        for (int64_t r = 0; r < n; ++r) {
          row_to_f32(src->dtype, base + (r0 + r) * in_bytes, cols, f32.data());
          row_from_f32(to, f32.data(), cols, out.data() + r * out_bytes);
        }
        sink.write(out.data(), static_cast<size_t>(n * out_bytes));
      }
    });
  }
  return w;
}

}  // namespace loom::convert
