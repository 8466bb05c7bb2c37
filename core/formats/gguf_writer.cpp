#include "core/formats/gguf_writer.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

#include "core/common/error.hpp"
#include "core/common/half.hpp"

namespace loom {

// Byte destination for write_to(): a FILE (with a large buffer) or a vector.
class GgufWriter::Output {
 public:
  virtual ~Output() = default;
  virtual void put(const void* data, size_t n) = 0;
  uint64_t written() const { return written_; }

  template <typename T>
  void pod(T v) {
    put(&v, sizeof(T));
  }
  void str(const std::string& s) {
    pod<uint64_t>(s.size());
    put(s.data(), s.size());
  }
  void pad_to(uint64_t alignment) {
    static const uint8_t kZeros[256] = {};
    uint64_t pad = (alignment - written_ % alignment) % alignment;
    while (pad > 0) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(pad, sizeof(kZeros)));
      put(kZeros, n);
      pad -= n;
    }
  }

 protected:
  uint64_t written_ = 0;
};

namespace {

class FileOutput final : public GgufWriter::Output {
 public:
  FileOutput(std::FILE* f, const std::string& path) : f_(f), path_(path) {}
  void put(const void* data, size_t n) override {
    if (n != 0 && std::fwrite(data, 1, n, f_) != n) {
      throw Error(path_ + ": write failed: " + std::strerror(errno));
    }
    written_ += n;
  }

 private:
  std::FILE* f_;
  const std::string& path_;
};

class VectorOutput final : public GgufWriter::Output {
 public:
  void put(const void* data, size_t n) override {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes.insert(bytes.end(), p, p + n);
    written_ += n;
  }
  std::vector<uint8_t> bytes;
};

// Counts what a fill callback writes so a short or long tensor is caught at its source.
class CountingSink final : public GgufTensorSink {
 public:
  CountingSink(GgufWriter::Output& out, const std::string& name, uint64_t expected)
      : out_(out), name_(name), expected_(expected) {}
  void write(const void* data, size_t n) override {
    if (n > expected_ - written_) {
      throw Error("GGUF tensor '" + name_ + "': fill wrote more than its " + std::to_string(expected_) + " bytes");
    }
    out_.put(data, n);
    written_ += n;
  }
  void finish() const {
    if (written_ != expected_) {
      throw Error("GGUF tensor '" + name_ + "': fill wrote " + std::to_string(written_) + " of " +
                  std::to_string(expected_) + " bytes");
    }
  }

 private:
  GgufWriter::Output& out_;
  const std::string& name_;
  uint64_t expected_;
  uint64_t written_ = 0;
};

void write_value(GgufWriter::Output& out, const GgufValue& v);

void write_scalar(GgufWriter::Output& out, const GgufValue& v) {
  auto u = [&] { return std::get<uint64_t>(v.value); };
  auto i = [&] { return std::get<int64_t>(v.value); };
  switch (v.type) {
    case GgufValueType::kUint8: out.pod(static_cast<uint8_t>(u())); break;
    case GgufValueType::kInt8: out.pod(static_cast<int8_t>(i())); break;
    case GgufValueType::kUint16: out.pod(static_cast<uint16_t>(u())); break;
    case GgufValueType::kInt16: out.pod(static_cast<int16_t>(i())); break;
    case GgufValueType::kUint32: out.pod(static_cast<uint32_t>(u())); break;
    case GgufValueType::kInt32: out.pod(static_cast<int32_t>(i())); break;
    case GgufValueType::kFloat32: out.pod(static_cast<float>(std::get<double>(v.value))); break;
    case GgufValueType::kBool: out.pod(static_cast<uint8_t>(std::get<bool>(v.value) ? 1 : 0)); break;
    case GgufValueType::kString: out.str(std::get<std::string>(v.value)); break;
    case GgufValueType::kUint64: out.pod(u()); break;
    case GgufValueType::kInt64: out.pod(i()); break;
    case GgufValueType::kFloat64: out.pod(std::get<double>(v.value)); break;
    case GgufValueType::kArray: {
      const GgufArray& a = std::get<GgufArray>(v.value);
      out.pod(static_cast<uint32_t>(a.type));
      out.pod(static_cast<uint64_t>(a.items.size()));
      for (const auto& item : a.items) write_value(out, item);
      break;
    }
  }
}

void write_value(GgufWriter::Output& out, const GgufValue& v) {
  // Values built by hand (not through the of_* builders) may hold the wrong alternative.
  try {
    write_scalar(out, v);
  } catch (const std::bad_variant_access&) {
    throw Error(std::string("GGUF value of type ") + gguf_type_name(v.type) + " holds a value of another type");
  }
}

void check_value(const std::string& key, const GgufValue& v) {
  bool ok = false;
  switch (v.type) {
    case GgufValueType::kUint8: case GgufValueType::kUint16: case GgufValueType::kUint32:
    case GgufValueType::kUint64: ok = std::holds_alternative<uint64_t>(v.value); break;
    case GgufValueType::kInt8: case GgufValueType::kInt16: case GgufValueType::kInt32:
    case GgufValueType::kInt64: ok = std::holds_alternative<int64_t>(v.value); break;
    case GgufValueType::kFloat32: case GgufValueType::kFloat64: ok = std::holds_alternative<double>(v.value); break;
    case GgufValueType::kBool: ok = std::holds_alternative<bool>(v.value); break;
    case GgufValueType::kString: ok = std::holds_alternative<std::string>(v.value); break;
    case GgufValueType::kArray: {
      const auto* a = std::get_if<GgufArray>(&v.value);
      ok = a != nullptr;
      for (size_t i = 0; ok && i < a->items.size(); ++i) {
        if (a->items[i].type != a->type) {
          throw Error("GGUF metadata '" + key + "': item " + std::to_string(i) + " is " +
                      gguf_type_name(a->items[i].type) + " in an array of " + gguf_type_name(a->type));
        }
        check_value(key, a->items[i]);
      }
      break;
    }
  }
  if (!ok) throw Error("GGUF metadata '" + key + "': value does not match its type " + gguf_type_name(v.type));
}

}  // namespace

GgufWriter::GgufWriter(uint64_t alignment) : alignment_(alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > 0xffffffffu) {
    throw Error("GgufWriter: alignment " + std::to_string(alignment) + " is not a power of two");
  }
  if (alignment != 32) set("general.alignment", GgufValue::of_u32(static_cast<uint32_t>(alignment)));
}

void GgufWriter::set(const std::string& key, GgufValue value) {
  check_value(key, value);
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

GgufWriter::Tensor& GgufWriter::new_tensor(const std::string& name, loom_dtype dtype,
                                           std::vector<int64_t> dims) {
  const std::string what = "GGUF tensor '" + name + "'";
  for (const auto& t : tensors_) {
    if (t.name == name) throw Error(what + " added twice");
  }
  if (dims.empty() || dims.size() > 4) throw Error(what + ": needs 1 to 4 dims, got " + std::to_string(dims.size()));
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d <= 0 || n > std::numeric_limits<int64_t>::max() / d) throw Error(what + ": bad dim " + std::to_string(d));
    n *= d;
  }
  if (dtype_block_size(dtype) == 0 || static_cast<int>(dtype) >= 1000) {
    throw Error(what + ": dtype " + std::to_string(static_cast<int>(dtype)) + " cannot be stored in GGUF");
  }
  if (dims[0] % dtype_block_size(dtype) != 0) {
    throw Error(what + ": innermost dim " + std::to_string(dims[0]) + " is not a multiple of the " +
                dtype_name(dtype) + " block size");
  }
  Tensor t{name, dtype, std::move(dims), dtype_nbytes(dtype, n), {}, {}};
  tensors_.push_back(std::move(t));
  return tensors_.back();
}

void GgufWriter::add_tensor(const std::string& name, loom_dtype dtype, std::vector<int64_t> dims,
                            std::vector<uint8_t> data) {
  Tensor& t = new_tensor(name, dtype, std::move(dims));
  if (data.size() != t.nbytes) {
    const std::string msg = "GGUF tensor '" + name + "': got " + std::to_string(data.size()) +
                            " bytes, its shape and dtype need " + std::to_string(t.nbytes);
    tensors_.pop_back();
    throw Error(msg);
  }
  t.data = std::move(data);
}

void GgufWriter::add_tensor(const std::string& name, loom_dtype dtype, std::vector<int64_t> dims,
                            GgufTensorFill fill) {
  if (!fill) throw Error("GGUF tensor '" + name + "': empty fill callback");
  new_tensor(name, dtype, std::move(dims)).fill = std::move(fill);
}

void GgufWriter::add_tensor_f32(const std::string& name, loom_dtype dtype, std::vector<int64_t> dims,
                                std::span<const float> values) {
  std::vector<uint8_t> bytes;
  encode_f32(values, dtype, bytes);
  add_tensor(name, dtype, std::move(dims), std::move(bytes));
}

void GgufWriter::write_to(Output& out) const {
  out.put("GGUF", 4);
  out.pod<uint32_t>(3);
  out.pod<uint64_t>(tensors_.size());
  out.pod<uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    out.str(key);
    out.pod(static_cast<uint32_t>(value.type));
    write_value(out, value);
  }
  // Offsets are relative to the data section; each tensor starts aligned.
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    out.str(t.name);
    out.pod(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) out.pod(static_cast<uint64_t>(d));
    out.pod(static_cast<uint32_t>(t.dtype));
    out.pod(offset);
    offset += (t.nbytes + alignment_ - 1) / alignment_ * alignment_;
  }
  if (tensors_.empty()) return;
  out.pad_to(alignment_);
  for (const auto& t : tensors_) {
    if (t.fill) {
      CountingSink sink(out, t.name, t.nbytes);
      t.fill(sink);
      sink.finish();
    } else {
      out.put(t.data.data(), t.data.size());
    }
    out.pad_to(alignment_);
  }
}

void GgufWriter::write(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) throw Error(path + ": cannot create " + tmp + ": " + std::strerror(errno));
  std::unique_ptr<char[]> buffer(new char[1 << 22]);
  std::setvbuf(f, buffer.get(), _IOFBF, 1 << 22);
  try {
    FileOutput out(f, path);
    write_to(out);
  } catch (...) {
    std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  if (std::fclose(f) != 0) {
    std::remove(tmp.c_str());
    throw Error(path + ": write failed: " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw Error(path + ": cannot rename " + tmp + ": " + std::strerror(err));
  }
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  VectorOutput out;
  write_to(out);
  return std::move(out.bytes);
}

void encode_f32(std::span<const float> values, loom_dtype dtype, std::vector<uint8_t>& out) {
  const size_t start = out.size();
  switch (dtype) {
    case LOOM_DTYPE_F32:
      out.resize(start + values.size() * 4);
      std::memcpy(out.data() + start, values.data(), values.size() * 4);
      return;
    case LOOM_DTYPE_F16:
    case LOOM_DTYPE_BF16: {
      out.resize(start + values.size() * 2);
      uint8_t* p = out.data() + start;
      for (float v : values) {
        const uint16_t h = dtype == LOOM_DTYPE_F16 ? f32_to_f16(v) : f32_to_bf16(v);
        std::memcpy(p, &h, 2);
        p += 2;
      }
      return;
    }
    default:
      throw Error(std::string("encode_f32: cannot encode f32 values as ") + dtype_name(dtype));
  }
}

GgufWriter make_tiny_gguf() {
  GgufWriter w;
  w.set_string("general.architecture", "tiny");
  w.set_string("general.name", "tiny test file");
  w.set("test.u8", GgufValue::of_uint(GgufValueType::kUint8, 200));
  w.set("test.i8", GgufValue::of_int(GgufValueType::kInt8, -100));
  w.set("test.u16", GgufValue::of_uint(GgufValueType::kUint16, 60000));
  w.set("test.i16", GgufValue::of_int(GgufValueType::kInt16, -30000));
  w.set_u32("test.u32", 4000000000u);
  w.set_i32("test.i32", -2000000000);
  w.set_f32("test.f32", 0.1f);
  w.set_bool("test.bool", true);
  w.set_string("test.string", "h\xC3\xA9llo \xE2\x96\x81world");
  w.set("test.u64", GgufValue::of_u64(18000000000000000000ull));
  w.set("test.i64", GgufValue::of_i64(-9000000000000000000ll));
  w.set("test.f64", GgufValue::of_f64(-2.5e300));
  w.set("test.strings", GgufValue::of_strings({"<unk>", "", std::string("a\0b", 3)}));
  w.set("test.f32s", GgufValue::of_f32s({1.0f, -0.5f, 3.25f}));
  w.set("test.i32s", GgufValue::of_i32s({1, -2, 3, -4}));
  w.set("test.nested", GgufValue::of_array(GgufValueType::kArray,
                                           {GgufValue::of_i32s({7, 8}), GgufValue::of_i32s({}),
                                            GgufValue::of_array(GgufValueType::kBool,
                                                                {GgufValue::of_bool(false)})}));
  const std::vector<float> a = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};  // [2, 3]
  const std::vector<float> b = {0.5f, -1.0f, 65504.0f, 1e-7f};        // [4]
  w.add_tensor_f32("a.weight", LOOM_DTYPE_F32, {3, 2}, a);
  w.add_tensor_f32("b.f16", LOOM_DTYPE_F16, {4}, b);
  w.add_tensor_f32("c.bf16", LOOM_DTYPE_BF16, {2, 2}, b);
  std::vector<uint8_t> q8(34, 0x11);  // one q8_0 block, opaque bytes
  w.add_tensor("d.q8_0", LOOM_DTYPE_Q8_0, {32}, std::move(q8));
  return w;
}

}  // namespace loom
