// GgufValue accessors/builders and the ggml dtype table.
#include <cstring>
#include <limits>
#include <utility>

#include "core/common/error.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/formats/gguf_internal.hpp"

namespace loom {
namespace {

const char* value_type_label(const GgufValue& v) { return gguf_type_name(v.type); }

[[noreturn]] void type_error(const char* expected, const GgufValue& v) {
  throw Error(std::string("GGUF value: expected ") + expected + ", got " + value_type_label(v));
}

}  // namespace

DtypeInfo dtype_info(loom_dtype t) { return sdk::dtype_info(t); }


// ---- GgufValue ---------------------------------------------------------------------------------

const char* gguf_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8: return "uint8";
    case GgufValueType::kInt8: return "int8";
    case GgufValueType::kUint16: return "uint16";
    case GgufValueType::kInt16: return "int16";
    case GgufValueType::kUint32: return "uint32";
    case GgufValueType::kInt32: return "int32";
    case GgufValueType::kFloat32: return "float32";
    case GgufValueType::kBool: return "bool";
    case GgufValueType::kString: return "string";
    case GgufValueType::kArray: return "array";
    case GgufValueType::kUint64: return "uint64";
    case GgufValueType::kInt64: return "int64";
    case GgufValueType::kFloat64: return "float64";
  }
  return "unknown";
}

int64_t GgufValue::as_int() const {
  if (const auto* u = std::get_if<uint64_t>(&value)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      throw Error("GGUF value: " + std::to_string(*u) + " does not fit in int64");
    }
    return static_cast<int64_t>(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&value)) return *i;
  type_error("an integer", *this);
}

double GgufValue::as_float() const {
  if (const auto* d = std::get_if<double>(&value)) return *d;
  if (const auto* u = std::get_if<uint64_t>(&value)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
  type_error("a number", *this);
}

bool GgufValue::as_bool() const {
  if (const auto* b = std::get_if<bool>(&value)) return *b;
  type_error("bool", *this);
}

const std::string& GgufValue::as_string() const {
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  type_error("string", *this);
}

const GgufArray& GgufValue::as_array() const {
  if (const auto* a = std::get_if<GgufArray>(&value)) return *a;
  type_error("array", *this);
}

GgufValue GgufValue::of_uint(GgufValueType type, uint64_t v) {
  uint64_t max = 0;
  switch (type) {
    case GgufValueType::kUint8: max = 0xff; break;
    case GgufValueType::kUint16: max = 0xffff; break;
    case GgufValueType::kUint32: max = 0xffffffffu; break;
    case GgufValueType::kUint64: max = std::numeric_limits<uint64_t>::max(); break;
    default: throw Error(std::string("GgufValue::of_uint: ") + gguf_type_name(type) + " is not unsigned");
  }
  if (v > max) throw Error("GgufValue::of_uint: " + std::to_string(v) + " does not fit in " + gguf_type_name(type));
  return GgufValue{type, v};
}

GgufValue GgufValue::of_int(GgufValueType type, int64_t v) {
  int64_t lo = 0, hi = 0;
  switch (type) {
    case GgufValueType::kInt8: lo = -128; hi = 127; break;
    case GgufValueType::kInt16: lo = -32768; hi = 32767; break;
    case GgufValueType::kInt32: lo = std::numeric_limits<int32_t>::min(); hi = std::numeric_limits<int32_t>::max(); break;
    case GgufValueType::kInt64: lo = std::numeric_limits<int64_t>::min(); hi = std::numeric_limits<int64_t>::max(); break;
    default: throw Error(std::string("GgufValue::of_int: ") + gguf_type_name(type) + " is not signed");
  }
  if (v < lo || v > hi) throw Error("GgufValue::of_int: " + std::to_string(v) + " does not fit in " + gguf_type_name(type));
  return GgufValue{type, v};
}

GgufValue GgufValue::of_f32(float v) { return GgufValue{GgufValueType::kFloat32, double{v}}; }
GgufValue GgufValue::of_f64(double v) { return GgufValue{GgufValueType::kFloat64, v}; }
GgufValue GgufValue::of_bool(bool v) { return GgufValue{GgufValueType::kBool, v}; }
GgufValue GgufValue::of_string(std::string v) { return GgufValue{GgufValueType::kString, std::move(v)}; }

GgufValue GgufValue::of_array(GgufValueType elem_type, std::vector<GgufValue> items) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].type != elem_type) {
      throw Error(std::string("GgufValue::of_array: item ") + std::to_string(i) + " is " +
                  gguf_type_name(items[i].type) + ", the array holds " + gguf_type_name(elem_type));
    }
  }
  return GgufValue{GgufValueType::kArray, GgufArray{elem_type, std::move(items)}};
}

GgufValue GgufValue::of_strings(const std::vector<std::string>& items) {
  std::vector<GgufValue> v;
  v.reserve(items.size());
  for (const auto& s : items) v.push_back(of_string(s));
  return GgufValue{GgufValueType::kArray, GgufArray{GgufValueType::kString, std::move(v)}};
}

GgufValue GgufValue::of_f32s(const std::vector<float>& items) {
  std::vector<GgufValue> v;
  v.reserve(items.size());
  for (float f : items) v.push_back(of_f32(f));
  return GgufValue{GgufValueType::kArray, GgufArray{GgufValueType::kFloat32, std::move(v)}};
}

GgufValue GgufValue::of_i32s(const std::vector<int32_t>& items) {
  std::vector<GgufValue> v;
  v.reserve(items.size());
  for (int32_t i : items) v.push_back(of_i32(i));
  return GgufValue{GgufValueType::kArray, GgufArray{GgufValueType::kInt32, std::move(v)}};
}

bool GgufValue::operator==(const GgufValue& other) const {
  if (type != other.type || value.index() != other.value.index()) return false;
  if (const auto* a = std::get_if<GgufArray>(&value)) {
    const auto& b = std::get<GgufArray>(other.value);
    return a->type == b.type && a->items == b.items;
  }
  if (const auto* d = std::get_if<double>(&value)) {
    // Bitwise, so NaN payloads and -0.0 round-trip checks are exact.
    const double e = std::get<double>(other.value);
    return std::memcmp(d, &e, sizeof(double)) == 0;
  }
  if (const auto* s = std::get_if<std::string>(&value)) return *s == std::get<std::string>(other.value);
  if (const auto* u = std::get_if<uint64_t>(&value)) return *u == std::get<uint64_t>(other.value);
  if (const auto* i = std::get_if<int64_t>(&value)) return *i == std::get<int64_t>(other.value);
  return std::get<bool>(value) == std::get<bool>(other.value);
}

// ---- dtypes ------------------------------------------------------------------------------------

const char* dtype_name(loom_dtype t) { return dtype_info(t).name; }
int64_t dtype_block_size(loom_dtype t) { return dtype_info(t).block_size; }
int64_t dtype_block_bytes(loom_dtype t) { return dtype_info(t).block_bytes; }

uint64_t dtype_nbytes(loom_dtype t, int64_t n_elements) {
  const DtypeInfo info = dtype_info(t);
  if (info.block_size == 0) throw Error("unknown dtype " + std::to_string(static_cast<int>(t)));
  if (n_elements < 0 || n_elements % info.block_size != 0) {
    throw Error(std::to_string(n_elements) + " elements is not a whole number of " + info.name +
                " blocks of " + std::to_string(info.block_size));
  }
  return static_cast<uint64_t>(n_elements / info.block_size) * static_cast<uint64_t>(info.block_bytes);
}

}  // namespace loom
