#include "tools/convert/weight_quantizer.hpp"

#include <algorithm>

#include "core/common/error.hpp"
#include "loom/sdk_gguf_blocks.hpp"
#include "loom/sdk_half.hpp"

namespace loom::convert {
namespace {

namespace g = sdk::gguf;

WeightQuantizer gguf_entry(const char* name, loom_dtype dtype, uint32_t file_type, const char* fallback) {
  const g::BlockGeometry geo = g::block_geometry(dtype);
  return WeightQuantizer{name, dtype, geo.values, geo.bytes, file_type, fallback,
                         [dtype](const float* x, int64_t n, uint8_t* out) { g::quantize_row(dtype, x, out, n); }};
}

// One row of a source tensor as f32.
void row_to_f32(const GgufTensorInfo& t, int64_t row, int64_t n, float* out) {
  if (t.dtype == LOOM_DTYPE_F32) {
    const float* src = static_cast<const float*>(t.data) + row * n;
    std::copy(src, src + n, out);
    return;
  }
  const uint16_t* src = static_cast<const uint16_t*>(t.data) + row * n;
  for (int64_t i = 0; i < n; ++i) out[i] = t.dtype == LOOM_DTYPE_F16 ? sdk::f16_to_f32(src[i]) : sdk::bf16_to_f32(src[i]);
}

bool is_plain(loom_dtype t) { return t == LOOM_DTYPE_F32 || t == LOOM_DTYPE_F16 || t == LOOM_DTYPE_BF16; }

}  // namespace

const std::vector<WeightQuantizer>& weight_quantizers() {
  // general.file_type values are llama.cpp's llama_ftype: MOSTLY_Q8_0 = 7, MOSTLY_Q4_0 = 2,
  // MOSTLY_Q4_K_S = 14, MOSTLY_Q6_K = 18, MOSTLY_Q4_1 = 3, MOSTLY_Q5_0 = 8, MOSTLY_Q5_1 = 9,
  // MOSTLY_IQ4_NL = 25.
  static const std::vector<WeightQuantizer> kAll = {
      gguf_entry("q8_0", LOOM_DTYPE_Q8_0, 7, ""),
      gguf_entry("q4_0", LOOM_DTYPE_Q4_0, 2, ""),
      gguf_entry("q4_k", LOOM_DTYPE_Q4_K, 14, "q4_0"),
      gguf_entry("q6_k", LOOM_DTYPE_Q6_K, 18, "q8_0"),
      gguf_entry("q4_1", LOOM_DTYPE_Q4_1, 3, ""),
      gguf_entry("q5_0", LOOM_DTYPE_Q5_0, 8, ""),
      gguf_entry("q5_1", LOOM_DTYPE_Q5_1, 9, ""),
      gguf_entry("iq4_nl", LOOM_DTYPE_IQ4_NL, 25, ""),
  };
  return kAll;
}

const WeightQuantizer* find_weight_quantizer(const std::string& name) {
  for (const WeightQuantizer& q : weight_quantizers())
    if (q.name == name) return &q;
  return nullptr;
}

const std::vector<std::string>& loom_quant_formats() {
  static const std::vector<std::string> kAll = {"int8", "int4", "fp8"};
  return kAll;
}

bool is_loom_quant_format(const std::string& name) {
  const auto& all = loom_quant_formats();
  return std::find(all.begin(), all.end(), name) != all.end();
}

std::string weight_quantizer_names() {
  std::string s;
  for (const WeightQuantizer& q : weight_quantizers()) s += (s.empty() ? "" : ", ") + q.name;
  for (const std::string& n : loom_quant_formats()) s += ", " + n;
  return s;
}

TensorQuantization plan_tensor(const GgufTensorInfo& t, bool head, const WeightQuantizer& q) {
  if (t.dims.size() != 2 || !is_plain(t.dtype)) return {t.dtype, ""};
  const WeightQuantizer* target = &q;
  std::string note;
  if (head && q.dtype != LOOM_DTYPE_Q8_0 && q.dtype != LOOM_DTYPE_Q6_K) {  // as llama.cpp: the head is q6_K
    target = find_weight_quantizer("q6_k");
    note = t.name + ": output head kept at higher precision (q6_K)";
  }
  const int64_t in = t.dims[0];
  while (in % target->block_values != 0) {
    const std::string from = target->name;
    target = target->fallback.empty() ? nullptr : find_weight_quantizer(target->fallback);
    const std::string to = target != nullptr ? target->name : std::string(dtype_name(t.dtype)) + " (unquantized)";
    note = t.name + ": rows of " + std::to_string(in) + " values are not whole " + from + " blocks, written as " + to;
    if (target == nullptr) return {t.dtype, note};
  }
  return {target->dtype, note};
}

GgufWriter quantize_gguf(const GgufFile& in, const WeightQuantizer& q, std::vector<std::string>* notes) {
  GgufWriter w(in.alignment());
  for (const auto& [key, value] : in.metadata()) {
    if (key == "general.alignment") continue;  // the writer sets it from its own alignment
    w.set(key, value);
  }
  w.set_u32("general.file_type", q.file_type);
  const bool tied = in.find_tensor("output.weight") == nullptr;
  for (const GgufTensorInfo& t : in.tensors()) {
    const bool head = t.name == "output.weight" || (tied && t.name == "token_embd.weight");
    const TensorQuantization plan = plan_tensor(t, head, q);
    if (!plan.note.empty() && notes != nullptr) notes->push_back(plan.note);
    if (plan.dtype == t.dtype) {
      const auto* p = static_cast<const uint8_t*>(t.data);
      const GgufTensorInfo* src = &t;
      w.add_tensor(t.name, t.dtype, t.dims, [src, p](GgufTensorSink& sink) { sink.write(p, src->nbytes); });
      continue;
    }
    const WeightQuantizer* target = nullptr;
    for (const WeightQuantizer& e : weight_quantizers())
      if (e.dtype == plan.dtype) target = &e;
    if (target == nullptr) throw Error("quantize: no quantizer writes dtype " + std::string(dtype_name(plan.dtype)));
    const GgufTensorInfo* src = &t;
    w.add_tensor(t.name, plan.dtype, t.dims, [src, target](GgufTensorSink& sink) {
      const int64_t cols = src->dims[0], rows = src->dims[1];
      const int64_t row_bytes = cols / target->block_values * target->block_bytes;
      constexpr int64_t kRowsPerWrite = 64;  // bounded buffers whatever the tensor's size
      std::vector<float> f32(static_cast<size_t>(cols));
      std::vector<uint8_t> out(static_cast<size_t>(kRowsPerWrite * row_bytes));
      for (int64_t r0 = 0; r0 < rows; r0 += kRowsPerWrite) {
        const int64_t n = std::min(kRowsPerWrite, rows - r0);
        for (int64_t r = 0; r < n; ++r) {
          row_to_f32(*src, r0 + r, cols, f32.data());
          target->quantize_row(f32.data(), cols, out.data() + r * row_bytes);
        }
        sink.write(out.data(), static_cast<size_t>(n * row_bytes));
      }
    });
  }
  return w;
}

}  // namespace loom::convert
