// cache_offload/disk: an SSD tier for KV blocks, one file per block under `dir`, that survives
// restarts. Files live in a subdirectory named after the model fingerprint (file hash + KV dtype
// + layout), so servers of different models can share `dir`; every file's header names the
// fingerprint again, the block's key, chained prefix hash, salt and token count, and carries a
// checksum of the header and of the payload (block_file.hpp).
//
// Trust: nothing on disk is loaded unchecked. Start-up indexes the files whose header is sound
// and whose size is right, and removes (with a warning) temporary files of interrupted writes and
// every file that is not: another fingerprint, a bad magic or checksum, a wrong length. load()
// checks the header, the key and the payload checksum again before a byte reaches the pool; a
// file that fails is removed and the load is a miss (LOOM_ERR_NOT_FOUND), so the block is
// recomputed.
//
// Capacity: the bytes of the indexed files plus the writes in flight never pass `capacity`; a
// save evicts least recently used files (load counts as use, and so does a file's mtime across
// restarts) until its block fits. Calls are serialised on the index only: file I/O runs outside
// the lock, so contains() and usage() never wait for a disk.
//
// Config: dir (required), capacity = "10GiB" (byte size), fsync = false (true: fsync each file
// and its directory before the rename counts; survives power loss, not only process death).
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "block_file.hpp"
#include "disk_index.hpp"
#include "loom/sdk.hpp"
#include "loom/sdk_config.hpp"

namespace {

namespace fs = std::filesystem;
using loom::disk_offload::BlockHeader;
using loom::disk_offload::DiskIndex;
using loom::disk_offload::kHeaderSize;

struct DiskOffloadConfig {
  std::string dir;
  int64_t capacity_bytes = int64_t{10} << 30;
  bool fsync = false;
};

// The fingerprint as a directory name: its hash, so any fingerprint text is a safe name.
std::string fingerprint_dir(const std::string& fingerprint) {
  const auto bytes = std::as_bytes(std::span<const char>(fingerprint.data(), fingerprint.size()));
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, loom::disk_offload::checksum(bytes));
  return buf;
}

class DiskOffload {
 public:
  static const loom::sdk::ConfigSpec<DiskOffloadConfig>& config_spec() {
    static const auto spec =
        loom::sdk::ConfigSpec<DiskOffloadConfig>("cache_offload disk")
            .string("dir", &DiskOffloadConfig::dir, "directory for the block files (created if missing)")
            .bytes("capacity", &DiskOffloadConfig::capacity_bytes, "disk space for KV blocks, e.g. \"10GiB\"")
            .boolean("fsync", &DiskOffloadConfig::fsync, "fsync every block file and its directory")
            .rule([](const DiskOffloadConfig& c, const auto&, std::vector<std::string>& problems) {
              if (c.dir.empty()) problems.push_back("\"dir\" is required: the directory for the block files");
            });
    return spec;
  }

  DiskOffload(const loom::sdk::Host& host, const loom_cache_offload_create_args& args, const DiskOffloadConfig& cfg)
      : host_(host),
        copy_(checked(args)),
        fingerprint_(args.model_fingerprint),
        block_file_bytes_(static_cast<int64_t>(kHeaderSize) + copy_.bytes_per_block),
        fsync_(cfg.fsync),
        index_(cfg.capacity_bytes) {
    if (block_file_bytes_ > cfg.capacity_bytes)
      throw loom::sdk::ConfigError("cache_offload disk: capacity " + std::to_string(cfg.capacity_bytes) +
                                   " bytes holds no KV block file of " + std::to_string(block_file_bytes_) + " bytes");
    dir_ = fs::path(cfg.dir) / fingerprint_dir(fingerprint_);
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) throw loom::sdk::ConfigError("cache_offload disk: cannot create " + dir_.string() + ": " + ec.message());
    scan();
    host_.info(dir_.string(), ": ", index_.num_entries(), " blocks (", index_.used_bytes(), " of ",
               index_.capacity(), " bytes) kept from earlier runs");
  }

  loom_status save(uint64_t key, int32_t block_id) {
    loom_offload_entry entry{};
    entry.struct_size = sizeof(entry);
    entry.key = key;
    return save_entry(&entry, block_id);
  }

  loom_status save_entry(const loom_offload_entry* entry, int32_t block_id) {
    std::vector<std::byte> payload(static_cast<size_t>(copy_.bytes_per_block));
    loom::sdk::ErrorBuffer err;
    loom::sdk::check(copy_.read_block(copy_.host_ctx, block_id, payload.data(), err.buf()), err,
                     "save: read_block " + std::to_string(block_id));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      index_.erase(entry->key);  // replaced: its old file's room is reused
      for (uint64_t old : index_.make_room(block_file_bytes_)) remove_file(old);
      index_.reserve(block_file_bytes_);
    }
    BlockHeader header;
    header.fingerprint = fingerprint_;
    header.key = entry->key;
    header.prefix_hash = entry->prefix_hash;
    header.salt = entry->salt;
    header.num_tokens = entry->num_tokens;
    int error_number = 0;
    const std::string why =
        loom::disk_offload::write_block_file(path_of(entry->key), header, payload, fsync_, &error_number);
    std::lock_guard<std::mutex> lock(mutex_);
    index_.unreserve(block_file_bytes_);
    // A full disk is a tier out of room (the block is recomputed when needed), anything else a failure.
    if (!why.empty()) {
      remove_file(entry->key);  // an older file of this key is no longer indexed either
      throw loom::sdk::Error(error_number == ENOSPC ? LOOM_ERR_OUT_OF_MEMORY : LOOM_ERR_INTERNAL, "save: " + why);
    }
    index_.insert(entry->key, block_file_bytes_);
    return LOOM_OK;
  }

  loom_status load(uint64_t key, int32_t block_id) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!index_.touch(key)) throw loom::sdk::Error(LOOM_ERR_NOT_FOUND, "load: key " + std::to_string(key) + " is not stored");
    }
    const fs::path path = path_of(key);
    std::vector<std::byte> payload;
    const std::string why =
        loom::disk_offload::read_block_file(path, fingerprint_, key, static_cast<uint64_t>(copy_.bytes_per_block), payload);
    if (!why.empty()) {
      host_.warn(path.string(), ": ", why, "; removed, the block is recomputed");
      std::lock_guard<std::mutex> lock(mutex_);
      if (index_.erase(key)) remove_file(key);
      throw loom::sdk::Error(LOOM_ERR_NOT_FOUND, "load: " + path.string() + ": " + why);
    }
    (void)::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // recency that outlives the process
    loom::sdk::ErrorBuffer err;
    loom::sdk::check(copy_.write_block(copy_.host_ctx, block_id, payload.data(), err.buf()), err,
                     "load: write_block " + std::to_string(block_id));
    return LOOM_OK;
  }

  loom_status contains(uint64_t key, int32_t* present) {
    if (present == nullptr) throw loom::sdk::Error(LOOM_ERR_INVALID_ARGUMENT, "contains: present is NULL");
    std::lock_guard<std::mutex> lock(mutex_);
    *present = index_.contains(key) ? 1 : 0;
    return LOOM_OK;
  }

  loom_status drop(uint64_t key) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (index_.erase(key)) remove_file(key);
    return LOOM_OK;
  }

  loom_status usage(loom_cache_offload_usage* out) {
    if (out == nullptr) throw loom::sdk::Error(LOOM_ERR_INVALID_ARGUMENT, "usage: out is NULL");
    std::lock_guard<std::mutex> lock(mutex_);
    out->capacity_bytes = index_.capacity();
    out->used_bytes = index_.used_bytes();
    out->num_entries = index_.num_entries();
    return LOOM_OK;
  }

 private:
  static loom_kv_copy_ops checked(const loom_cache_offload_create_args& args) {
    if (!loom::sdk::covers(args, &loom_cache_offload_create_args::block_size) || args.model_fingerprint == nullptr)
      throw loom::sdk::Error(LOOM_ERR_UNSUPPORTED,
                             "cache_offload disk: the host gives no model fingerprint (cache_offload interface 1.1): "
                             "blocks on disk could not be told apart from another model's");
    const loom_kv_copy_ops& copy = args.copy;
    if (copy.struct_size < sizeof(loom_kv_copy_ops) || copy.read_block == nullptr || copy.write_block == nullptr ||
        copy.bytes_per_block <= 0)
      throw loom::sdk::Error(LOOM_ERR_INVALID_ARGUMENT, "cache_offload disk: the copy ops are incomplete");
    return copy;
  }

  fs::path path_of(uint64_t key) const {
    char name[32];
    std::snprintf(name, sizeof(name), "%016" PRIx64 ".kvb", key);
    return dir_ / name;
  }

  void remove_file(uint64_t key) const {
    std::error_code ec;
    fs::remove(path_of(key), ec);
  }

  // Indexes the sound block files, oldest mtime first (least recently used), and removes the
  // rest; then trims to capacity.
  void scan() {
    struct Found {
      fs::file_time_type mtime;
      uint64_t key;
    };
    std::vector<Found> found;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
      const fs::path& p = e.path();
      const std::string name = p.filename().string();
      if (!e.is_regular_file()) continue;
      if (p.extension() == ".tmp") {
        host_.warn(p.string(), ": left by an interrupted write; removed");
        fs::remove(p, ec);
        continue;
      }
      uint64_t key = 0;
      const bool named = p.extension() == ".kvb" && name.size() == 20 &&
                         std::sscanf(name.c_str(), "%16" SCNx64, &key) == 1 && path_of(key) == p;
      BlockHeader header;
      std::string why = named ? loom::disk_offload::read_header(p, fingerprint_, static_cast<uint64_t>(copy_.bytes_per_block), header)
                              : "not a block file name";
      if (why.empty() && header.key != key) why = "names key " + std::to_string(header.key) + " inside";
      if (!why.empty()) {
        host_.warn(p.string(), ": ", why, "; removed");
        fs::remove(p, ec);
        continue;
      }
      found.push_back(Found{e.last_write_time(ec), key});
    }
    std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.mtime < b.mtime; });
    for (const Found& f : found) index_.insert(f.key, block_file_bytes_);
    for (uint64_t old : index_.make_room(0)) remove_file(old);
  }

  loom::sdk::Host host_;
  loom_kv_copy_ops copy_;
  std::string fingerprint_;
  int64_t block_file_bytes_;
  bool fsync_;
  fs::path dir_;
  std::mutex mutex_;
  DiskIndex index_;
};

}  // namespace

LOOM_CACHE_OFFLOAD_PLUGIN(DiskOffload, "disk", "0.1.0",
                          "SSD tier for KV blocks: checksummed files that survive restarts, LRU within a capacity");
