// GGUF reader. Layout (little-endian):
//   magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
//   n_kv x (string key | u32 value_type | value)
//   n_tensors x (string name | u32 n_dims | n_dims x u64 dim | u32 ggml_type | u64 offset)
//   padding to general.alignment | data section (each tensor at data_start + offset)
// Strings are u64 length + bytes (no terminator); arrays are u32 elem_type + u64 count + items.
// Every length is compared with the bytes that remain before anything is allocated or read,
// so a corrupt count fails cleanly instead of allocating terabytes.
#include "core/formats/gguf_file.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "core/common/error.hpp"
#include "core/formats/gguf_internal.hpp"
#include "core/formats/mapped_file.hpp"

namespace loom {
namespace {

constexpr uint32_t kMaxDims = 4;
constexpr int kMaxArrayDepth = 8;  // nested arrays deeper than this are corrupt in practice
constexpr uint64_t kMaxAlignment = uint64_t{1} << 30;

// Smallest encoding of one metadata value of each type (strings: the u64 length; arrays: the
// u32 type + u64 count). Used to bound counts before reserving memory.
uint64_t min_value_bytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8: case GgufValueType::kInt8: case GgufValueType::kBool: return 1;
    case GgufValueType::kUint16: case GgufValueType::kInt16: return 2;
    case GgufValueType::kUint32: case GgufValueType::kInt32: case GgufValueType::kFloat32: return 4;
    case GgufValueType::kUint64: case GgufValueType::kInt64: case GgufValueType::kFloat64: return 8;
    case GgufValueType::kString: return 8;
    case GgufValueType::kArray: return 12;
  }
  return 0;
}

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::kFloat64); }

// A bounds-checked cursor over the file's bytes. Every read names what it was reading.
class Cursor {
 public:
  Cursor(const uint8_t* base, size_t size, const std::string& path)
      : base_(base), size_(size), path_(path) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  [[noreturn]] void fail(const std::string& what) const { throw Error(path_ + ": " + what); }

  void need(uint64_t n, const std::string& what) const {
    if (n > remaining()) {
      fail(what + " needs " + std::to_string(n) + " bytes at offset " + std::to_string(pos_) +
           " but the file has " + std::to_string(remaining()) + " left (file size " +
           std::to_string(size_) + ")");
    }
  }

  template <typename T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(const std::string& what) {
    const uint64_t len = read<uint64_t>(what + " length");
    need(len, what + " (length " + std::to_string(len) + ")");
    std::string s(reinterpret_cast<const char*>(base_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return s;
  }

 private:
  const uint8_t* base_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& path_;
};

GgufValue read_value(Cursor& c, GgufValueType type, const std::string& what, int depth);

GgufValue read_array(Cursor& c, const std::string& what, int depth) {
  if (depth >= kMaxArrayDepth) c.fail(what + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth));
  const uint32_t elem = c.read<uint32_t>(what + " element type");
  if (!valid_value_type(elem)) c.fail(what + ": unknown array element type " + std::to_string(elem));
  const auto elem_type = static_cast<GgufValueType>(elem);
  const uint64_t count = c.read<uint64_t>(what + " element count");
  const uint64_t min_bytes = min_value_bytes(elem_type);
  if (count > c.remaining() / min_bytes) {
    c.fail(what + ": array of " + std::to_string(count) + " " + gguf_type_name(elem_type) +
           " cannot fit in the " + std::to_string(c.remaining()) + " bytes left");
  }
  GgufArray arr;
  arr.type = elem_type;
  arr.items.reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    arr.items.push_back(read_value(c, elem_type, what + "[" + std::to_string(i) + "]", depth + 1));
  }
  GgufValue v;
  v.type = GgufValueType::kArray;
  v.value = std::move(arr);
  return v;
}

GgufValue read_value(Cursor& c, GgufValueType type, const std::string& what, int depth) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufValueType::kUint8: v.value = uint64_t{c.read<uint8_t>(what)}; break;
    case GgufValueType::kInt8: v.value = int64_t{c.read<int8_t>(what)}; break;
    case GgufValueType::kUint16: v.value = uint64_t{c.read<uint16_t>(what)}; break;
    case GgufValueType::kInt16: v.value = int64_t{c.read<int16_t>(what)}; break;
    case GgufValueType::kUint32: v.value = uint64_t{c.read<uint32_t>(what)}; break;
    case GgufValueType::kInt32: v.value = int64_t{c.read<int32_t>(what)}; break;
    case GgufValueType::kFloat32: v.value = double{c.read<float>(what)}; break;
    case GgufValueType::kBool: v.value = c.read<uint8_t>(what) != 0; break;
    case GgufValueType::kString: v.value = c.read_string(what); break;
    case GgufValueType::kArray: return read_array(c, what, depth);
    case GgufValueType::kUint64: v.value = c.read<uint64_t>(what); break;
    case GgufValueType::kInt64: v.value = c.read<int64_t>(what); break;
    case GgufValueType::kFloat64: v.value = c.read<double>(what); break;
  }
  return v;
}

// Parses one tensor-table entry; offsets are checked later, once the data section is known.
GgufTensorInfo read_tensor_info(Cursor& c, uint64_t index) {
  const std::string what = "tensor #" + std::to_string(index);
  GgufTensorInfo t;
  t.name = c.read_string(what + " name");
  const std::string named = what + " '" + t.name + "'";
  const uint32_t n_dims = c.read<uint32_t>(named + " n_dims");
  if (n_dims == 0 || n_dims > kMaxDims) {
    c.fail(named + ": n_dims " + std::to_string(n_dims) + " is not in 1.." + std::to_string(kMaxDims));
  }
  int64_t n_elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    const uint64_t dim = c.read<uint64_t>(named + " dim " + std::to_string(d));
    if (dim == 0 || dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      c.fail(named + ": dim " + std::to_string(d) + " = " + std::to_string(dim) + " is not positive");
    }
    const auto di = static_cast<int64_t>(dim);
    if (n_elements > std::numeric_limits<int64_t>::max() / di) {
      c.fail(named + ": element count overflows (dims too large)");
    }
    n_elements *= di;
    t.dims.push_back(di);
  }
  const uint32_t type = c.read<uint32_t>(named + " type");
  // GGUF types are ggml's (< 1000); range-check before the cast, as values outside the enum's
  // range are not representable in loom_dtype.
  const DtypeInfo info = type < 1000 ? dtype_info(static_cast<loom_dtype>(type)) : DtypeInfo{"unknown", 0, 0};
  if (info.block_size == 0) c.fail(named + ": unknown ggml type " + std::to_string(type));
  t.dtype = static_cast<loom_dtype>(type);
  if (t.dims[0] % info.block_size != 0) {
    c.fail(named + ": innermost dim " + std::to_string(t.dims[0]) + " is not a multiple of the " +
           info.name + " block size " + std::to_string(info.block_size));
  }
  const int64_t n_blocks = n_elements / info.block_size;
  if (n_blocks > std::numeric_limits<int64_t>::max() / info.block_bytes) {
    c.fail(named + ": byte size overflows");
  }
  t.nbytes = static_cast<uint64_t>(n_blocks * info.block_bytes);
  t.offset = c.read<uint64_t>(named + " offset");
  return t;
}

}  // namespace

// ---- GgufFile ----------------------------------------------------------------------------------

GgufFile GgufFile::open(const std::string& path) {
  MappedFile mapped = MappedFile::open(path);
  GgufFile f;
  f.path_ = path;
  f.parse(mapped.data(), mapped.size());
  f.map_size_ = mapped.size();
  f.map_ = mapped.release();
  return f;
}

GgufFile GgufFile::from_bytes(std::vector<uint8_t> bytes, const std::string& name) {
  GgufFile f;
  f.path_ = name;
  f.owned_ = std::move(bytes);
  f.parse(f.owned_.data(), f.owned_.size());
  return f;
}

void GgufFile::parse(const uint8_t* base, size_t size) {
  Cursor c(base, size, path_);
  const uint32_t magic = c.read<uint32_t>("magic");
  if (std::memcmp(&magic, "GGUF", 4) != 0) c.fail("not a GGUF file (bad magic)");
  version_ = c.read<uint32_t>("version");
  if (version_ == 1) c.fail("GGUF version 1 is not supported (only 2 and 3)");
  if (version_ != 2 && version_ != 3) {
    if (version_ == 0x02000000u || version_ == 0x03000000u) c.fail("big-endian GGUF is not supported");
    c.fail("unsupported GGUF version " + std::to_string(version_));
  }
  const uint64_t n_tensors = c.read<uint64_t>("tensor count");
  const uint64_t n_kv = c.read<uint64_t>("metadata count");
  // The smallest key/value is 8 (key length) + 4 (type) + 1; the smallest tensor entry is
  // 8 (name length) + 4 (n_dims) + 8 (one dim) + 4 (type) + 8 (offset).
  if (n_kv > c.remaining() / 13) c.fail("metadata count " + std::to_string(n_kv) + " cannot fit in the file");
  if (n_tensors > c.remaining() / 32) c.fail("tensor count " + std::to_string(n_tensors) + " cannot fit in the file");

  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.read_string("metadata key #" + std::to_string(i));
    const std::string what = "metadata '" + key + "'";
    const uint32_t type = c.read<uint32_t>(what + " type");
    if (!valid_value_type(type)) c.fail(what + ": unknown value type " + std::to_string(type));
    GgufValue v = read_value(c, static_cast<GgufValueType>(type), what, 0);
    if (metadata_.count(key) != 0) c.fail("duplicate metadata key '" + key + "'");
    metadata_.emplace(std::move(key), std::move(v));
  }

  if (const GgufValue* a = find("general.alignment")) {
    if (!std::holds_alternative<uint64_t>(a->value) && !std::holds_alternative<int64_t>(a->value)) {
      c.fail(std::string("general.alignment must be an integer, not ") + gguf_type_name(a->type));
    }
    // Negative or huge values become 0 here and fail the power-of-two check below.
    uint64_t al = 0;
    if (const auto* u = std::get_if<uint64_t>(&a->value)) al = *u;
    if (const auto* i = std::get_if<int64_t>(&a->value)) al = *i > 0 ? static_cast<uint64_t>(*i) : 0;
    if (al == 0 || al > kMaxAlignment || (al & (al - 1)) != 0) {
      c.fail("general.alignment " + std::to_string(al) + " is not a power of two in 1..2^30");
    }
    alignment_ = al;
  }

  tensors_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t = read_tensor_info(c, i);
    if (tensor_index_.count(t.name) != 0) c.fail("duplicate tensor name '" + t.name + "'");
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }
  if (tensors_.empty()) return;

  // The data section starts at the first aligned offset after the header; it is never inside
  // the header, so tensors cannot overlap the metadata.
  const uint64_t header_end = c.pos();
  const uint64_t data_start = (header_end + alignment_ - 1) / alignment_ * alignment_;
  if (data_start > size) c.fail("data section starts at " + std::to_string(data_start) + ", past the end of the file (" + std::to_string(size) + " bytes)");
  const uint64_t data_size = size - data_start;
  for (auto& t : tensors_) {
    const std::string named = "tensor '" + t.name + "'";
    if (t.offset % alignment_ != 0) {
      c.fail(named + ": offset " + std::to_string(t.offset) + " is not a multiple of the alignment " + std::to_string(alignment_));
    }
    if (t.offset > data_size || t.nbytes > data_size - t.offset) {
      c.fail(named + ": bytes [" + std::to_string(t.offset) + ", +" + std::to_string(t.nbytes) +
             ") run past the end of the data section (" + std::to_string(data_size) + " bytes)");
    }
    t.data = base + data_start + t.offset;
  }
  std::vector<const GgufTensorInfo*> by_offset;
  by_offset.reserve(tensors_.size());
  for (const auto& t : tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const GgufTensorInfo& prev = *by_offset[i - 1];
    if (prev.offset + prev.nbytes > by_offset[i]->offset) {
      c.fail("tensors '" + prev.name + "' and '" + by_offset[i]->name + "' overlap");
    }
  }
}

GgufFile::GgufFile(GgufFile&& other) noexcept { *this = std::move(other); }

GgufFile& GgufFile::operator=(GgufFile&& other) noexcept {
  if (this != &other) {
    unmap_file(map_, map_size_);
    path_ = std::move(other.path_);
    version_ = other.version_;
    alignment_ = other.alignment_;
    metadata_ = std::move(other.metadata_);
    tensors_ = std::move(other.tensors_);  // data pointers stay valid: the storage moves with us
    tensor_index_ = std::move(other.tensor_index_);
    owned_ = std::move(other.owned_);
    map_ = std::exchange(other.map_, nullptr);
    map_size_ = std::exchange(other.map_size_, 0);
  }
  return *this;
}

GgufFile::~GgufFile() { unmap_file(map_, map_size_); }

const GgufValue* GgufFile::find(const std::string& key) const {
  const auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

const GgufValue& GgufFile::get(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) throw Error(path_ + ": missing metadata key '" + key + "'", LOOM_ERR_NOT_FOUND);
  return *v;
}

namespace {
template <typename F>
auto with_key(const std::string& path, const std::string& key, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(path + ": metadata '" + key + "': " + e.what());
  }
}
}  // namespace

int64_t GgufFile::get_int(const std::string& key, int64_t fallback) const {
  const GgufValue* v = find(key);
  return v == nullptr ? fallback : with_key(path_, key, [&] { return v->as_int(); });
}

double GgufFile::get_float(const std::string& key, double fallback) const {
  const GgufValue* v = find(key);
  return v == nullptr ? fallback : with_key(path_, key, [&] { return v->as_float(); });
}

bool GgufFile::get_bool(const std::string& key, bool fallback) const {
  const GgufValue* v = find(key);
  return v == nullptr ? fallback : with_key(path_, key, [&] { return v->as_bool(); });
}

std::string GgufFile::get_string(const std::string& key, const std::string& fallback) const {
  const GgufValue* v = find(key);
  return v == nullptr ? fallback : with_key(path_, key, [&] { return v->as_string(); });
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensorInfo& GgufFile::tensor(const std::string& name) const {
  const GgufTensorInfo* t = find_tensor(name);
  if (t == nullptr) throw Error(path_ + ": missing tensor '" + name + "'", LOOM_ERR_NOT_FOUND);
  return *t;
}

}  // namespace loom
