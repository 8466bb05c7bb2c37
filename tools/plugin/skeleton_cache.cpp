// The cache skeleton: a paged block pool with a free list, no prefix reuse.
#include "tools/plugin/skeleton.hpp"

namespace loom::tools {

SkeletonKind cache_skeleton() {
  SkeletonKind k;
  k.class_header = R"skel(
// A pool of kPoolBytes split into blocks of kBlockSize tokens; each sequence holds a list of
// blocks covering its tokens. Invariant: every block is either on free_ or in exactly one
// sequence's table. No prefix reuse (match_prefix and commit are optional and left out).
class @CLASS@ {
 public:
  static constexpr int64_t kPoolBytes = 16ll << 20;
  static constexpr int32_t kBlockSize = 16;

  @CLASS@(const loom::sdk::Host&, const loom_cache_create_args& args, std::string_view config) {
    @IDENT@_plugin::refuse_config_keys(config);
    const int64_t block_bytes = kBlockSize * args.bytes_per_token + args.bytes_per_block_extra;
    if (block_bytes <= 0) throw loom::sdk::Error(LOOM_ERR_INVALID_ARGUMENT, "cache @NAME@: bytes_per_token must be positive");
    num_blocks_ = static_cast<int32_t>(std::max<int64_t>(1, kPoolBytes / block_bytes));
    for (int32_t b = num_blocks_ - 1; b >= 0; --b) free_.push_back(b);
  }

  loom_status layout(loom_cache_layout* out) {
    out->num_blocks = num_blocks_;
    out->block_size = kBlockSize;
    return LOOM_OK;
  }

  loom_status fits(int32_t max_total_tokens, int32_t* ok) {
    *ok = blocks_for(max_total_tokens) <= num_blocks_ ? 1 : 0;
    return LOOM_OK;
  }

  loom_status can_allocate(const loom_request_view* req, int32_t num_new_tokens, int32_t* ok) {
    *ok = missing(*req, num_new_tokens) <= static_cast<int64_t>(free_.size()) ? 1 : 0;
    return LOOM_OK;
  }

  loom_status allocate(const loom_request_view* req, int32_t num_new_tokens, int32_t* num_cached_tokens) {
    *num_cached_tokens = 0;
    if (missing(*req, num_new_tokens) > static_cast<int64_t>(free_.size())) return LOOM_ERR_OUT_OF_MEMORY;
    tables_.try_emplace(req->request_id);  // a sequence with no blocks yet
    return grow(*req, num_new_tokens);
  }

  loom_status append(const loom_request_view* req, int32_t num_new_tokens) {
    if (tables_.count(req->request_id) == 0)
      throw loom::sdk::Error(LOOM_ERR_NOT_FOUND, "cache @NAME@: request " + std::to_string(req->request_id) + " has no blocks");
    return grow(*req, num_new_tokens);
  }

  loom_status free(uint64_t request_id) {
    auto it = tables_.find(request_id);
    if (it == tables_.end()) return LOOM_OK;
    free_.insert(free_.end(), it->second.rbegin(), it->second.rend());
    tables_.erase(it);
    return LOOM_OK;
  }

  loom_status block_table(uint64_t request_id, loom_block_list* out) {
    auto it = tables_.find(request_id);
    if (it == tables_.end())
      throw loom::sdk::Error(LOOM_ERR_NOT_FOUND, "cache @NAME@: request " + std::to_string(request_id) + " has no blocks");
    out->ids = it->second.data();
    out->count = static_cast<int32_t>(it->second.size());
    return LOOM_OK;
  }

  loom_status usage(loom_cache_usage* out) {
    out->total_blocks = num_blocks_;
    out->free_blocks = static_cast<int32_t>(free_.size());
    out->used_blocks = num_blocks_ - out->free_blocks;
    out->cached_blocks = 0;
    out->num_seqs = static_cast<int32_t>(tables_.size());
    out->prefix_hit_tokens = out->prefix_query_tokens = 0;
    return LOOM_OK;  // the 1.1 miss counters stay as the host zeroed them: there is no lookup
  }

 private:
  static int64_t blocks_for(int64_t tokens) { return (tokens + kBlockSize - 1) / kBlockSize; }
  int64_t missing(const loom_request_view& req, int32_t num_new_tokens) const {
    auto it = tables_.find(req.request_id);
    const int64_t have = it == tables_.end() ? 0 : static_cast<int64_t>(it->second.size());
    return std::max<int64_t>(0, blocks_for(int64_t(req.num_computed_tokens) + num_new_tokens) - have);
  }
  // Out of blocks: LOOM_ERR_OUT_OF_MEMORY with nothing changed, as the interface asks.
  loom_status grow(const loom_request_view& req, int32_t num_new_tokens) {
    const int64_t need = missing(req, num_new_tokens);
    if (need > static_cast<int64_t>(free_.size())) return LOOM_ERR_OUT_OF_MEMORY;
    std::vector<int32_t>& table = tables_[req.request_id];
    for (int64_t i = 0; i < need; ++i) {
      table.push_back(free_.back());
      free_.pop_back();
    }
    return LOOM_OK;
  }

  int32_t num_blocks_ = 0;
  std::vector<int32_t> free_;                          // free block ids, next to hand out last
  std::map<uint64_t, std::vector<int32_t>> tables_;   // request id -> its blocks, in token order
};
)skel";
  k.test_body = R"skel(    loom_cache_create_args args{};
    args.struct_size = sizeof(args);
    args.bytes_per_token = 1 << 20;  // 16 MiB pool / 16 MiB blocks = 1 block of 16 tokens
    @CLASS@ plugin(host, args, "{}");
    loom_cache_layout layout{};
    layout.struct_size = sizeof(layout);
    check(plugin.layout(&layout) == LOOM_OK && layout.num_blocks == 1 && layout.block_size == 16, "one block of 16");
    int32_t ok = -1;
    check(plugin.fits(16, &ok) == LOOM_OK && ok == 1, "16 tokens fit");
    check(plugin.fits(17, &ok) == LOOM_OK && ok == 0, "17 tokens do not");
    loom_request_view req{};
    req.struct_size = sizeof(req);
    req.request_id = 1;
    req.num_tokens = 5;
    int32_t cached = -1;
    check(plugin.allocate(&req, 5, &cached) == LOOM_OK && cached == 0, "allocate 5 tokens, none cached");
    req.num_computed_tokens = 16;
    check(plugin.append(&req, 1) == LOOM_ERR_OUT_OF_MEMORY, "a 17th token does not fit");
    loom_block_list table{};
    check(plugin.block_table(1, &table) == LOOM_OK && table.count == 1 && table.ids[0] == 0, "the one block is 0");
    loom_cache_usage usage{};
    usage.struct_size = sizeof(usage);
    check(plugin.usage(&usage) == LOOM_OK && usage.used_blocks == 1 && usage.free_blocks == 0, "one block used");
    check(plugin.free(1) == LOOM_OK && plugin.usage(&usage) == LOOM_OK && usage.free_blocks == 1, "free returns it");)skel";
  return k;
}

}  // namespace loom::tools
