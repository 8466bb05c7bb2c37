#include "core/formats/safetensors_file.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/common/error.hpp"

namespace loom {
namespace {

struct DtypeInfo {
  const char* name;
  loom_dtype dtype;
  int64_t size;
};

// LOOM_DTYPE_INVALID: a dtype safetensors knows and Loom cannot compute with.
constexpr DtypeInfo kDtypes[] = {
    {"F64", LOOM_DTYPE_F64, 8},        {"F32", LOOM_DTYPE_F32, 4},  {"F16", LOOM_DTYPE_F16, 2},
    {"BF16", LOOM_DTYPE_BF16, 2},      {"I64", LOOM_DTYPE_I64, 8},  {"I32", LOOM_DTYPE_I32, 4},
    {"I16", LOOM_DTYPE_I16, 2},        {"I8", LOOM_DTYPE_I8, 1},    {"U8", LOOM_DTYPE_U8, 1},
    {"F8_E4M3", LOOM_DTYPE_FP8_E4M3, 1}, {"F8_E5M2", LOOM_DTYPE_INVALID, 1}, {"BOOL", LOOM_DTYPE_INVALID, 1},
    {"U16", LOOM_DTYPE_INVALID, 2},    {"U32", LOOM_DTYPE_INVALID, 4}, {"U64", LOOM_DTYPE_INVALID, 8},
};

const DtypeInfo* dtype_info(const std::string& name) {
  for (const DtypeInfo& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A JSON integer that fits in [0, 2^62) (so sums and products below are checked, not wrapped).
uint64_t json_uint(const nlohmann::json& j, const std::string& what) {
  if (!j.is_number_unsigned())
    throw Error(what + " must be a non-negative integer, got " + j.dump());
  const uint64_t v = j.get<uint64_t>();
  if (v >= (uint64_t{1} << 62)) throw Error(what + " = " + std::to_string(v) + " is out of range");
  return v;
}

}  // namespace

loom_dtype safetensors_dtype(const std::string& name) {
  const DtypeInfo* d = dtype_info(name);
  return d == nullptr ? LOOM_DTYPE_INVALID : d->dtype;
}

int64_t safetensors_dtype_size(const std::string& name) {
  const DtypeInfo* d = dtype_info(name);
  return d == nullptr ? 0 : d->size;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.path_ = path;
  f.map_ = std::make_shared<MappedFile>(MappedFile::open(path));
  f.parse(f.map_->data(), f.map_->size());
  return f;
}

SafetensorsFile SafetensorsFile::from_bytes(std::vector<uint8_t> bytes, const std::string& name) {
  SafetensorsFile f;
  f.path_ = name;
  f.owned_ = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  f.parse(f.owned_->data(), f.owned_->size());
  return f;
}

void SafetensorsFile::parse(const uint8_t* base, size_t size) {
  const std::string& p = path_;
  if (size < 8) throw Error(p + ": truncated: " + std::to_string(size) + " bytes, no 8-byte header length");
  const uint64_t header_len = read_u64_le(base);
  if (header_len > size - 8)
    throw Error(p + ": truncated: header length " + std::to_string(header_len) + " exceeds the " +
                std::to_string(size - 8) + " bytes after it");
  const uint64_t data_size = size - 8 - header_len;
  const uint8_t* data = base + 8 + header_len;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(base + 8, base + 8 + header_len);
  } catch (const nlohmann::json::exception& e) {
    throw Error(p + ": header is not valid JSON: " + e.what());
  }
  if (!header.is_object()) throw Error(p + ": header must be a JSON object");

  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& t = it.value();
    if (name == "__metadata__") {
      if (!t.is_object()) throw Error(p + ": __metadata__ must be an object");
      for (auto m = t.begin(); m != t.end(); ++m) {
        if (!m.value().is_string()) throw Error(p + ": __metadata__." + m.key() + " must be a string");
        metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string what = p + ": tensor " + name;
    if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") || !t.contains("data_offsets"))
      throw Error(what + ": entry must be an object with dtype, shape and data_offsets");
    SafetensorsTensor st;
    st.name = name;
    st.file = p;
    if (!t["dtype"].is_string()) throw Error(what + ": dtype must be a string");
    st.dtype_name = t["dtype"].get<std::string>();
    const int64_t elem = safetensors_dtype_size(st.dtype_name);
    if (elem == 0) throw Error(what + ": unknown dtype \"" + st.dtype_name + "\"");
    st.dtype = safetensors_dtype(st.dtype_name);
    const nlohmann::json& shape = t["shape"];
    if (!shape.is_array() || shape.size() > 8) throw Error(what + ": shape must be an array of at most 8 dims");
    uint64_t n_elements = 1;
    for (const nlohmann::json& d : shape) {
      const uint64_t dim = json_uint(d, what + " shape dim");
      st.shape.push_back(static_cast<int64_t>(dim));
      if (dim != 0 && n_elements > ((uint64_t{1} << 62) / dim)) throw Error(what + ": shape has too many elements");
      n_elements *= dim;
    }
    const nlohmann::json& off = t["data_offsets"];
    if (!off.is_array() || off.size() != 2) throw Error(what + ": data_offsets must be [begin, end]");
    const uint64_t begin = json_uint(off[0], what + " data_offsets[0]");
    const uint64_t end = json_uint(off[1], what + " data_offsets[1]");
    if (end < begin) throw Error(what + ": data_offsets end " + std::to_string(end) + " is before begin " + std::to_string(begin));
    if (n_elements > (uint64_t{1} << 62) / static_cast<uint64_t>(elem)) throw Error(what + ": too large");
    st.nbytes = n_elements * static_cast<uint64_t>(elem);
    if (end - begin != st.nbytes)
      throw Error(what + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + ") hold " +
                  std::to_string(end - begin) + " bytes but " + st.dtype_name + " shape needs " + std::to_string(st.nbytes));
    if (end > data_size)
      throw Error(what + ": data_offsets end " + std::to_string(end) + " is past the end of the data section (" +
                  std::to_string(data_size) + " bytes): truncated file?");
    st.data = data + begin;
    index_[name] = tensors_.size();
    tensors_.push_back(std::move(st));
  }
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

SafetensorsCheckpoint SafetensorsCheckpoint::open_file(const std::string& path) {
  SafetensorsCheckpoint c;
  c.add(std::make_unique<SafetensorsFile>(SafetensorsFile::open(path)));
  return c;
}

void SafetensorsCheckpoint::add(std::unique_ptr<SafetensorsFile> shard) {
  for (const SafetensorsTensor& t : shard->tensors()) {
    const auto [it, fresh] = by_name_.emplace(t.name, &t);
    if (!fresh) throw Error(t.file + ": tensor " + t.name + " is also in " + it->second->file);
  }
  shards_.push_back(std::move(shard));
}

SafetensorsCheckpoint SafetensorsCheckpoint::open_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path d(dir);
  const fs::path index_path = d / "model.safetensors.index.json";
  SafetensorsCheckpoint c;
  if (!fs::exists(index_path)) {
    const fs::path single = d / "model.safetensors";
    if (!fs::exists(single))
      throw Error(dir + ": neither model.safetensors nor model.safetensors.index.json is present", LOOM_ERR_NOT_FOUND);
    c.add(std::make_unique<SafetensorsFile>(SafetensorsFile::open(single.string())));
    return c;
  }
  std::ifstream in(index_path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(index_path.string() + ": not valid JSON: " + e.what());
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw Error(index_path.string() + ": weight_map (tensor name -> shard file) is missing");
  std::map<std::string, std::vector<std::string>> wanted;  // shard -> tensors the index puts there
  for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
    if (!it.value().is_string()) throw Error(index_path.string() + ": weight_map." + it.key() + " must be a file name");
    const std::string shard = it.value().get<std::string>();
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "..")
      throw Error(index_path.string() + ": weight_map." + it.key() + " = \"" + shard + "\" must be a file in the directory");
    wanted[shard].push_back(it.key());
  }
  for (const auto& [shard, names] : wanted) {
    const fs::path sp = d / shard;
    if (!fs::exists(sp))
      throw Error(index_path.string() + ": shard " + shard + " (holding " + names.front() + ") is missing",
                  LOOM_ERR_NOT_FOUND);
    auto file = std::make_unique<SafetensorsFile>(SafetensorsFile::open(sp.string()));
    for (const std::string& n : names)
      if (file->find(n) == nullptr) throw Error(sp.string() + ": tensor " + n + " named by the index is not in this shard");
    c.add(std::move(file));
  }
  return c;
}

const SafetensorsTensor* SafetensorsCheckpoint::find(const std::string& name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [n, t] : by_name_) out.push_back(n);
  return out;
}

}  // namespace loom
