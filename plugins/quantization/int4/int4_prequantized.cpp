// Pre-quantized INT4 weights from a GGUF (int4_prequantized.hpp).
#include "int4_prequantized.hpp"

#include <cstddef>
#include <cstring>
#include <string>

#include "common/quant_plugin.hpp"

namespace loom_int4 {
namespace {

using loom::sdk::Error;

[[noreturn]] void refuse(const std::string& what) {
  throw Error(LOOM_ERR_INVALID_ARGUMENT, "quantization int4: " + what);
}

std::string dtype_of(loom_dtype t) { return t == LOOM_DTYPE_I32 ? "i32" : loom_quant::dtype_label(t); }

std::string shape_of(const loom_tensor_view& v) {
  std::string s = "[";
  for (int32_t d = 0; d < v.ndim && d < 4; ++d) s += (d ? ", " : "") + std::to_string(v.shape[d]);
  return s + "]";
}

std::string shape_of(int64_t rows, int64_t cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

// Checks that v is a 2-d [rows, cols] view of dtype with contiguous elements in each row.
void check_matrix(const loom_tensor_view& v, const std::string& name, loom_dtype dtype, const char* dtype_name,
                  int64_t rows, int64_t cols) {
  if (v.dtype != dtype)
    refuse("tensor " + name + " must be " + dtype_name + ", got " + dtype_of(v.dtype));
  if (v.ndim != 2 || v.shape[0] != rows || v.shape[1] != cols)
    refuse("tensor " + name + " must have shape " + shape_of(rows, cols) + ", got " + shape_of(v));
  if (v.data == nullptr || v.strides[1] != 1 || v.strides[0] < cols)
    refuse("tensor " + name + " must have contiguous rows");
}

}  // namespace

Int4Weight read_prequantized(const loom_tensor_view* words, const loom_weight_info* info) {
  if (words == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "weight is null");
  if (info == nullptr || info->struct_size < offsetof(loom_weight_info, expert) || info->name == nullptr)
    refuse("a weight stored pre-quantized (i32 words) needs its name from the host (prepare_weight_info)");
  const std::string name = info->name;
  if (info->find_tensor == nullptr)
    refuse("tensor " + name + " is stored pre-quantized (i32 words), but the host cannot look up " + name +
           ".scale and " + name + ".zero");
  const int64_t out = info->out_features, in = info->in_features;
  if (out <= 0 || in <= 0)
    refuse("tensor " + name + ": the host gave no logical shape (" + shape_of(out, in) + ")");
  check_matrix(*words, name, LOOM_DTYPE_I32, "i32", out, (in + 7) / 8);

  loom_tensor_view scale{};
  const std::string scale_name = name + ".scale";
  if (info->find_tensor(info->find_ctx, scale_name.c_str(), &scale) == 0)
    refuse("tensor " + name + " is stored pre-quantized but its scales " + scale_name + " are missing");
  if (scale.ndim != 2 || scale.shape[0] != out || scale.shape[1] <= 0)
    refuse("tensor " + scale_name + " must have shape [" + std::to_string(out) + ", n_groups], got " +
           shape_of(scale));
  const int64_t n_groups = scale.shape[1];
  const int64_t span = (in + n_groups - 1) / n_groups;
  const int64_t group = span <= 32 ? 32 : span <= 64 ? 64 : span <= 128 ? 128 : 0;
  if (group == 0 || (in + group - 1) / group != n_groups)
    refuse("tensor " + scale_name + ": " + std::to_string(n_groups) + " groups do not cut " + std::to_string(in) +
           " input channels into groups of 32, 64 or 128");
  check_matrix(scale, scale_name, LOOM_DTYPE_F32, "f32", out, n_groups);

  Int4Weight w = make_weight(out, in, group);
  loom_tensor_view zero{};
  const std::string zero_name = name + ".zero";
  const bool has_zero = info->find_tensor(info->find_ctx, zero_name.c_str(), &zero) != 0;
  if (has_zero) check_matrix(zero, zero_name, LOOM_DTYPE_I8, "i8", out, n_groups);
  for (int64_t o = 0; o < out; ++o) {
    std::memcpy(w.packed.data() + o * w.words_per_row, static_cast<const int32_t*>(words->data) + o * words->strides[0],
                static_cast<size_t>(w.words_per_row) * sizeof(uint32_t));
    std::memcpy(w.scale.data() + o * n_groups, static_cast<const float*>(scale.data) + o * scale.strides[0],
                static_cast<size_t>(n_groups) * sizeof(float));
    for (int64_t g = 0; g < n_groups; ++g) {
      const int8_t z = has_zero ? static_cast<const int8_t*>(zero.data)[o * zero.strides[0] + g] : 8;
      if (z < 0 || z > 15)
        refuse("tensor " + zero_name + " holds " + std::to_string(z) + " at [" + std::to_string(o) + ", " +
               std::to_string(g) + "]; zero points are 0..15");
      w.zero[static_cast<size_t>(o * n_groups + g)] = static_cast<uint8_t>(z);
    }
  }
  return w;
}

}  // namespace loom_int4
