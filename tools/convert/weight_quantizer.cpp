#include "tools/convert/weight_quantizer.hpp"

#include <algorithm>
#include <cctype>

#include "loom/sdk_dtype.hpp"
#include "loom/sdk_gguf_blocks.hpp"
#include "tools/convert/gguf_rewrite.hpp"

namespace loom::convert {
namespace {

namespace g = sdk::gguf;

// What loom-convert knows of each GGUF weight format besides its block layout (the SDK's): the
// general.file_type (llama.cpp's llama_ftype) of a file mostly in it, and the format a matrix
// falls back to when its rows are not whole blocks (llama.cpp's tensor_type_fallback, except
// q4_K -> q4_0 where llama.cpp takes q5_0: Loom's rule since before q5_0 could be written).
// --help order. A format is offered only when the SDK can quantize it (can_quantize).
struct FormatFacts {
  loom_dtype dtype;
  uint32_t file_type;
  const char* fallback;
};
constexpr FormatFacts kFormats[] = {
    {LOOM_DTYPE_Q8_0, 7, ""},         {LOOM_DTYPE_Q4_0, 2, ""},          {LOOM_DTYPE_Q4_K, 14, "q4_0"},
    {LOOM_DTYPE_Q6_K, 18, "q8_0"},    {LOOM_DTYPE_Q4_1, 3, ""},          {LOOM_DTYPE_Q5_0, 8, ""},
    {LOOM_DTYPE_Q5_1, 9, ""},         {LOOM_DTYPE_Q2_K, 10, "iq4_nl"},   {LOOM_DTYPE_Q3_K, 11, "iq4_nl"},
    {LOOM_DTYPE_Q5_K, 16, "q5_1"},    {LOOM_DTYPE_IQ4_NL, 25, ""},       {LOOM_DTYPE_IQ4_XS, 30, "iq4_nl"},
};

// The --quantize spelling of a type: ggml's name in lower case ("q4_K" -> "q4_k").
std::string format_name(loom_dtype t) {
  std::string name = sdk::type_name(t);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

WeightQuantizer gguf_entry(const FormatFacts& f) {
  const loom_dtype dtype = f.dtype;
  const g::BlockGeometry geo = g::block_geometry(dtype);
  return WeightQuantizer{format_name(dtype), dtype, geo.values, geo.bytes, f.file_type, f.fallback,
                         [dtype](const float* x, int64_t n, uint8_t* out) { g::quantize_row(dtype, x, out, n); }};
}

}  // namespace

const std::vector<WeightQuantizer>& weight_quantizers() {
  static const std::vector<WeightQuantizer> kAll = [] {
    std::vector<WeightQuantizer> all;
    for (const FormatFacts& f : kFormats)
      if (can_quantize(f.dtype)) all.push_back(gguf_entry(f));
    return all;
  }();
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
  if (t.dims.size() != 2 || !is_float_type(t.dtype)) return {t.dtype, ""};
  const WeightQuantizer* target = &q;
  std::string note;
  if (head && q.dtype != LOOM_DTYPE_Q8_0 && q.dtype != LOOM_DTYPE_Q6_K) {
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
  const bool tied = in.find_tensor("output.weight") == nullptr;
  std::vector<loom_dtype> dtypes;
  for (const GgufTensorInfo& t : in.tensors()) {
    const bool head = t.name == "output.weight" || (tied && t.name == "token_embd.weight");
    const TensorQuantization plan = plan_tensor(t, head, q);
    if (!plan.note.empty() && notes != nullptr) notes->push_back(plan.note);
    dtypes.push_back(plan.dtype);
  }
  return rewrite_gguf(in, dtypes, q.file_type);
}

}  // namespace loom::convert
